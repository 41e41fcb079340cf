//! The command line of `cargo xtask`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

mod bench;
mod build;
mod experiment;
mod lab;
mod lab_options;
mod patches;
pub use bench::BenchCommand;
pub use build::BuildArgs;
pub use experiment::ExperimentArgs;
#[allow(unused_imports)] // the binary does not name it; tests/it/docs.rs does
pub use lab::LAB_HOST;
pub use lab::{LabArgs, LabMode};
pub use patches::{changed_files, until, PatchesCommand};
use xtask::measure::bloat;
use xtask::report;
use xtask::util::layout::Layout;

/// Workbench for OpenWrt kernel developers: build router kernels per
/// compiler-flag or patch variant and compare what they do to the images.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Parses the process's arguments, exiting with clap's message on an error.
pub fn parse() -> Cli {
    Cli::parse()
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
    Patches(PatchesCommand),
    /// Install (as root) or print the Debian packages the targets need.
    Setup(SetupArgs),
    /// Kernel configs as OpenWrt assembles them.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Compare variant builds against a base build, target by target, from
    /// the results `build` wrote: artifact sizes, vmlinux sections (as
    /// binutils `size`), optionally bloat-o-meter symbol diffs; and the
    /// runtime lab's newest run per target: Mbit/s and ns/packet per
    /// direction and GRO setting, with their statistics.
    SizeReport(SizeReportArgs),
    /// Results as files for CI fan-out: export one job's results as a tar,
    /// merge tars from many jobs into target/xtask/results/.
    #[command(subcommand)]
    Results(ResultsCommand),
    /// QEMU router lab: build each variant's router kernel for the target's
    /// QEMU machine, boot it between two network namespaces and measure
    /// forwarding through its nftables masquerade (Mbit/s both ways, guest
    /// CPU ns per forwarded packet), runs interleaved, with an A/A control.
    /// With --lab host: this machine's kernel instead, with runtime
    /// settings from lab/runtime.toml applied in a private namespace,
    /// measured with tbench (MB/s) and iperf3 (Mbit/s) over its loopback.
    Lab(Box<LabArgs>),
    /// Benchmarks: the build pipeline (`bench build`: overhead against raw
    /// make, ccache, patch-only variants, distcc), the runtime lab (`bench
    /// lab`: boot to ready, per-run overhead), the lab verdict's calibration
    /// (`bench verdicts`: A/A false positives and power), the patch engine
    /// and the symbol diff against bloat-o-meter (`bench symbols`).
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Run an experiment file (experiments/<name>.toml: targets, variants,
    /// mode, lab, report): prints the plan, builds every target side by
    /// side within -j, runs each lab, writes the report. Run again after a
    /// crash to resume: finished builds are up to date, finished lab runs
    /// kept.
    Experiment(ExperimentArgs),
    /// Run the test suite as CI does: build the tiny ARM profile for
    /// baseline and no-reorder-blocks from real kernel source, then
    /// `cargo nextest run --workspace` with the slow tests.
    Test {
        /// Parallel make jobs for the end-to-end build; default: number of CPUs.
        #[arg(long, short = 'j', value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        jobs: Option<usize>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ResultsCommand {
    /// Write target/xtask/results/<target>/<variant>/ (result.json,
    /// artifacts, build.log) of every target × variant as one tar.
    Export {
        /// Target directory name in target/xtask/results/. Repeatable.
        #[arg(long = "target", short = 't', required = true, value_name = "TARGET")]
        targets: Vec<String>,
        /// Variant. Repeatable; default: baseline.
        #[arg(long = "variant", value_name = "NAME", default_value = "baseline")]
        variants: Vec<String>,
        /// The tar to write.
        #[arg(long, short = 'o', value_name = "FILE")]
        output: PathBuf,
    },
    /// Unpack tars made by `results export` into target/xtask/results/,
    /// refusing unreadable results, paths that escape, and results of one
    /// target built from different inputs (nothing is written then).
    Merge {
        /// The tars.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
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

/// The `config` subcommands.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the kernel config OpenWrt merges for a target before
    /// `make olddefconfig` (generic, target, subtarget config-<kver>, as
    /// scripts/kconfig.pl prints it); the files merged go to stderr.
    Show(ConfigShowArgs),
}

/// `config show`.
#[derive(Debug, Clone, clap::Args)]
pub struct ConfigShowArgs {
    /// The OpenWrt checkout.
    #[arg(long, value_name = "PATH")]
    pub openwrt: PathBuf,
    /// A target from targets/ (mapped through its `openwrt = "…"`), or any
    /// OpenWrt target/subtarget of the checkout (ramips/mt7620).
    #[arg(long, short = 't', value_name = "TARGET")]
    pub target: String,
    /// Kernel series; default: the target file's `kernel` when OpenWrt has
    /// it for the target, else the target's KERNEL_PATCHVER.
    #[arg(long, value_name = "KVER")]
    pub kernel: Option<String>,
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

impl SetupArgs {
    /// The library's request.
    pub fn request(self) -> xtask::host::setup::SetupRequest {
        xtask::host::setup::SetupRequest {
            targets: self.targets,
            tests: self.tests,
            print_only: self.print_only,
        }
    }
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
    #[arg(long, value_name = "NAME", default_value = xtask::inputs::variants::BASELINE)]
    pub base: String,
    /// Variant to compare with the base. Repeatable; default: every variant
    /// with results for the target, other than the base.
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Output format: text, mail, markdown, json, csv or svg.
    #[arg(long, default_value = "text", value_name = "FORMAT")]
    pub format: report::Format,
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
    #[arg(long, value_name = "MODE", requires = "symbols")]
    pub bloat_mode: Option<bloat::BloatMode>,
    /// vmlinux's bytes by object file, by directory, by directory cut
    /// to N levels (dir:2: drivers/net/ holds drivers/net/ethernet/…), or
    /// by the kconfig symbol whose kbuild line builds the object (the
    /// innermost: obj-$(CONFIG_X) += dir/ then obj-$(CONFIG_Y) += foo.o in
    /// dir/ counts foo.o under CONFIG_Y; (always), (unknown)), base →
    /// variant, largest change first, from the link map each build
    /// recorded (attribution.json); each side's rows add up to `size`'s
    /// text, data and bss (not in SVG).
    #[arg(long, value_name = "file|dir|dir:N|kconfig", value_parser = xtask::report::attribution::parse_grouping)]
    pub by: Option<xtask::measure::linkmap::Grouping>,
    /// Device fit (OpenWrt mode): every device of the target whose name
    /// matches PATTERN (a glob with `*`/`?`, else a substring; `*` for all)
    /// with its kernel image base → variant, its KERNEL_SIZE or IMAGE_SIZE
    /// (else its device tree's firmware partition), headroom, and fits →
    /// does not fit, from device-fit.json.
    #[arg(long, value_name = "PATTERN")]
    pub devices: Option<String>,
    /// With --devices: size each device's whole images (sysupgrade.bin,
    /// factory.bin: every image whose recipe has a check-size) with this
    /// rootfs, as the recipe makes them up to check-size, against
    /// IMAGE_SIZE. FILE: a root.squashfs, or an OpenWrt sysupgrade image
    /// (uImage + squashfs, TRX, sysupgrade tar) the squashfs is split from;
    /// its architecture must be the target's.
    #[arg(long, value_name = "FILE", requires = "devices")]
    pub rootfs: Option<PathBuf>,
    /// Write percentages with a decimal comma (+1,68%); CSV then uses `;`
    /// between fields.
    #[arg(long)]
    pub decimal_comma: bool,
    /// Compare builds that differ in more than the variant (kernel version
    /// or source, compiler, config, patches); every difference is printed
    /// in the report as a warning.
    #[arg(long)]
    pub allow_mismatch: bool,
    /// Show this runtime lab run (a directory of target/xtask/lab/<target>/
    /// holding lab.json, or the file) instead of the newest complete one of
    /// each target. Repeatable.
    #[arg(long = "lab-run", value_name = "DIR", conflicts_with = "no_lab")]
    pub lab_runs: Vec<PathBuf>,
    /// With two --lab-run: the two runs cell by cell (variant, direction,
    /// GRO setting), each run's %change in its answer metric (modelled
    /// packets/s, else measured Mbit/s) with its interval, and whether
    /// they agree, have opposite signs, or one or neither is established;
    /// then the counts. After the report (text, mail, markdown, json).
    #[arg(long, requires = "lab_runs")]
    pub agreement: bool,
    /// Sizes only: leave out the runtime lab's throughput and ns/packet.
    #[arg(long)]
    pub no_lab: bool,
    /// Report the builds of `build --openwrt` (kept in target/xtask/openwrt/,
    /// apart from the default mode's).
    #[arg(long)]
    pub openwrt: bool,
}

impl SizeReportArgs {
    /// The workspace layout whose results are reported: OpenWrt mode's
    /// with `--openwrt`.
    pub fn layout(&self, layout: &Layout) -> Layout {
        if self.openwrt {
            layout.openwrt_mode()
        } else {
            layout.clone()
        }
    }

    /// The library's request, with `--rootfs` read.
    ///
    /// Errors: the rootfs cannot be read (naming the file).
    pub fn request(&self) -> anyhow::Result<xtask::report::ReportRequest> {
        Ok(xtask::report::ReportRequest {
            targets: self.targets.clone(),
            base: self.base.clone(),
            variants: self.variants.clone(),
            symbols: self.symbols.then_some(xtask::report::SymbolOptions {
                mode: self.bloat_mode.unwrap_or_default(),
                fold_clones: self.fold_clones,
            }),
            by: self.by,
            devices: self.devices.clone(),
            rootfs: self
                .rootfs
                .as_deref()
                .map(xtask::experiment::rootfs::rootfs_summary)
                .transpose()?,
            allow_mismatch: self.allow_mismatch,
            agreement: self.agreement,
            lab: if self.no_lab {
                xtask::report::LabRuns::Off
            } else if self.lab_runs.is_empty() {
                xtask::report::LabRuns::Newest
            } else {
                xtask::report::LabRuns::Dirs(self.lab_runs.clone())
            },
        })
    }

    /// The library's style.
    pub fn style(&self) -> xtask::report::Style {
        xtask::report::Style {
            decimal_comma: self.decimal_comma,
        }
    }
}
