//! Rebasing the patch series onto a new kernel version: copy
//! `patches/generic/*-<from>` and the target's `patches-<from>` to the
//! `<to>` directories, then push every patch onto a copy of the new kernel
//! source and classify it:
//!
//! * `clean`: applies at its own lines, no fuzz;
//! * `offset`: applies at other lines, no fuzz (refreshed);
//! * `fuzz`: needs fuzz ≤ `--fuzz` (default 2, GNU patch's) (refreshed);
//! * `upstream`: the new kernel has it already: it applies in reverse
//!   ([`crate::patches::engine::reverse_applies`]), whether or not it also
//!   applies forwards elsewhere, or it only adds lines that are already
//!   next to its context ([`additions_present`]); removed from the new series;
//! * `conflict`: neither. The rebase stops with the hunks that apply
//!   applied, `FILE.rej` in the work tree and a copy under the rebase's
//!   `rejects/`; `--continue` refreshes the patch from the fixed tree,
//!   `--skip` drops it, `--abort` restores `patches/` to the start. With
//!   `--keep-going` nothing of a conflicting patch is kept, its rejects are
//!   saved under `rejects/` and the series goes on.
//!
//! State: `target/xtask/rebase/<target|generic>-<from>-to-<to>/` with
//! `state.json`, `start/` (the `<to>` directories as they were), `rejects/`
//! and `linux/` (the work tree, a [`crate::patches::stack::Stack`]).
//! `start/` and `state.json` are written before anything in `patches/`
//! changes, so `--abort` restores `patches/` from any point of a rebase,
//! one killed while copying its work tree included. A rebase holds the
//! lock `<dir>.lock` while it runs.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use xshell::Shell;

use crate::inputs::targets::Target;
use crate::patches::engine::{parse_patch, ApplyOptions};
use crate::patches::stack::{reject_report, work_tree, Refreshed, Stack};
use crate::util::fs::write_atomic;
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

mod classify;
mod present;
mod state;
mod summary;

pub use classify::{classify, ClassReport, Upstream};
pub use present::additions_present;
pub use state::{Class, PatchResult, RebaseState};
pub use summary::{counts, json, table, tally};

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Start a rebase.
    Start,
    /// Refresh the fixed conflicting patch and go on.
    Continue,
    /// Drop the conflicting patch and go on.
    Skip,
    /// Restore the start state.
    Abort,
}

/// Rebase options.
#[derive(Debug, Clone)]
pub struct RebaseOptions {
    /// Old kernel series.
    pub from: String,
    /// New kernel series.
    pub to: String,
    /// Target whose `patches-<kver>` follow the generic ones.
    pub target: Option<Target>,
    /// Source of the new kernel (tarball or tree); default Debian's.
    pub kernel_src: Option<PathBuf>,
    /// Fuzz allowed (GNU's default 2).
    pub fuzz: usize,
    /// Classify every patch in one pass.
    pub keep_going: bool,
}

/// The rebase's own directory.
pub fn rebase_dir(layout: &Layout, target: Option<&Target>, from: &str, to: &str) -> PathBuf {
    layout.work_dir().join("rebase").join(format!(
        "{}-{from}-to-{to}",
        target.map_or("generic", |t| t.name.as_str())
    ))
}

/// Where a rebase stands after a call.
#[derive(Debug, Clone)]
pub struct RebaseOutcome {
    /// The state (results so far; `stopped_at` set when stopped at a conflict).
    pub state: RebaseState,
    /// The work tree.
    pub tree: PathBuf,
}

/// Runs one rebase step (`action`), waiting for another run of the same
/// rebase to finish first ([`run_waiting`] with [`Wait::Yes`]).
///
/// Errors: as [`run_waiting`].
pub fn run(
    sh: &Shell,
    layout: &Layout,
    opts: &RebaseOptions,
    action: Action,
) -> Result<RebaseOutcome> {
    run_waiting(sh, layout, opts, action, Wait::Yes)
}

/// Runs one rebase step (`action`), holding the rebase's lock
/// (`<rebase dir>.lock`; `wait` says what to do when another run holds it).
///
/// Errors: the lock is held and `wait` is [`Wait::No`]; a rebase already
/// in progress on `Start`, none on the others; a patch that does not parse
/// (the rebase stays resumable); I/O.
pub fn run_waiting(
    sh: &Shell,
    layout: &Layout,
    opts: &RebaseOptions,
    action: Action,
    wait: Wait,
) -> Result<RebaseOutcome> {
    crate::inputs::kernel_source::check_series(&opts.from, "--from")?;
    crate::inputs::kernel_source::check_series(&opts.to, "--to")?;
    let dir = rebase_dir(layout, opts.target.as_ref(), &opts.from, &opts.to);
    let mut lock_name = dir.file_name().unwrap_or_default().to_os_string();
    lock_name.push(".lock");
    let _lock = Lock::acquire(
        &dir.with_file_name(lock_name),
        &format!("the rebase {}", dir.display()),
        wait,
    )?;
    let state_file = dir.join("state.json");
    let work = dir.join("linux");
    let patches_dir = layout.patches_dir();
    let mut state = match action {
        Action::Start => {
            if state_file.exists() {
                bail!(
                    "a rebase is in progress ({}); use --continue, --skip or --abort",
                    state_file.display()
                );
            }
            start(sh, layout, opts, &dir, &state_file).map_err(|e| {
                if state_file.exists() {
                    e.context(format!(
                        "the rebase stopped while starting; `cargo xtask patches rebase --abort` \
                         restores patches/ from {}",
                        dir.join("start").display()
                    ))
                } else {
                    e
                }
            })?
        }
        _ => {
            let limit = crate::util::fs::FileLimit {
                what: "rebase state",
                max_bytes: crate::util::fs::MAX_RECORD_BYTES,
            };
            let text = crate::util::fs::read_limited(
                &state_file,
                limit,
                "`cargo xtask patches rebase --abort` restores patches/",
            )
            .with_context(|| format!("is a rebase in progress in {}?", dir.display()))?;
            serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", state_file.display()))?
        }
    };
    let all: Vec<String> = state
        .results
        .iter()
        .map(|r| r.name.clone())
        .chain(state.pending.iter().cloned())
        .collect();
    let stack = Stack::new(
        &work,
        &patches_dir,
        all,
        ApplyOptions {
            strip: 1,
            fuzz: state.fuzz,
        },
    );
    match action {
        Action::Abort => {
            abort(&dir, &patches_dir, &state)?;
            return Ok(RebaseOutcome { state, tree: work });
        }
        Action::Continue | Action::Skip => {
            if !work.is_dir() {
                bail!(
                    "the rebase was interrupted before its work tree {} was ready; \
                     run `cargo xtask patches rebase --abort` (it restores patches/), then start again",
                    work.display()
                );
            }
            let name = state
                .stopped_at
                .clone()
                .context("the rebase is not stopped at a conflict")?;
            let result = state
                .results
                .iter_mut()
                .find(|r| r.name == name)
                .context("stopped patch has no result")?;
            for rej in &result.rejects {
                let _ = std::fs::remove_file(work.join(rej));
            }
            if action == Action::Continue {
                let (_, how) = stack.refresh(Some(&name))?;
                result.refreshed = how == Refreshed::Rewritten;
                result.note = "resolved by hand and refreshed".into();
            } else {
                stack.pop(true)?;
                let file = patches_dir.join(&name);
                std::fs::remove_file(&file)
                    .with_context(|| format!("removing {}", file.display()))?;
                result.removed = true;
                result.note = "skipped (dropped from the new series)".into();
            }
            state.stopped_at = None;
        }
        Action::Start => {}
    }
    save(&state_file, &state)?;
    while let Some(name) = state.pending.first().cloned() {
        let result = step(&stack, &patches_dir, &dir, &name, &state)?;
        let stop = result.class == Class::Conflict && !state.keep_going;
        state.pending.remove(0);
        state.results.push(result);
        if stop {
            state.stopped_at = Some(name);
            save(&state_file, &state)?;
            return Ok(RebaseOutcome { state, tree: work });
        }
        save(&state_file, &state)?;
    }
    std::fs::remove_file(&state_file)
        .with_context(|| format!("removing {}", state_file.display()))?;
    write_atomic(&dir.join("summary.json"), json(&state, &work).as_bytes())?;
    Ok(RebaseOutcome { state, tree: work })
}

fn save(file: &Path, state: &RebaseState) -> Result<()> {
    let text = serde_json::to_string_pretty(state).context("serializing the rebase state")?;
    write_atomic(file, text.as_bytes())
}

/// Snapshot of the new directories, the copy of the old series, the work
/// tree. The state (with the snapshot `--abort` restores from) is written
/// before `patches/` is touched, so a rebase killed at any point after can
/// be aborted.
fn start(
    sh: &Shell,
    layout: &Layout,
    opts: &RebaseOptions,
    dir: &Path,
    state_file: &Path,
) -> Result<RebaseState> {
    let patches_dir = layout.patches_dir();
    let old_dirs = work_tree::directories(&patches_dir, opts.target.as_ref(), &opts.from);
    let new_dirs = work_tree::directories(&patches_dir, opts.target.as_ref(), &opts.to);
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let snapshot = dir.join("start");
    let mut dirs = Vec::new();
    for d in &new_dirs {
        let existed = d.is_dir();
        if existed {
            let rel = d.strip_prefix(&patches_dir).unwrap_or(d);
            copy_dir_files(d, &snapshot.join(rel))?;
        }
        dirs.push((d.clone(), existed));
    }
    let mut state = RebaseState {
        from: opts.from.clone(),
        to: opts.to.clone(),
        target: opts.target.as_ref().map(|t| t.name.clone()),
        fuzz: opts.fuzz,
        keep_going: opts.keep_going,
        dirs,
        pending: Vec::new(),
        results: Vec::new(),
        stopped_at: None,
        kept_existing: Vec::new(),
    };
    save(state_file, &state)?;
    let mut kept_existing = Vec::new();
    for (old, new) in old_dirs.iter().zip(&new_dirs) {
        for file in crate::patches::series::patch_files(old)? {
            let dest = new.join(file.file_name().context("patch without a name")?);
            let bytes =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            if dest.exists() {
                let have =
                    std::fs::read(&dest).with_context(|| format!("reading {}", dest.display()))?;
                if have != bytes {
                    kept_existing.push(rel_name(&patches_dir, &dest));
                }
                continue;
            }
            write_atomic(&dest, &bytes)?;
        }
    }
    state.pending = work_tree::series_names(&patches_dir, &new_dirs)?;
    state.kept_existing = kept_existing;
    save(state_file, &state)?;
    work_tree::ensure_copy(
        sh,
        layout,
        opts.kernel_src.as_deref(),
        &opts.to,
        &dir.join("linux"),
    )?;
    Ok(state)
}

fn rel_name(patches_dir: &Path, p: &Path) -> String {
    p.strip_prefix(patches_dir)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

/// Copies the regular files of `from` (not recursive) into `to`.
fn copy_dir_files(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let path = entry?.path();
        if path.is_file() {
            let dest = to.join(path.file_name().unwrap_or_default());
            std::fs::copy(&path, &dest)
                .with_context(|| format!("copying {} to {}", path.display(), dest.display()))?;
        }
    }
    Ok(())
}

/// Puts the new directories back as they were and removes the rebase.
fn abort(dir: &Path, patches_dir: &Path, state: &RebaseState) -> Result<()> {
    let snapshot = dir.join("start");
    for (d, existed) in &state.dirs {
        if d.is_dir() {
            for entry in std::fs::read_dir(d).with_context(|| format!("reading {}", d.display()))? {
                let path = entry?.path();
                if path.is_file() {
                    std::fs::remove_file(&path)
                        .with_context(|| format!("removing {}", path.display()))?;
                }
            }
        }
        if *existed {
            let rel = d.strip_prefix(patches_dir).unwrap_or(d);
            copy_dir_files(&snapshot.join(rel), d)?;
        } else if d.is_dir() {
            std::fs::remove_dir(d).with_context(|| format!("removing {}", d.display()))?;
            crate::util::fs::remove_empty_parents(patches_dir, d.parent());
        }
    }
    std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))
}

/// Classifies and pushes one patch.
fn step(
    stack: &Stack,
    patches_dir: &Path,
    dir: &Path,
    name: &str,
    state: &RebaseState,
) -> Result<PatchResult> {
    let file = patches_dir.join(name);
    let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    let patch = parse_patch(&bytes).map_err(|e| anyhow!("{}:{}: {e}", file.display(), e.line))?;
    let mut result = PatchResult {
        name: name.to_string(),
        class: Class::Clean,
        refreshed: false,
        removed: false,
        rejects: Vec::new(),
        note: String::new(),
    };
    let ClassReport {
        class,
        report,
        upstream: why,
    } = classify(stack.tree(), &patch, &stack.options)
        .with_context(|| format!("checking {name}"))?;
    result.class = class;
    if matches!(class, Class::Clean | Class::Offset | Class::Fuzz) {
        result.note = report
            .render()
            .lines()
            .filter(|l| l.starts_with("Hunk"))
            .collect::<Vec<_>>()
            .join(" ");
        stack
            .push_patch(name, &patch)
            .with_context(|| format!("pushing {name}"))?;
        if result.class != Class::Clean {
            let (_, how) = stack.refresh(Some(name))?;
            result.refreshed = how == Refreshed::Rewritten;
        }
        return Ok(result);
    }
    let upstream = class == Class::Upstream;
    if upstream {
        result.class = Class::Upstream;
        result.removed = true;
        result.note = why.unwrap_or(Upstream::Reversed).note().into();
        std::fs::remove_file(&file).with_context(|| format!("removing {}", file.display()))?;
        return Ok(result);
    }
    result.class = Class::Conflict;
    let report = reject_report(&patch, report);
    let mut text = Vec::new();
    for fr in &report.files {
        text.extend_from_slice(&crate::patches::engine::render_rejects(
            &patch.files[fr.index],
            fr,
            stack.options.strip,
        ));
    }
    let saved = dir.join("rejects").join(format!("{name}.rej"));
    write_atomic(&saved, &text)?;
    result.note = conflict_note(&report);
    if state.keep_going {
        result.rejects.push(saved.to_string_lossy().into_owned());
    } else {
        let forced = stack.push_forced(name, &patch)?;
        result.rejects = forced
            .rejects
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
    }
    Ok(result)
}

/// The note of a conflicting patch: per file that did not apply, its path
/// and GNU patch's words (`Hunk #2 FAILED at 120.`, `can't find file to
/// patch at input line 14`, `Reversed (or previously applied) patch
/// detected!  Skipping patch.`, `1 out of 1 hunk ignored`), `; ` between files.
pub fn conflict_note(report: &crate::patches::engine::ApplyReport) -> String {
    report
        .files
        .iter()
        .filter(|f| !f.succeeded())
        .map(|f| {
            let text = f.render();
            let words: Vec<&str> = text
                .lines()
                .filter(|l| !l.starts_with("patching ") && !l.starts_with("Perhaps "))
                .collect();
            format!("{}: {}", f.path.display(), words.join(" "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}
