//! `cargo xtask patches rebase --openwrt PATH --target T --to 6.12`: moving
//! an OpenWrt target to a new kernel series in its checkout, the bump
//! OpenWrt developers do with `scripts/kernel_bump.sh` and then
//! `make target/linux/refresh`:
//!
//! 1. the target's `patches-<from>`, `files-<from>` and every
//!    `config-<from>` of the board and its subtargets are copied to
//!    `<to>` names (kernel_bump.sh);
//! 2. the new series (the generic `<to>` patches, then the target's) is
//!    pushed onto the workbench's `<to>` source with OpenWrt's `files/`
//!    overlays, every patch classified with the rebase classifier
//!    ([`rebase::classify`], GNU patch's fuzz 2);
//! 3. in `patches-<to>`, patches that apply at an offset or with fuzz are
//!    refreshed as quilt writes them ([`refresh::render`]), upstream ones
//!    (they apply in reverse) are removed, conflicting ones are kept as
//!    they were, to be fixed by hand, and their rejects saved under
//!    `target/xtask/rebase/openwrt-<board>-<from>-to-<to>/rejects/`;
//! 4. the board's Makefile gets `KERNEL_TESTING_PATCHVER:=<to>`, so that
//!    `build --openwrt` (and OpenWrt with `CONFIG_TESTING_KERNEL`) can
//!    build the new version.
//!
//! Nothing in the checkout changes until every patch is classified; the
//! new directory is staged beside the old one and renamed into place, and
//! a checkout that already has `patches-<to>` or `config-<to>` for the
//! target is refused. The generic patches are OpenWrt's own `<to>` series:
//! they are applied (so the target's patches see them) but not rewritten;
//! their classes are counted on the report's first line.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use xshell::Shell;

use crate::inputs::kernel_source;
use crate::inputs::openwrt::series::{self, Group, PatchDirectory};
use crate::inputs::openwrt::{select, Checkout, OpenwrtTarget};
use crate::patches::engine::ApplyOptions;
use crate::patches::engine::{apply_patch, render_rejects};
use crate::patches::openwrt_series::{parse_entry, prepare_tree, read_patch, OpenwrtSeries};
use crate::patches::rebase::{self, Class, PatchResult, RebaseState};
use crate::patches::stack::refresh::{self, FileSides};
use crate::patches::stack::reject_report;
use crate::util::fs::{copy_tree, remove_stale_staging, write_atomic, CopyKind, StagingDir};
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

/// Staging directories in the checkout (`target/linux/<board>/.xtask-bump-<pid>-…`),
/// removed on success and error, and by the next bump after a kill.
const STAGING_PREFIX: &str = ".xtask-bump-";

/// What to bump.
#[derive(Debug, Clone)]
pub struct BumpRequest {
    /// The OpenWrt checkout (changed: see the module docs).
    pub openwrt: PathBuf,
    /// A workbench target (mapped through its `openwrt = "…"`) or an
    /// OpenWrt `board[/subtarget]`.
    pub target: String,
    /// Old kernel series; `None`: the board's `KERNEL_PATCHVER`.
    pub from: Option<String>,
    /// New kernel series (`6.12`); the source must be of it.
    pub to: String,
    /// The new kernel's source (tarball or tree); `None`: Debian's.
    pub kernel_src: Option<PathBuf>,
    /// Maximum fuzz (OpenWrt's patch-kernel.sh: GNU patch's default, 2).
    pub fuzz: usize,
    /// Whether to wait for another bump of the same board and versions.
    pub wait: Wait,
}

/// The outcome: every patch of the target with its class (in the form of
/// a rebase's state, for [`rebase::table`] and [`rebase::json`]), and the
/// generic patches' classes.
#[derive(Debug, Clone)]
pub struct Bumped {
    /// The target's patches (`platform/…`), as a finished rebase.
    pub state: RebaseState,
    /// `clean 300, offset 40, …` of the generic `<to>` patches on this source.
    pub generic_summary: String,
    /// The new `patches-<to>` directory.
    pub patches_dir: PathBuf,
    /// The work tree the series was pushed onto (removed afterwards; named
    /// in the report).
    pub tree: PathBuf,
}

/// Carries out the bump (see the module docs).
///
/// Errors: the checkout already has `<to>` files for the target, the board
/// has no `patches-<from>`, the source is not of series `<to>`, a patch
/// that does not parse (naming its file and line), I/O.
pub fn run(sh: &Shell, layout: &Layout, request: &BumpRequest) -> Result<Bumped> {
    let checkout = Checkout::open(&request.openwrt)?;
    let selection = select(
        &checkout,
        &layout.targets_dir(),
        &request.target,
        request.from.as_deref(),
    )?;
    let target = selection.target;
    let board_dir = checkout.board_dir(&target.board);
    let from = match &request.from {
        Some(f) => f.clone(),
        None => checkout.kernel_versions(&target.board)?.default,
    };
    let to = request.to.clone();
    if from == to {
        bail!("--from and --to are both {to}; nothing to bump");
    }
    let old_patches = board_dir.join(format!("patches-{from}"));
    if !old_patches.is_dir() {
        bail!(
            "{}: no such directory; OpenWrt's {} has no Linux {from} patches to bump",
            old_patches.display(),
            target.board
        );
    }
    let copies = planned_copies(&checkout, &target, &from, &to)?;
    let new_patches = board_dir.join(format!("patches-{to}"));
    if let Some(existing) = already_bumped(&copies, &new_patches) {
        bail!(
            "{} exists already: {target} has been bumped to {to}; remove it to bump again",
            existing.display()
        );
    }

    let input = kernel_source::resolve_input(request.kernel_src.as_deref(), &to)?;
    let pristine = kernel_source::pristine_tree(sh, layout, &input)?;
    let series_of = kernel_source::series_of(&pristine.version);
    if series_of != to {
        bail!(
            "the kernel source is Linux {}, not {to}; pass --kernel-src with a {to} source",
            pristine.version
        );
    }

    // The series as it will be after the copy: generic <to>, then the
    // board's <from> patches under their <to> name.
    let mut entries = Vec::new();
    for pd in series::patch_directories(&checkout, &target.board, &to)? {
        let pd = match pd.group {
            Group::Platform => PatchDirectory {
                group: Group::Platform,
                dir: old_patches.clone(),
            },
            _ => pd,
        };
        entries.extend(series::directory_entries(&pd)?);
    }
    // series::overlay_dirs' order, with the board's files-<from> as files-<to>.
    let overlays: Vec<PathBuf> = [
        checkout.generic_dir().join("files"),
        checkout.generic_dir().join(format!("files-{to}")),
        board_dir.join("files"),
        board_dir.join(format!("files-{from}")),
    ]
    .into_iter()
    .filter(|d| d.is_dir())
    .collect();
    let bumped = OpenwrtSeries {
        target: target.clone(),
        kernel: to.clone(),
        overlays,
        entries,
    };

    let opts = ApplyOptions {
        strip: 1,
        fuzz: request.fuzz,
    };
    let work = rebase_dir(layout, &target, &from, &to);
    // `<dir>.lock`: with_extension would cut the `.12` of `6.12`.
    let mut lock_name = work.file_name().unwrap_or_default().to_os_string();
    lock_name.push(".lock");
    let _lock = Lock::acquire(
        &work.with_file_name(lock_name),
        &format!("bumping OpenWrt {target} to {to}"),
        request.wait,
    )?;
    if let Some(existing) = already_bumped(&copies, &new_patches) {
        bail!(
            "{} appeared while waiting for the lock: another run bumped {target}",
            existing.display()
        );
    }
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    }
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let tree = work.join("linux");
    eprintln!(
        "bumping OpenWrt {target} from Linux {from} to {to}: pushing {} patches onto {} ({})",
        bumped.entries.len(),
        pristine.version,
        tree.display()
    );
    prepare_tree(sh, &pristine.dir, &tree, &bumped.overlays)?;

    // A killed bump's staging directory in the checkout goes first.
    remove_stale_staging(&board_dir, STAGING_PREFIX)?;
    let staging = StagingDir::new(&board_dir, STAGING_PREFIX)?;
    let staged_patches = staging.path().join(format!("patches-{to}"));
    std::fs::create_dir_all(&staged_patches)
        .with_context(|| format!("creating {}", staged_patches.display()))?;

    let mut generic = Vec::new();
    let mut results = Vec::new();
    for entry in &bumped.entries {
        let patch = parse_entry(sh, entry)?;
        let bytes = read_patch(sh, entry)?;
        let (class, report) = rebase::classify(&tree, &patch, &opts)
            .with_context(|| format!("classifying {}", entry.file.display()))?;
        let kept = matches!(class, Class::Clean | Class::Offset | Class::Fuzz);
        let files = refresh::filenames_in_patch(&bytes);
        let before = if kept && entry.group == Group::Platform {
            Some(sides(&tree, &files)?)
        } else {
            None
        };
        if kept {
            apply_patch(&tree, &patch, &opts)
                .map_err(|e| anyhow!(e))
                .with_context(|| format!("applying {}", entry.file.display()))?;
        }
        if entry.group != Group::Platform {
            generic.push(class);
            continue;
        }
        let file_name = entry.file.file_name().context("a patch without a name")?;
        let mut result = PatchResult {
            name: format!("patches-{to}/{}", file_name.to_string_lossy()),
            class,
            refreshed: false,
            removed: false,
            rejects: Vec::new(),
            note: String::new(),
        };
        match class {
            Class::Clean => write_atomic(&staged_patches.join(file_name), &bytes)?,
            Class::Offset | Class::Fuzz => {
                let mut after = before.unwrap_or_default();
                for side in &mut after {
                    side.new = refresh::read_optional(&tree.join(&side.path))
                        .with_context(|| format!("reading {}", side.path.display()))?;
                }
                let refreshed = refresh::render(&bytes, &after)
                    .map_err(|e| anyhow!("refreshing {}: {e}", entry.file.display()))?;
                result.refreshed = refreshed != bytes;
                write_atomic(&staged_patches.join(file_name), &refreshed)?;
                result.note = report
                    .render()
                    .lines()
                    .filter(|l| l.starts_with("Hunk"))
                    .collect::<Vec<_>>()
                    .join(" ");
            }
            Class::Upstream => {
                result.removed = true;
                result.note = "applies in reverse: already in the new kernel".into();
            }
            Class::Conflict => {
                write_atomic(&staged_patches.join(file_name), &bytes)?;
                let report = reject_report(&patch, report);
                let mut text = Vec::new();
                for fr in &report.files {
                    text.extend_from_slice(&render_rejects(&patch.files[fr.index], fr, opts.strip));
                }
                let saved = work
                    .join("rejects")
                    .join(format!("{}.rej", file_name.to_string_lossy()));
                write_atomic(&saved, &text)?;
                result.rejects.push(saved.display().to_string());
                result.note = format!(
                    "{}; kept as it was: fix it by hand",
                    rebase::conflict_note(&report)
                );
            }
        }
        results.push(result);
    }

    // Everything is classified: now the checkout changes.
    for (old, new) in &copies {
        copy_into_place(sh, old, new)?;
    }
    std::fs::rename(&staged_patches, &new_patches).with_context(|| {
        format!(
            "moving {} to {}",
            staged_patches.display(),
            new_patches.display()
        )
    })?;
    set_testing_version(&board_dir.join("Makefile"), &to)?;
    std::fs::remove_dir_all(&tree).ok();

    Ok(Bumped {
        state: RebaseState {
            from,
            to,
            target: Some(target.to_string()),
            fuzz: opts.fuzz,
            keep_going: true,
            dirs: vec![(new_patches.clone(), false)],
            pending: Vec::new(),
            results,
            stopped_at: None,
            kept_existing: Vec::new(),
        },
        generic_summary: rebase::tally(generic)
            .iter()
            .map(|(k, n)| format!("{} {n}", k.as_str()))
            .collect::<Vec<_>>()
            .join(", "),
        patches_dir: new_patches,
        tree,
    })
}

/// `target/xtask/rebase/openwrt-<board>-<from>-to-<to>/`: the work tree and
/// the saved rejects of a bump.
pub fn rebase_dir(layout: &Layout, target: &OpenwrtTarget, from: &str, to: &str) -> PathBuf {
    layout
        .work_dir()
        .join("rebase")
        .join(format!("openwrt-{}-{from}-to-{to}", target.board))
}

/// kernel_bump.sh's copies besides the patches: `config-<from>` of the
/// board and of each subtarget, and the board's `files-<from>`, each to its
/// `<to>` name; only those that exist.
fn planned_copies(
    checkout: &Checkout,
    target: &OpenwrtTarget,
    from: &str,
    to: &str,
) -> Result<Vec<(PathBuf, PathBuf)>> {
    let board_dir = checkout.board_dir(&target.board);
    let mut dirs = vec![board_dir.clone()];
    dirs.extend(
        checkout
            .subtargets(&target.board)?
            .iter()
            .map(|s| board_dir.join(s)),
    );
    let mut copies: Vec<(PathBuf, PathBuf)> = dirs
        .iter()
        .map(|d| {
            (
                d.join(format!("config-{from}")),
                d.join(format!("config-{to}")),
            )
        })
        .collect();
    copies.push((
        board_dir.join(format!("files-{from}")),
        board_dir.join(format!("files-{to}")),
    ));
    copies.retain(|(old, _)| old.exists());
    Ok(copies)
}

/// The first of the bump's destinations that exists already.
fn already_bumped<'a>(copies: &'a [(PathBuf, PathBuf)], patches: &'a Path) -> Option<&'a Path> {
    copies
        .iter()
        .map(|(_, to)| to.as_path())
        .chain([patches])
        .find(|p| p.exists())
}

/// The current contents of `files` in `tree`, before a patch.
fn sides(tree: &Path, files: &[PathBuf]) -> Result<Vec<FileSides>> {
    files
        .iter()
        .map(|p| {
            Ok(FileSides {
                path: p.clone(),
                old: refresh::read_optional(&tree.join(p))
                    .with_context(|| format!("reading {}", p.display()))?,
                new: None,
            })
        })
        .collect()
}

/// Copies a file, or a directory's files recursively, to `new` (which does
/// not exist), through a temporary name and a rename.
fn copy_into_place(sh: &Shell, old: &Path, new: &Path) -> Result<()> {
    if old.is_dir() {
        let parent = new.parent().context("a directory without a parent")?;
        let staging = StagingDir::new(parent, STAGING_PREFIX)?;
        let staged = staging.path().join("dir");
        copy_tree(sh, old, &staged, CopyKind::Full)?;
        std::fs::rename(&staged, new)
            .with_context(|| format!("moving {} to {}", staged.display(), new.display()))?;
    } else {
        let bytes = std::fs::read(old).with_context(|| format!("reading {}", old.display()))?;
        write_atomic(new, &bytes)?;
    }
    Ok(())
}

/// Sets `KERNEL_TESTING_PATCHVER:=<to>` in a board Makefile: replaces the
/// line when there is one, else adds it after `KERNEL_PATCHVER`.
fn set_testing_version(makefile: &Path, to: &str) -> Result<()> {
    let text = std::fs::read_to_string(makefile)
        .with_context(|| format!("reading {}", makefile.display()))?;
    let line = format!("KERNEL_TESTING_PATCHVER:={to}");
    let mut out = Vec::new();
    let mut done = false;
    for l in text.lines() {
        let key = l.split(['=', ':', '?']).next().unwrap_or("").trim();
        if key == "KERNEL_TESTING_PATCHVER" {
            out.push(line.clone());
            done = true;
        } else {
            out.push(l.to_string());
            if key == "KERNEL_PATCHVER" && !done && !text.contains("KERNEL_TESTING_PATCHVER") {
                out.push(line.clone());
                done = true;
            }
        }
    }
    if !done {
        bail!(
            "{}: no KERNEL_PATCHVER line to add KERNEL_TESTING_PATCHVER:={to} after",
            makefile.display()
        );
    }
    let mut new = out.join("\n");
    new.push('\n');
    write_atomic(makefile, new.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn testing_version_is_added_after_the_default_or_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let mk = dir.path().join("Makefile");
        std::fs::write(&mk, "ARCH:=arm\nKERNEL_PATCHVER:=6.6\n\ninclude x\n").unwrap();
        set_testing_version(&mk, "6.12").unwrap();
        assert_eq!(
            std::fs::read_to_string(&mk).unwrap(),
            "ARCH:=arm\nKERNEL_PATCHVER:=6.6\nKERNEL_TESTING_PATCHVER:=6.12\n\ninclude x\n"
        );
        std::fs::write(&mk, "KERNEL_PATCHVER:=6.6\nKERNEL_TESTING_PATCHVER:=6.1\n").unwrap();
        set_testing_version(&mk, "6.12").unwrap();
        assert_eq!(
            std::fs::read_to_string(&mk).unwrap(),
            "KERNEL_PATCHVER:=6.6\nKERNEL_TESTING_PATCHVER:=6.12\n"
        );
    }
}
