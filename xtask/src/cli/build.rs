//! The kernel build's flags, which `build`, `lab`, `experiment`,
//! `bench` and `patches size-bisect` share ([`BuildArgs`], [`MakeArgs`]).

use std::path::PathBuf;

use xtask::kernel_build;
use xtask::util::lock::Wait;

/// The kernel builds' flags, which `build` and `lab` share.
#[derive(Debug, clap::Args)]
pub struct MakeArgs {
    /// Parallel compile jobs for the whole run: jobs build side by side, their
    /// makes sharing one jobserver of N slots; default: number of CPUs.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: Option<usize>,
    /// Kernel source: a tarball or an unpacked tree (never modified).
    /// Default: Debian's /usr/src/linux-source-<kver>.tar.xz for each target.
    #[arg(long, value_name = "PATH")]
    pub kernel_src: Option<PathBuf>,
    /// Stream make's output instead of a progress line.
    #[arg(long, short = 'v')]
    pub verbose: bool,
}

impl MakeArgs {
    /// `cargo xtask build`'s options with these flags' `-j` and `-v`.
    pub fn build_options(&self) -> kernel_build::BuildOptions {
        kernel_build::BuildOptions {
            verbose: self.verbose,
            ..kernel_build::BuildOptions::with_jobs(self.jobs.unwrap_or_else(default_jobs))
        }
    }
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
    #[command(flatten)]
    pub make: MakeArgs,
    /// Build every job, even those whose result.json already has the
    /// job's build key ("up to date").
    #[arg(long)]
    pub force: bool,
    /// Print the plan (each job, its build key, whether it is up to date)
    /// and build nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Fail at once, naming the pid, when another run is building the same
    /// target and variant (default: wait for it).
    #[arg(long)]
    pub no_wait: bool,
    /// Compile without ccache (default: through ccache, cached in
    /// target/xtask/ccache/; the bytes are the same either way).
    #[arg(long)]
    pub no_ccache: bool,
    /// Largest size of the ccache cache (ccache's units: 500M, 5G, 2Gi).
    #[arg(long, value_name = "SIZE", default_value = kernel_build::ccache::DEFAULT_SIZE, value_parser = kernel_build::ccache::parse_size)]
    pub ccache_size: u64,
    /// Compile on distcc hosts (DISTCC_HOSTS syntax, plain mode, no local
    /// fallback), e.g. "10.0.0.2/8 10.0.0.3/8"; raise -j to the remote slots.
    #[arg(long, value_name = "HOSTS", value_parser = kernel_build::distcc::parse_hosts)]
    pub distcc: Option<kernel_build::distcc::Distcc>,
    /// OpenWrt mode: configure, patch and flag each target as this OpenWrt
    /// checkout does (its config-<kver> files, its patch series classified
    /// on the source's point release, its KCFLAGS); builds and results go
    /// to target/xtask/openwrt/ (see `size-report --openwrt`).
    #[arg(long, value_name = "PATH")]
    pub openwrt: Option<PathBuf>,
}

impl BuildArgs {
    /// The library's request.
    pub fn request(self) -> kernel_build::command::BuildRequest {
        kernel_build::command::BuildRequest {
            targets: self.targets,
            variants: self.variants,
            jobs: self.make.jobs.unwrap_or_else(default_jobs),
            kernel_src: self.make.kernel_src,
            verbose: self.make.verbose,
            rebuild: if self.force {
                kernel_build::Rebuild::Always
            } else {
                kernel_build::Rebuild::IfChanged
            },
            wait: wait(self.no_wait),
            mode: if self.dry_run {
                kernel_build::command::BuildMode::DryRun
            } else {
                kernel_build::command::BuildMode::Build
            },
            ccache: if self.no_ccache {
                kernel_build::ccache::Ccache::Off
            } else {
                kernel_build::ccache::Ccache::On {
                    max_bytes: self.ccache_size,
                }
            },
            distcc: self.distcc.unwrap_or_default(),
            openwrt: self.openwrt,
        }
    }
}

/// `--no-wait` as the library's [`Wait`].
pub fn wait(no_wait: bool) -> Wait {
    if no_wait {
        Wait::No
    } else {
        Wait::Yes
    }
}

/// `-j` default: the number of CPUs.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
