//! `cargo xtask patches …`: the series stack, refresh, rebase, import/export
//! and the push benchmark.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use xshell::Shell;

use super::stack::{work_tree, Refreshed, Stack};
use crate::inputs::targets::{self, Target};
use crate::patches::engine::ApplyOptions;
use crate::patches::openwrt_sync::{self, SyncDirection, SyncOptions};
use crate::patches::rebase::{self, Action, RebaseOptions};
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

/// Which series and tree a stack command works on.
#[derive(Debug, Clone, Default)]
pub struct SeriesOptions {
    /// Target (its `patches-<kver>` follow the generic ones); `None`: generic only.
    pub target: Option<String>,
    /// Kernel series; `None`: the target's, else 6.12.
    pub kver: Option<String>,
    /// The tree to work on (modified; state in `DIR/.xtask-pc`); `None`:
    /// `target/xtask/work/<target|generic>-<kver>/linux`, copied from the source.
    pub tree: Option<PathBuf>,
    /// Kernel source for the default work tree (tarball or tree, never modified).
    pub kernel_src: Option<PathBuf>,
    /// Maximum fuzz when pushing (GNU patch's default: 2).
    pub fuzz: usize,
    /// The series' directory; `None`: the workspace's `patches/`.
    pub patches_dir: Option<PathBuf>,
    /// Whether to wait for another command holding the tree's lock.
    pub wait: Wait,
}

/// How far `push` or `pop` goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Until {
    /// One patch.
    Next,
    /// Every patch (`-a`).
    All,
    /// Up to and including this patch (push), or until it is on top (pop):
    /// a path under `patches/` or a unique file name.
    Named(String),
}

/// What `pop` does with files changed since the push or last refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangedFiles {
    /// Refuse to pop (quilt's default).
    Refuse,
    /// Pop anyway, losing the changes (`-f`).
    Discard,
}

/// How `rebase` prints its summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebaseOutput {
    /// A table per patch.
    Table,
    /// JSON.
    Json,
}

/// `patches rebase`: what to rebase and which step to take.
#[derive(Debug, Clone)]
pub struct RebaseRequest {
    /// Old kernel series, e.g. `6.6`.
    pub from: String,
    /// New kernel series, e.g. `6.12`.
    pub to: String,
    /// New kernel source (tarball or tree); `None`: Debian's `linux-source-<to>`.
    pub kernel_src: Option<PathBuf>,
    /// Target whose `patches-<kver>` are rebased after the generic ones.
    pub target: Option<String>,
    /// Maximum fuzz.
    pub fuzz: usize,
    /// Classify every patch without stopping at conflicts.
    pub keep_going: bool,
    /// Table or JSON.
    pub output: RebaseOutput,
    /// Start, continue, skip or abort.
    pub action: Action,
    /// Whether to wait for another rebase of the same series.
    pub wait: Wait,
    /// Bump this OpenWrt checkout's target instead of `patches/`
    /// ([`crate::patches::openwrt_bump`]).
    pub openwrt: Option<PathBuf>,
}

/// `patches import|export`: which checkout, kernel series and targets, and
/// how ([`SyncOptions`]: prune or keep, write or only plan).
#[derive(Debug, Clone)]
pub struct SyncRequest {
    /// The OpenWrt checkout.
    pub openwrt: PathBuf,
    /// Kernel series, e.g. `6.6`.
    pub kernel: String,
    /// Only these targets' `patches-<kver>` (empty: every target in `targets/`).
    pub targets: Vec<String>,
    /// Remove what only the destination has, and write or only plan.
    pub options: SyncOptions,
}

fn one_target(layout: &Layout, name: Option<&str>) -> Result<Option<Target>> {
    let Some(name) = name else { return Ok(None) };
    let all = targets::load_all(&layout.targets_dir())?;
    let mut chosen = targets::select(&all, &[name.to_string()])?;
    if chosen.len() != 1 {
        bail!("--target {name}: names {} targets; give one", chosen.len());
    }
    Ok(Some(chosen.remove(0)))
}

/// The stack `args` name, locked, with an interrupted operation recovered.
fn open_stack(sh: &Shell, layout: &Layout, args: &SeriesOptions) -> Result<(Stack, Lock)> {
    let target = one_target(layout, args.target.as_deref())?;
    let kver = args
        .kver
        .clone()
        .or_else(|| target.as_ref().map(|t| t.kernel.clone()))
        .unwrap_or_else(|| "6.12".to_string());
    crate::inputs::kernel_source::check_series(&kver, "--kver")?;
    let patches_dir = args
        .patches_dir
        .clone()
        .unwrap_or_else(|| layout.patches_dir());
    let dirs = work_tree::directories(&patches_dir, target.as_ref(), &kver);
    let series = work_tree::series_names(&patches_dir, &dirs)?;
    let work = match &args.tree {
        Some(t) => t.clone(),
        None => {
            let w = work_tree::work_tree(layout, &work_tree::label(target.as_ref(), &kver));
            work_tree::ensure_copy(sh, layout, args.kernel_src.as_deref(), &kver, &w)?;
            w
        }
    };
    if !work.is_dir() {
        bail!("--tree {}: no such directory", work.display());
    }
    let stack = Stack::new(
        &work,
        &patches_dir,
        series,
        ApplyOptions {
            strip: 1,
            fuzz: args.fuzz,
        },
    );
    let lock = stack.begin_command(args.wait)?;
    Ok((stack, lock))
}

/// `NAME` as given (a full name under patches/ or a unique file name) → series name.
fn resolve(stack: &Stack, name: &str) -> Result<String> {
    if stack.series.iter().any(|n| n == name) {
        return Ok(name.to_string());
    }
    let hits: Vec<&String> = stack
        .series
        .iter()
        .filter(|n| n.rsplit('/').next() == Some(name))
        .collect();
    match hits.as_slice() {
        [one] => Ok((*one).clone()),
        [] => bail!("{name}: not in the series"),
        _ => bail!("{name}: ambiguous, give the path under patches/"),
    }
}

/// `patches push`: applies patches to the work tree, printing GNU patch's
/// messages for each.
///
/// Errors: a failed push names the patch, file, hunk and line and leaves
/// the tree as it was.
pub fn push(sh: &Shell, layout: &Layout, series: &SeriesOptions, until: Until) -> Result<()> {
    let (stack, _lock) = open_stack(sh, layout, series)?;
    let named = match &until {
        Until::Named(n) => Some(resolve(&stack, n)?),
        Until::Next | Until::All => None,
    };
    if let Some(u) = &named {
        if stack.applied()?.contains(u) {
            println!("{u} is already applied");
            return Ok(());
        }
    }
    let mut pushed = 0;
    loop {
        let Some((name, report)) = stack.push_next()? else {
            if pushed == 0 {
                println!("all patches are applied");
            }
            break;
        };
        pushed += 1;
        println!("Applying patch {name}");
        print!("{}", report.render());
        if report.files.is_empty() {
            println!("Patch {name} appears to be empty; applied");
        }
        for w in report.warnings(&name) {
            eprintln!("{w}");
        }
        let done = match &named {
            Some(u) => *u == name,
            None => until == Until::Next,
        };
        if done {
            break;
        }
    }
    println!(
        "Now at patch {}",
        stack.applied()?.last().map_or("(none)", |s| s)
    );
    Ok(())
}

/// `patches pop`: restores the pre-images of the top patch (or more).
///
/// Errors: a file changed since the push or last refresh (unless
/// [`ChangedFiles::Discard`]), or a named patch that is not applied.
pub fn pop(
    sh: &Shell,
    layout: &Layout,
    series: &SeriesOptions,
    until: Until,
    changed: ChangedFiles,
) -> Result<()> {
    let (stack, _lock) = open_stack(sh, layout, series)?;
    let named = match &until {
        Until::Named(n) => Some(resolve(&stack, n)?),
        Until::Next | Until::All => None,
    };
    if let Some(u) = &named {
        if !stack.applied()?.contains(u) {
            bail!("{u} is not applied");
        }
    }
    let mut popped = 0;
    loop {
        if named.is_some() && stack.applied()?.last() == named.as_ref() {
            break;
        }
        let Some(name) = stack.pop(changed == ChangedFiles::Discard)? else {
            if popped == 0 {
                println!("no patch is applied");
            }
            break;
        };
        popped += 1;
        println!("Removed patch {name}");
        if until == Until::Next {
            break;
        }
    }
    match stack.applied()?.last() {
        Some(top) => println!("Now at patch {top}"),
        None => println!("No patches applied"),
    }
    Ok(())
}

/// `patches status`: the series with `+` applied, `=` top, blank unapplied,
/// `!` applied but no longer in the series.
pub fn status(sh: &Shell, layout: &Layout, series: &SeriesOptions) -> Result<()> {
    let (stack, _lock) = open_stack(sh, layout, series)?;
    let applied = stack.applied()?;
    println!("tree: {}", stack.tree().display());
    for name in &stack.series {
        let mark = match applied.iter().position(|a| a == name) {
            Some(i) if i + 1 == applied.len() => '=',
            Some(_) => '+',
            None => ' ',
        };
        println!("{mark} {name}");
    }
    for name in applied.iter().filter(|a| !stack.series.contains(a)) {
        println!("! {name} (applied, no longer in the series)");
    }
    Ok(())
}

/// `patches refresh`: rewrites an applied patch (default: the top) from the
/// tree in OpenWrt's quilt form.
pub fn refresh(
    sh: &Shell,
    layout: &Layout,
    series: &SeriesOptions,
    name: Option<&str>,
) -> Result<()> {
    let (stack, _lock) = open_stack(sh, layout, series)?;
    let name = name.map(|n| resolve(&stack, n)).transpose()?;
    let (name, how) = stack.refresh(name.as_deref())?;
    match how {
        Refreshed::Rewritten => println!("Refreshed patch {name}"),
        Refreshed::Unchanged => println!("Patch {name} is unchanged"),
    }
    Ok(())
}

/// `patches rebase`: one step of moving the series to a new kernel; prints
/// the classification of every patch.
///
/// Errors when the rebase stops at a conflicting patch (naming it).
pub fn rebase(sh: &Shell, layout: &Layout, request: &RebaseRequest) -> Result<()> {
    if let Some(openwrt) = &request.openwrt {
        let bumped = crate::patches::openwrt_bump::run(
            sh,
            layout,
            &crate::patches::openwrt_bump::BumpRequest {
                openwrt: openwrt.clone(),
                target: request
                    .target
                    .clone()
                    .context("--openwrt needs --target: the OpenWrt target to bump")?,
                from: Some(request.from.clone()),
                to: request.to.clone(),
                kernel_src: request.kernel_src.clone(),
                fuzz: request.fuzz,
                wait: request.wait,
            },
        )?;
        match request.output {
            RebaseOutput::Json => println!("{}", rebase::json(&bumped.state, &bumped.tree)),
            RebaseOutput::Table => {
                println!("generic patches on this source: {}", bumped.generic_summary);
                print!("{}", rebase::table(&bumped.state, &bumped.tree));
                println!("new series: {}", bumped.patches_dir.display());
            }
        }
        return Ok(());
    }
    let opts = RebaseOptions {
        from: request.from.clone(),
        to: request.to.clone(),
        target: one_target(layout, request.target.as_deref())?,
        kernel_src: request.kernel_src.clone(),
        fuzz: request.fuzz,
        keep_going: request.keep_going,
    };
    let outcome = rebase::run_waiting(sh, layout, &opts, request.action, request.wait)?;
    if request.action == Action::Abort {
        println!("rebase aborted; patches/ restored");
        return Ok(());
    }
    match request.output {
        RebaseOutput::Json => println!("{}", rebase::json(&outcome.state, &outcome.tree)),
        RebaseOutput::Table => print!("{}", rebase::table(&outcome.state, &outcome.tree)),
    }
    if let Some(name) = &outcome.state.stopped_at {
        bail!("rebase stopped at conflicting patch {name}");
    }
    Ok(())
}

/// `patches import` / `patches export`: copies the kernel patches between
/// `patches/` and an OpenWrt checkout, printing counts per directory.
pub fn sync(layout: &Layout, args: &SyncRequest, direction: SyncDirection) -> Result<()> {
    let all = targets::load_all(&layout.targets_dir())?;
    let chosen = if args.targets.is_empty() {
        all
    } else {
        targets::select(&all, &args.targets)?
    };
    let done = openwrt_sync::sync(
        &args.openwrt,
        &layout.patches_dir(),
        &chosen,
        &args.kernel,
        direction,
        args.options,
    )
    .with_context(|| format!("{direction:?} with {}", args.openwrt.display()))?;
    print!("{}", openwrt_sync::render(&done, args.options));
    Ok(())
}
