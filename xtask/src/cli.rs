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
    /// Compare variant builds against a base build, target by target, from
    /// the results `build` wrote: artifact sizes, vmlinux sections (as
    /// binutils `size`), optionally bloat-o-meter symbol diffs.
    SizeReport(SizeReportArgs),
    /// QEMU router lab: build each variant's router kernel for the target's
    /// QEMU machine, boot it between two network namespaces and measure
    /// forwarding through its nftables masquerade (Mbit/s both ways, guest
    /// CPU ns per forwarded packet), runs interleaved, with an A/A control.
    Lab(LabArgs),
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

#[derive(Debug, clap::Args)]
pub struct LabArgs {
    /// Target with a [lab] table in targets/<t>.toml (brcm47xx).
    #[arg(long, short = 't', value_name = "TARGET")]
    pub target: String,
    /// Variant from patches/variants.toml. Repeatable; default: baseline.
    /// The first is the base, run twice as an A/A control.
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Measured runs per (variant, direction, GRO setting).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub runs: u32,
    /// Seconds per iperf3 run.
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    pub duration: u32,
    /// GRO settings to measure in the guest.
    #[arg(long, value_enum, default_value_t = xtask::measure::lab::GroChoice::Both)]
    pub gro: xtask::measure::lab::GroChoice,
    /// Leave out the A/A control (the base booted a second time as its own arm).
    #[arg(long)]
    pub no_control: bool,
    /// Only build the lab kernels and the initramfs.
    #[arg(long)]
    pub build_only: bool,
    /// Parallel make jobs (make -jN); default: number of CPUs.
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Kernel source: a tarball or an unpacked tree (never modified).
    #[arg(long, value_name = "PATH")]
    pub kernel_src: Option<PathBuf>,
    /// Stream make's output instead of a progress line.
    #[arg(long, short = 'v')]
    pub verbose: bool,
}

impl LabArgs {
    /// The library's request.
    pub fn request(&self) -> xtask::measure::lab::LabRequest {
        xtask::measure::lab::LabRequest {
            target: self.target.clone(),
            variants: self.variants.clone(),
            runs: self.runs,
            duration_seconds: self.duration,
            gro: self.gro,
            control: !self.no_control,
            build_only: self.build_only,
            build: xtask::build::BuildOptions {
                jobs: self
                    .jobs
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
                verbose: self.verbose,
            },
            kernel_src: self.kernel_src.clone(),
        }
    }
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

#[derive(Debug, clap::Args)]
pub struct SizeReportArgs {
    /// Target: a file name in targets/ (bcm53xx), OpenWrt's target/subtarget
    /// (ramips/mt7621), an alias (ar71xx), or `all`. Repeatable. `all` (the
    /// default) is every target that has a base and a variant result, tiny
    /// profiles included; targets without results are listed on stderr.
    #[arg(long = "target", short = 't', value_name = "TARGET")]
    pub targets: Vec<String>,
    /// The variant everything is compared against.
    #[arg(long, value_name = "NAME", default_value = xtask::variants::BASELINE)]
    pub base: String,
    /// Variant to compare with the base. Repeatable; default: every variant
    /// with results for the target, other than the base.
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Write the report to FILE (atomically) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Add per-target symbol diffs of base vmlinux → variant vmlinux, as the
    /// kernel's scripts/bloat-o-meter prints them (not in SVG).
    #[arg(long)]
    pub symbols: bool,
    /// With --symbols: fold compiler clones (foo.isra.0, foo.constprop.0,
    /// foo.part.0, ...) into their base name; the report says so.
    #[arg(long, requires = "symbols")]
    pub fold_clones: bool,
    /// With --symbols: bloat-o-meter's -c (functions, data, RO data
    /// tables), -d (data only) or -t (functions only); default: one table
    /// of everything.
    #[arg(long, value_enum, value_name = "MODE", requires = "symbols")]
    pub bloat_mode: Option<BloatMode>,
    /// Write percentages with a decimal comma (+1,68%); CSV then uses `;`
    /// between fields.
    #[arg(long)]
    pub decimal_comma: bool,
    /// Compare builds that differ in more than the variant (kernel version
    /// or source, compiler, config, patches); every difference is printed
    /// in the report as a warning.
    #[arg(long)]
    pub allow_mismatch: bool,
}

/// `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// `zImage size: 1840424 → 1871328 (+1.68%)` lines, as posted in PRs.
    Text,
    /// A commit-message / mailing-list body with kernel, compiler and flags.
    Mail,
    /// GitHub Markdown, one table per target.
    Markdown,
    /// Every number, machine-readable.
    Json,
    /// Every number, one row per value.
    Csv,
    /// A bar chart of the percent changes.
    Svg,
}

/// `--bloat-mode` values (bloat-o-meter's flags without the dash).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BloatMode {
    /// `-c`: functions, data and read-only data in separate tables.
    C,
    /// `-d`: data only.
    D,
    /// `-t`: functions only.
    T,
}

impl SizeReportArgs {
    /// The library's request.
    pub fn request(&self) -> xtask::report::Request {
        use xtask::bloat::Mode;
        xtask::report::Request {
            targets: self.targets.clone(),
            base: self.base.clone(),
            variants: self.variants.clone(),
            symbols: self.symbols.then_some(xtask::report::SymbolOptions {
                mode: match self.bloat_mode {
                    None => Mode::All,
                    Some(BloatMode::C) => Mode::Categorized,
                    Some(BloatMode::D) => Mode::Data,
                    Some(BloatMode::T) => Mode::Text,
                },
                fold_clones: self.fold_clones,
            }),
            allow_mismatch: self.allow_mismatch,
        }
    }

    /// The library's format.
    pub fn format(&self) -> xtask::report::Format {
        use xtask::report::Format;
        match self.format {
            ReportFormat::Text => Format::Text,
            ReportFormat::Mail => Format::Mail,
            ReportFormat::Markdown => Format::Markdown,
            ReportFormat::Json => Format::Json,
            ReportFormat::Csv => Format::Csv,
            ReportFormat::Svg => Format::Svg,
        }
    }

    /// The library's style.
    pub fn style(&self) -> xtask::report::Style {
        xtask::report::Style {
            decimal_comma: self.decimal_comma,
        }
    }
}
