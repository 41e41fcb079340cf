//! The `patches` subcommands' command line: clap types that hand
//! `xtask::patches::commands` its plain options.

use std::path::PathBuf;

use clap::Subcommand;
use xtask::kernel_build::size_bisect::BisectRequest;
use xtask::patches::commands::{
    ChangedFiles, RebaseOutput, RebaseRequest, SeriesOptions, SyncRequest, Until,
};
use xtask::patches::openwrt_sync::{Prune, SyncOptions, Write};
use xtask::patches::rebase::Action;

use super::build::wait;

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
    /// Find which patches of a range grow the image most: build the range's
    /// states (its first k patches) as patch-only incremental builds, halving
    /// the step with the largest change while --builds lasts.
    SizeBisect(SizeBisectArgs),
}

/// `patches size-bisect`.
#[derive(Debug, clap::Args)]
pub struct SizeBisectArgs {
    /// The target, the base variant (default: baseline; without --series its
    /// own patches are the range) and how to build. One --target.
    #[command(flatten)]
    pub build: super::build::BuildArgs,
    /// Bisect this directory's patches (its quilt `series` file, else every
    /// *.patch in name order), applied after the variant's.
    #[arg(long, value_name = "DIR")]
    pub series: Option<PathBuf>,
    /// At most this many states built or read, both ends included.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..))]
    pub builds: usize,
    /// The artifact whose size is bisected (default: zImage, else
    /// vmlinux.lzma, else the target's first artifact).
    #[arg(long, value_name = "NAME")]
    pub image: Option<String>,
}

impl SizeBisectArgs {
    /// The library's request.
    pub fn request(self) -> BisectRequest {
        BisectRequest {
            build: self.build.request(),
            series: self.series,
            builds: self.builds,
            image: self.image,
        }
    }
}

/// `push`/`pop` extent from `-a` and NAME.
pub fn until(all: bool, name: Option<String>) -> Until {
    match (name, all) {
        (Some(n), _) => Until::Named(n),
        (None, true) => Until::All,
        (None, false) => Until::Next,
    }
}

/// `pop -f`.
pub fn changed_files(force: bool) -> ChangedFiles {
    if force {
        ChangedFiles::Discard
    } else {
        ChangedFiles::Refuse
    }
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
    /// Take the series from DIR instead of the workspace's patches/.
    #[arg(long, value_name = "DIR")]
    pub patches_dir: Option<PathBuf>,
    /// Fail at once, naming the pid, when another command holds the tree's lock.
    #[arg(long)]
    pub no_wait: bool,
}

impl SeriesArgs {
    /// The library's options.
    pub fn options(self) -> SeriesOptions {
        SeriesOptions {
            target: self.target,
            kver: self.kver,
            tree: self.tree,
            kernel_src: self.kernel_src,
            fuzz: self.fuzz,
            patches_dir: self.patches_dir,
            wait: wait(self.no_wait),
        }
    }
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
    /// Fail at once, naming the pid, when another rebase holds the lock.
    #[arg(long)]
    pub no_wait: bool,
    /// Bump a target of this OpenWrt checkout instead of patches/: copy its
    /// patches-<from> and config-<from> to <to> (as scripts/kernel_bump.sh),
    /// classify the series on the <to> source, refresh or remove each patch
    /// in patches-<to>, set KERNEL_TESTING_PATCHVER. Needs --target; the
    /// checkout is changed.
    #[arg(long, value_name = "PATH", requires = "target", conflicts_with_all = ["continue_", "skip", "abort", "keep_going"])]
    pub openwrt: Option<PathBuf>,
}

impl RebaseArgs {
    /// The library's request.
    pub fn request(self) -> RebaseRequest {
        RebaseRequest {
            from: self.from,
            to: self.to,
            kernel_src: self.kernel_src,
            target: self.target,
            fuzz: self.fuzz,
            keep_going: self.keep_going,
            output: if self.json {
                RebaseOutput::Json
            } else {
                RebaseOutput::Table
            },
            action: if self.continue_ {
                Action::Continue
            } else if self.skip {
                Action::Skip
            } else if self.abort {
                Action::Abort
            } else {
                Action::Start
            },
            wait: wait(self.no_wait),
            openwrt: self.openwrt,
        }
    }
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
    /// Also remove the patches only the destination has (default: keep and list them).
    #[arg(long)]
    pub prune: bool,
    /// Print the plan (add / change / remove / keep per file) and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

impl SyncArgs {
    /// The library's options.
    pub fn options(self) -> SyncRequest {
        SyncRequest {
            openwrt: self.openwrt,
            kernel: self.kernel,
            targets: self.targets,
            options: SyncOptions {
                prune: if self.prune {
                    Prune::Remove
                } else {
                    Prune::Keep
                },
                write: if self.dry_run {
                    Write::DryRun
                } else {
                    Write::Apply
                },
            },
        }
    }
}
