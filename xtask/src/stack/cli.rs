//! `cargo xtask patches …`: the series stack, refresh, rebase, import/export
//! and the push benchmark.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use xshell::Shell;

use super::{tree, Refreshed, Stack};
use crate::openwrt_tree::{self, Direction};
use crate::patch::ApplyOptions;
use crate::paths::Layout;
use crate::rebase::{self, Action, RebaseOptions};
use crate::targets::{self, Target};

/// The `patches` subcommands.
#[derive(Debug, Subcommand)]
pub enum PatchesCommand {
    /// Apply the next patch (or all, or up to NAME) to the working tree.
    Push {
        #[command(flatten)]
        series: SeriesArgs,
        /// Push every patch.
        #[arg(long, short = 'a')]
        all: bool,
        /// Push up to and including this patch (path under patches/ or file name).
        name: Option<String>,
    },
    /// Remove the top patch (or all, or down to NAME, which stays applied).
    Pop {
        #[command(flatten)]
        series: SeriesArgs,
        /// Pop every patch.
        #[arg(long, short = 'a')]
        all: bool,
        /// Pop even when files changed since the push or last refresh.
        #[arg(long, short = 'f')]
        force: bool,
        /// Pop until this patch is on top.
        name: Option<String>,
    },
    /// List the series: `+` applied, `=` top, blank unapplied.
    Status {
        #[command(flatten)]
        series: SeriesArgs,
    },
    /// Regenerate an applied patch (default: the top) from the tree in OpenWrt's quilt form.
    Refresh {
        #[command(flatten)]
        series: SeriesArgs,
        /// The patch to refresh.
        name: Option<String>,
    },
    /// Move the series from one kernel version to another, classifying every patch.
    Rebase(RebaseArgs),
    /// Copy an OpenWrt checkout's kernel patches into patches/.
    Import(SyncArgs),
    /// Copy patches/ back into an OpenWrt checkout.
    Export(SyncArgs),
    /// Time pushing a generated series of real-sized patches with this engine,
    /// a GNU patch loop and quilt push -a on identical copies of a kernel tree.
    Bench(super::bench::BenchArgs),
}

/// Which series and tree.
#[derive(Debug, Clone, clap::Args)]
pub struct SeriesArgs {
    /// Target (its patches-<kver> follow the generic ones); default: generic only.
    #[arg(long, short = 't')]
    pub target: Option<String>,
    /// Kernel series; default: the target's, else 6.12.
    #[arg(long)]
    pub kver: Option<String>,
    /// Work on this tree (it is modified; state in DIR/.xtask-pc). Default:
    /// target/xtask/work/<target|generic>-<kver>/linux, copied from the kernel source.
    #[arg(long, value_name = "DIR")]
    pub tree: Option<PathBuf>,
    /// Kernel source for the default working tree (tarball or tree, never modified).
    #[arg(long, value_name = "PATH")]
    pub kernel_src: Option<PathBuf>,
    /// Maximum fuzz when pushing (GNU patch's default: 2).
    #[arg(long, default_value_t = 2)]
    pub fuzz: usize,
}

/// `patches rebase`.
#[derive(Debug, Clone, clap::Args)]
pub struct RebaseArgs {
    /// Old kernel series, e.g. 6.6.
    #[arg(long)]
    pub from: String,
    /// New kernel series, e.g. 6.12.
    #[arg(long)]
    pub to: String,
    /// New kernel source (tarball or tree); default Debian's linux-source-<to>.
    #[arg(long, value_name = "PATH")]
    pub kernel_src: Option<PathBuf>,
    /// Target whose patches-<kver> are rebased after the generic ones.
    #[arg(long, short = 't')]
    pub target: Option<String>,
    /// Maximum fuzz.
    #[arg(long, default_value_t = 2)]
    pub fuzz: usize,
    /// Classify every patch without stopping at conflicts.
    #[arg(long)]
    pub keep_going: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Refresh the fixed conflicting patch and go on.
    #[arg(long = "continue", conflicts_with_all = ["skip", "abort"])]
    pub continue_: bool,
    /// Drop the conflicting patch and go on.
    #[arg(long, conflicts_with = "abort")]
    pub skip: bool,
    /// Restore patches/ to the state before the rebase.
    #[arg(long)]
    pub abort: bool,
}

/// `patches import|export`.
#[derive(Debug, Clone, clap::Args)]
pub struct SyncArgs {
    /// The OpenWrt checkout.
    #[arg(long, value_name = "PATH")]
    pub openwrt: PathBuf,
    /// Kernel series, e.g. 6.6.
    #[arg(long)]
    pub kernel: String,
    /// Only these targets' patches-<kver> (default: every target in targets/). Repeatable.
    #[arg(long = "target", short = 't')]
    pub targets: Vec<String>,
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

fn open_stack(sh: &Shell, layout: &Layout, args: &SeriesArgs) -> Result<Stack> {
    let target = one_target(layout, args.target.as_deref())?;
    let kver = args
        .kver
        .clone()
        .or_else(|| target.as_ref().map(|t| t.kernel.clone()))
        .unwrap_or_else(|| "6.12".to_string());
    let patches_dir = layout.patches_dir();
    let dirs = tree::directories(&patches_dir, target.as_ref(), &kver);
    let series = tree::series_names(&patches_dir, &dirs)?;
    let work = match &args.tree {
        Some(t) => t.clone(),
        None => {
            let w = tree::work_tree(layout, &tree::label(target.as_ref(), &kver));
            tree::ensure_copy(sh, layout, args.kernel_src.as_deref(), &kver, &w)?;
            w
        }
    };
    if !work.is_dir() {
        bail!("--tree {}: no such directory", work.display());
    }
    Ok(Stack::new(
        &work,
        &patches_dir,
        series,
        ApplyOptions {
            strip: 1,
            fuzz: args.fuzz,
        },
    ))
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

/// Runs one `patches` subcommand.
///
/// Errors: whatever the step reports (a failed push names the patch, file,
/// hunk and line and leaves the tree as it was).
pub fn run(sh: &Shell, layout: &Layout, command: PatchesCommand) -> Result<()> {
    match command {
        PatchesCommand::Push { series, all, name } => {
            let stack = open_stack(sh, layout, &series)?;
            let until = name.map(|n| resolve(&stack, &n)).transpose()?;
            if let Some(u) = &until {
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
                if !all && until.as_ref().is_none_or(|u| *u == name) {
                    break;
                }
            }
            println!(
                "Now at patch {}",
                stack.applied()?.last().map_or("(none)", |s| s)
            );
        }
        PatchesCommand::Pop {
            series,
            all,
            force,
            name,
        } => {
            let stack = open_stack(sh, layout, &series)?;
            let until = name.map(|n| resolve(&stack, &n)).transpose()?;
            if let Some(u) = &until {
                if !stack.applied()?.contains(u) {
                    bail!("{u} is not applied");
                }
            }
            let mut popped = 0;
            loop {
                if until.is_some() && stack.applied()?.last() == until.as_ref() {
                    break;
                }
                let Some(name) = stack.pop(force)? else {
                    if popped == 0 {
                        println!("no patch is applied");
                    }
                    break;
                };
                popped += 1;
                println!("Removed patch {name}");
                if !all && until.is_none() {
                    break;
                }
            }
            match stack.applied()?.last() {
                Some(top) => println!("Now at patch {top}"),
                None => println!("No patches applied"),
            }
        }
        PatchesCommand::Status { series } => {
            let stack = open_stack(sh, layout, &series)?;
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
        }
        PatchesCommand::Refresh { series, name } => {
            let stack = open_stack(sh, layout, &series)?;
            let name = name.map(|n| resolve(&stack, &n)).transpose()?;
            let (name, how) = stack.refresh(name.as_deref())?;
            match how {
                Refreshed::Rewritten => println!("Refreshed patch {name}"),
                Refreshed::Unchanged => println!("Patch {name} is unchanged"),
            }
        }
        PatchesCommand::Rebase(args) => {
            let opts = RebaseOptions {
                from: args.from.clone(),
                to: args.to.clone(),
                target: one_target(layout, args.target.as_deref())?,
                kernel_src: args.kernel_src.clone(),
                fuzz: args.fuzz,
                keep_going: args.keep_going,
            };
            let action = if args.continue_ {
                Action::Continue
            } else if args.skip {
                Action::Skip
            } else if args.abort {
                Action::Abort
            } else {
                Action::Start
            };
            let outcome = rebase::run(sh, layout, &opts, action)?;
            if action == Action::Abort {
                println!("rebase aborted; patches/ restored");
                return Ok(());
            }
            if args.json {
                println!("{}", rebase::json(&outcome.state, &outcome.tree));
            } else {
                print!("{}", rebase::table(&outcome.state, &outcome.tree));
            }
            if let Some(name) = &outcome.state.stopped_at {
                bail!("rebase stopped at conflicting patch {name}");
            }
        }
        PatchesCommand::Import(args) => sync(layout, &args, Direction::Import)?,
        PatchesCommand::Export(args) => sync(layout, &args, Direction::Export)?,
        PatchesCommand::Bench(args) => super::bench::run(sh, layout, &args)?,
    }
    Ok(())
}

fn sync(layout: &Layout, args: &SyncArgs, direction: Direction) -> Result<()> {
    let all = targets::load_all(&layout.targets_dir())?;
    let chosen = if args.targets.is_empty() {
        all
    } else {
        targets::select(&all, &args.targets)?
    };
    let done = openwrt_tree::sync(
        &args.openwrt,
        &layout.patches_dir(),
        &chosen,
        &args.kernel,
        direction,
    )
    .with_context(|| format!("{direction:?} with {}", args.openwrt.display()))?;
    for d in done {
        println!(
            "{}: {} added, {} changed, {} removed, {} unchanged",
            d.dir.display(),
            d.added,
            d.changed,
            d.removed,
            d.unchanged
        );
    }
    Ok(())
}
