//! The command line of `cargo xtask`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Workbench for OpenWrt kernel developers: build router kernels per
/// compiler-flag or patch variant and compare what they do to the images.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build kernel images for targets × variants into target/xtask/results/<target>/<variant>/.
    Build(BuildArgs),
    /// Manage 201-extra_optimization.patch.
    #[command(subcommand)]
    Flags(FlagsCommand),
    /// List the targets in targets/ and their names on the command line.
    Targets,
    /// Work on the kernel patch series: push, pop, status, refresh (quilt's
    /// form, as OpenWrt writes it), rebase onto a new kernel, import/export.
    #[command(subcommand)]
    Patches(xtask::stack::cli::PatchesCommand),
    /// Install (as root) or print the Debian packages the targets need.
    Setup(SetupArgs),
    /// Run the test suite as CI does: build the tiny ARM profile for
    /// baseline and no-reorder-blocks from real kernel source, then
    /// `cargo test --workspace`.
    Test {
        /// Parallel make jobs for the end-to-end build; default: number of CPUs.
        #[arg(long, short = 'j', value_name = "N")]
        jobs: Option<usize>,
    },
}

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// Target: a file name in targets/ (bcm53xx), OpenWrt's target/subtarget
    /// (ramips/mt7621), an alias (ar71xx), or `all`. Repeatable.
    #[arg(long = "target", short = 't', required = true, value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Variant from patches/variants.toml. Repeatable; default: baseline.
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Parallel make jobs (make -jN); default: number of CPUs.
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Kernel source: a tarball or an unpacked tree (never modified).
    /// Default: Debian's /usr/src/linux-source-<kver>.tar.xz for each target.
    #[arg(long, value_name = "PATH")]
    pub kernel_src: Option<PathBuf>,
    /// Stream make's output instead of a progress line.
    #[arg(long, short = 'v')]
    pub verbose: bool,
}

#[derive(Debug, Subcommand)]
pub enum FlagsCommand {
    /// Rewrite patches/generic/pending-<kver>/201-extra_optimization.patch for
    /// every kernel series with the variant's KBUILD_CFLAGS, generated against
    /// that kernel's real top-level Makefile.
    Set {
        /// Variant name from patches/variants.toml.
        variant: String,
        /// Kernel source (tarball or tree) to take the Makefile from, for the
        /// series it belongs to; other series use Debian's tarball. Repeatable.
        #[arg(long, value_name = "PATH")]
        kernel_src: Vec<PathBuf>,
    },
    /// List the variants and their flags.
    List,
}

#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// Only the packages these targets need (default: every target). Repeatable.
    #[arg(long = "target", short = 't', value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Also the reference tools the tests compare against (GNU patch,
    /// quilt, python3) and linux-source-6.1.
    #[arg(long)]
    pub tests: bool,
    /// Print the apt-get command instead of running it.
    #[arg(long)]
    pub print_only: bool,
}
