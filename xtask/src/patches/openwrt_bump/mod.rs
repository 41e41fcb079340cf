//! `cargo xtask patches rebase --openwrt PATH --target T --to 6.12`: moving
//! an OpenWrt target to a new kernel series in its checkout, the bump
//! OpenWrt developers do with `scripts/kernel_bump.sh` and then
//! `make target/linux/refresh`:
//!
//! 1. the target's `patches-<from>`, `files-<from>` and every
//!    `config-<from>` of the board and its subtargets are copied to
//!    `<to>` names (kernel_bump.sh; a `series` file and other files of the
//!    patch directory go along);
//! 2. the new series (OpenWrt's generic `<to>` patches, then the board's)
//!    is pushed onto the workbench's `<to>` source (Debian's point release,
//!    not the one OpenWrt pins in `generic/kernel-<to>`) with OpenWrt's
//!    `files/` overlays, every patch classified with the rebase classifier
//!    ([`rebase::classify`], GNU patch's fuzz 2);
//! 3. in `patches-<to>`, the board patches that apply at an offset or with
//!    fuzz are refreshed as quilt writes them ([`refresh::render`]), upstream
//!    ones (they apply in reverse, also when they apply forwards too, or
//!    they only add lines that are already there) are removed with the
//!    reason as their note, conflicting ones are kept as they were, to be
//!    fixed by hand, with their rejects saved under
//!    [`rebase_dir`]`/rejects/`. Clean patches and the generic ones are not rewritten
//!    (`make target/linux/refresh` would rewrite every patch);
//! 4. the board's Makefile gets `KERNEL_TESTING_PATCHVER:=<to>`, so that
//!    `build --openwrt` (and OpenWrt with `CONFIG_TESTING_KERNEL`) can
//!    build the new version.
//!
//! Nothing in the checkout changes until every patch is classified; then
//! the writes are all or nothing ([`commit`]: a journal, rolled back on
//! error or by the next bump after a kill), under a lock on the board
//! directory. Refused: a `<to>` that is not newer, a board that already
//! builds `<to>`, a checkout without OpenWrt's generic `<to>`.

pub mod commit;

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use xshell::{cmd, Shell};

use crate::inputs::kernel_source;
use crate::inputs::openwrt::series::{self, Group, PatchDirectory};
use crate::inputs::openwrt::{select, Checkout, OpenwrtTarget};
use crate::patches::engine::{apply_patch, render_rejects, ApplyOptions};
use crate::patches::openwrt_series::{self, parse_entry, prepare_tree, read_patch, OpenwrtSeries};
use crate::patches::rebase::{self, Class, PatchResult, RebaseState};
use crate::patches::stack::refresh::{self, FileSides};
use crate::patches::stack::reject_report;
use crate::util::fs::{write_atomic, StagingDir};
use crate::util::hash::sha256_bytes;
use crate::util::layout::Layout;
use crate::util::lock::Wait;
use commit::{BoardLock, Writes, STAGING_PREFIX};

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
/// Errors: `<to>` is not a newer series than `<from>`, or the checkout has
/// no generic `<to>` series; the board already builds `<to>` or has `<to>`
/// files its Makefile does not list; the board has neither patches nor a
/// config for `<from>`; the source is not of series `<to>`; a patch that
/// does not parse (naming its file and line); I/O (the checkout is then
/// as it was).
pub fn run(sh: &Shell, layout: &Layout, request: &BumpRequest) -> Result<Bumped> {
    for v in [Some(&request.to), request.from.as_ref()]
        .into_iter()
        .flatten()
    {
        series_number(v)?;
    }
    let checkout = Checkout::open(&request.openwrt)?;
    let target = select_target(&checkout, layout, request)?;
    let board_dir = checkout.board_dir(&target.board);
    let _lock = BoardLock::acquire(&board_dir, &target.to_string(), request.wait)?;
    let mut dirs = vec![board_dir.clone()];
    dirs.extend(
        checkout
            .subtargets(&target.board)?
            .iter()
            .map(|s| board_dir.join(s)),
    );
    if let Some(note) = commit::recover(&board_dir, &dirs)? {
        eprintln!("note: {note}");
    }
    let (from, to) = bump_versions(&checkout, &target, &board_dir, request)?;
    let copies = planned_copies(&dirs, &board_dir, &from, &to);
    let old_patches = board_dir.join(format!("patches-{from}"));
    let has_patches = old_patches.is_dir();
    let new_patches = board_dir.join(format!("patches-{to}"));
    check_nothing_bumped(&board_dir, &target, (&from, &to), &copies, has_patches)?;
    let makefile = board_dir.join("Makefile");
    let makefile_text = std::fs::read_to_string(&makefile)
        .with_context(|| format!("reading {}", makefile.display()))?;
    let new_makefile = commit::with_testing_version(&makefile_text, &to)
        .with_context(|| makefile.display().to_string())?;

    let input = kernel_source::resolve_input(request.kernel_src.as_deref(), &to)?;
    let pristine = kernel_source::pristine_tree(sh, layout, &input)?;
    if kernel_source::series_of(&pristine.version) != to {
        bail!(
            "the kernel source is Linux {}, not {to}; pass --kernel-src with a {to} source",
            pristine.version
        );
    }
    let old_patches_dir = has_patches.then_some(old_patches.as_path());
    let bumped = bumped_series(&checkout, &target, (&from, &to), old_patches_dir)?;
    let opts = ApplyOptions {
        strip: 1,
        fuzz: request.fuzz,
    };
    let work = rebase_dir(layout, &checkout, &target, &from, &to);
    let tree = fresh_work_tree(&work)?;
    eprintln!(
        "bumping OpenWrt {target} from Linux {from} to {to}: pushing {} patches onto {} ({})",
        bumped.entries.len(),
        pristine.version,
        tree.display()
    );
    prepare_tree(sh, &pristine.dir, &tree, &bumped.overlays)?;

    let staging = StagingDir::new(&board_dir, STAGING_PREFIX)?;
    let staged_patches = staging.path().join(format!("patches-{to}"));
    std::fs::create_dir_all(&staged_patches)
        .with_context(|| format!("creating {}", staged_patches.display()))?;
    let (generic, results) = classify(&tree, &work, &bumped, &opts, &staged_patches, &to)?;
    if has_patches {
        copy_other_files(sh, &old_patches, &bumped, &results, &staged_patches)?;
    }

    // Everything is classified: now the checkout changes, all or nothing.
    commit::commit(
        sh,
        &board_dir,
        &Writes {
            copies: &copies,
            patches: has_patches.then_some((staged_patches.as_path(), new_patches.as_path())),
            makefile: (&makefile, &makefile_text, &new_makefile),
        },
    )?;
    drop(staging);
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

/// The OpenWrt target `request.target` names in `checkout` (a workbench
/// target of `layout` or an OpenWrt `board[/subtarget]`), as its Makefile
/// has it now: building `request.from` (its `KERNEL_PATCHVER` when
/// `None`), or else already listing `request.to` — a bump a kill
/// interrupted, which [`commit::recover`] rolls back.
///
/// Errors: those of [`select`] for `request.from`.
fn select_target(
    checkout: &Checkout,
    layout: &Layout,
    request: &BumpRequest,
) -> Result<OpenwrtTarget> {
    let targets_dir = layout.targets_dir();
    let selection = select(
        checkout,
        &targets_dir,
        &request.target,
        request.from.as_deref(),
    )
    .or_else(|e| {
        select(checkout, &targets_dir, &request.target, Some(&request.to)).map_err(|_| e)
    })?;
    Ok(selection.target)
}

/// The series to bump `target` (whose board is `board_dir`) from and to:
/// `request.from` (else the board's `KERNEL_PATCHVER`) and `request.to`,
/// as `(from, to)`.
///
/// Errors: the board already builds `<to>` or does not build `<from>`,
/// and those of [`check_versions`].
fn bump_versions(
    checkout: &Checkout,
    target: &OpenwrtTarget,
    board_dir: &Path,
    request: &BumpRequest,
) -> Result<(String, String)> {
    let versions = checkout.kernel_versions(&target.board)?.all();
    let to = request.to.clone();
    if versions.contains(&to) {
        bail!(
            "OpenWrt's {target} already builds Linux {to} ({}'s KERNEL_PATCHVER or KERNEL_TESTING_PATCHVER); nothing to bump",
            board_dir.join("Makefile").display()
        );
    }
    let from = request.from.clone().unwrap_or(versions[0].clone());
    if !versions.contains(&from) {
        bail!(
            "OpenWrt's {target} builds Linux {}, not {from}; pass --from {}",
            versions.join(" and "),
            versions[0]
        );
    }
    check_versions(checkout, target, &from, &to)?;
    Ok((from, to))
}

/// Checks that `target`'s board (`board_dir`) has something of `<from>`
/// to bump (`has_patches`: a `patches-<from>`; `copies`: the planned
/// `(from, to)` copies of its other files) and no `<to>` files of its
/// own yet.
///
/// Errors: nothing to bump, or a `<to>` file that exists although the
/// Makefile does not build `<to>`.
fn check_nothing_bumped(
    board_dir: &Path,
    target: &OpenwrtTarget,
    (from, to): (&str, &str),
    copies: &[(PathBuf, PathBuf)],
    has_patches: bool,
) -> Result<()> {
    if !has_patches && copies.is_empty() {
        bail!(
            "{}: no patches-{from}, config-{from} or files-{from}: OpenWrt's {target} has nothing of Linux {from} to bump",
            board_dir.display()
        );
    }
    let new_patches = board_dir.join(format!("patches-{to}"));
    if let Some(existing) = already_bumped(copies, &new_patches) {
        bail!(
            "{} exists, but {}'s Makefile does not build Linux {to}: move it away (it is not from a bump of this workbench) and bump again",
            existing.display(),
            target
        );
    }
    Ok(())
}

/// The series of `target` as it will be after the copy, for `(from, to)`:
/// OpenWrt's generic `<to>` patches, then the board's `<from>` patches
/// (`old_patches`, when it has them) under their `<to>` name, with the
/// overlays in [`series::overlay_dirs`]' order, the board's
/// `files-<from>` standing for `files-<to>`.
///
/// Errors: an unreadable patch directory or `series` file.
fn bumped_series(
    checkout: &Checkout,
    target: &OpenwrtTarget,
    (from, to): (&str, &str),
    old_patches: Option<&Path>,
) -> Result<OpenwrtSeries> {
    let board_dir = checkout.board_dir(&target.board);
    let mut entries = Vec::new();
    for pd in series::patch_directories(checkout, &target.board, to)? {
        if pd.group != Group::Platform {
            entries.extend(series::directory_entries(&pd)?);
        } else if let Some(old_patches) = old_patches {
            entries.extend(series::directory_entries(&PatchDirectory {
                group: Group::Platform,
                dir: old_patches.to_path_buf(),
            })?);
        }
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
    Ok(OpenwrtSeries {
        target: target.clone(),
        kernel: to.to_string(),
        overlays,
        entries,
    })
}

/// A new work tree's path in `work` (the bump's [`rebase_dir`]), created
/// with what interrupted bumps left there removed.
///
/// A killed bump's `cp -al` can outlive it and still be writing its work
/// tree: what cannot be removed yet is left for a later run (with a
/// note), and this run pushes onto a tree of its own.
///
/// Errors: `work` cannot be created.
fn fresh_work_tree(work: &Path) -> Result<PathBuf> {
    if let Ok(entries) = std::fs::read_dir(work) {
        for entry in entries.flatten() {
            let path = entry.path();
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            if let Err(e) = removed {
                eprintln!(
                    "note: {} (left by an interrupted bump) cannot be removed yet ({e}); a later bump removes it",
                    path.display()
                );
            }
        }
    }
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    Ok(work.join(format!("linux-{}", std::process::id())))
}

/// `6.12` → (6, 12).
///
/// Errors: anything but two dot-separated numbers.
fn series_number(v: &str) -> Result<(u32, u32)> {
    let parsed = v
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
    parsed.with_context(|| format!("{v:?} is not a kernel series such as 6.12"))
}

/// `<to>` is newer than `<from>`, and the checkout has OpenWrt's generic
/// `<to>` series to bump onto.
fn check_versions(checkout: &Checkout, target: &OpenwrtTarget, from: &str, to: &str) -> Result<()> {
    if series_number(to)? <= series_number(from)? {
        bail!("--to {to} is not newer than --from {from}; a bump goes to a newer kernel");
    }
    let generic = checkout.generic_dir();
    if !generic.join(format!("kernel-{to}")).is_file()
        && !generic.join(format!("config-{to}")).is_file()
    {
        bail!(
            "{}: no kernel-{to} or config-{to}: this checkout has no generic Linux {to} to bump {target} onto; update the checkout first",
            generic.display()
        );
    }
    Ok(())
}

/// Pushes every patch of `bumped` onto `tree`, classifying it; writes each
/// board patch that stays (refreshed when it needed an offset or fuzz) to
/// `staged`, and a conflict's rejects under `work/rejects/`. Returns the
/// generic patches' classes and the board patches' results.
fn classify(
    tree: &Path,
    work: &Path,
    bumped: &OpenwrtSeries,
    opts: &ApplyOptions,
    staged: &Path,
    to: &str,
) -> Result<(Vec<Class>, Vec<PatchResult>)> {
    let mut generic = Vec::new();
    let mut results = Vec::new();
    for entry in &bumped.entries {
        let patch = parse_entry(entry)?;
        let bytes = read_patch(entry)?;
        let classified = rebase::classify(tree, &patch, opts)
            .with_context(|| format!("classifying {}", entry.file.display()))?;
        let (class, report) = (classified.class, classified.report);
        let kept = matches!(class, Class::Clean | Class::Offset | Class::Fuzz);
        let platform = entry.group == Group::Platform;
        let files = refresh::filenames_in_patch(&bytes);
        let before = if kept && platform {
            Some(sides(tree, &files)?)
        } else {
            None
        };
        if kept {
            apply_patch(tree, &patch, opts)
                .map_err(|e| anyhow!(e))
                .with_context(|| format!("applying {}", entry.file.display()))?;
        }
        if !platform {
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
            note: openwrt_series::note(class, &report),
        };
        match class {
            Class::Clean => write_atomic(&staged.join(file_name), &bytes)?,
            Class::Offset | Class::Fuzz => {
                let mut after = before.unwrap_or_default();
                for side in &mut after {
                    side.new = refresh::read_optional(&tree.join(&side.path))
                        .with_context(|| format!("reading {}", side.path.display()))?;
                }
                let refreshed = refresh::render(&bytes, &after)
                    .map_err(|e| anyhow!("refreshing {}: {e}", entry.file.display()))?;
                result.refreshed = refreshed != bytes;
                write_atomic(&staged.join(file_name), &refreshed)?;
            }
            Class::Upstream => {
                result.removed = true;
                result.note = classified
                    .upstream
                    .unwrap_or(rebase::Upstream::Reversed)
                    .note()
                    .into();
            }
            Class::Conflict => {
                write_atomic(&staged.join(file_name), &bytes)?;
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
    Ok((generic, results))
}

/// kernel_bump.sh copies the whole directory: what `patches-<from>` holds
/// besides the patches of the series (a `series` file, patches it does not
/// list, subdirectories) goes to `staged` too; a `series` file loses the
/// lines of the patches the bump removed.
fn copy_other_files(
    sh: &Shell,
    old: &Path,
    bumped: &OpenwrtSeries,
    results: &[PatchResult],
    staged: &Path,
) -> Result<()> {
    let in_series: Vec<&Path> = bumped
        .entries
        .iter()
        .filter(|e| e.group == Group::Platform)
        .map(|e| e.file.as_path())
        .collect();
    let removed: Vec<String> = results
        .iter()
        .filter(|r| r.removed)
        .filter_map(|r| r.name.rsplit('/').next().map(str::to_string))
        .collect();
    for entry in std::fs::read_dir(old).with_context(|| format!("reading {}", old.display()))? {
        let entry = entry.with_context(|| format!("reading {}", old.display()))?;
        let path = entry.path();
        if in_series.contains(&path.as_path()) {
            continue;
        }
        let dest = staged.join(entry.file_name());
        if entry.file_name() == "series" && path.is_file() {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            let kept: Vec<&str> = text
                .lines()
                .filter(|l| {
                    let first = l.split('#').next().unwrap_or("").split_whitespace().next();
                    !first.is_some_and(|f| removed.iter().any(|r| r == f))
                })
                .collect();
            let mut out = kept.join("\n");
            out.push('\n');
            write_atomic(&dest, out.as_bytes())?;
        } else {
            crate::util::process::run_tied(cmd!(sh, "cp -a {path} {dest}").quiet())
                .with_context(|| format!("copying {}", path.display()))?;
        }
    }
    Ok(())
}

/// `target/xtask/rebase/openwrt-<board>-<from>-to-<to>-<checkout>/`: the
/// work tree and the saved rejects of a bump (`<checkout>`: the first 8 hex
/// digits of the checkout path's sha256, so bumps of two checkouts keep
/// their own rejects).
pub fn rebase_dir(
    layout: &Layout,
    checkout: &Checkout,
    target: &OpenwrtTarget,
    from: &str,
    to: &str,
) -> PathBuf {
    let root = std::fs::canonicalize(checkout.root()).unwrap_or(checkout.root().to_path_buf());
    let hash = sha256_bytes(root.to_string_lossy().as_bytes());
    layout.work_dir().join("rebase").join(format!(
        "openwrt-{}-{from}-to-{to}-{}",
        target.board,
        &hash[..8]
    ))
}

/// kernel_bump.sh's copies besides the patches: `config-<from>` of the
/// board and of each subtarget (`dirs`, the board's first), and the board's
/// `files-<from>`, each to its `<to>` name; only those that exist.
fn planned_copies(
    dirs: &[PathBuf],
    board_dir: &Path,
    from: &str,
    to: &str,
) -> Vec<(PathBuf, PathBuf)> {
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
    copies
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
