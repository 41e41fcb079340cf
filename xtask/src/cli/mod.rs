//! The command line of `cargo xtask`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

mod bench;
mod patches;
pub use bench::BenchCommand;
pub use patches::{changed_files, until, PatchesCommand};
use xtask::build;
use xtask::measure::bloat;
use xtask::report;
use xtask::util::layout::Layout;
use xtask::util::lock::Wait;

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
    Lab(LabArgs),
    /// Benchmarks: the build pipeline (`bench build`: overhead against raw
    /// make, ccache, patch-only variants, distcc), the runtime lab (`bench
    /// lab`: boot to ready, per-run overhead), the lab verdict's calibration
    /// (`bench verdicts`: A/A false positives and power) and the patch
    /// engine.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Run the test suite as CI does: build the tiny ARM profile for
    /// baseline and no-reorder-blocks from real kernel source, then
    /// `cargo test --workspace`.
    Test {
        /// Parallel make jobs for the end-to-end build; default: number of CPUs.
        #[arg(long, short = 'j', value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
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
    #[arg(long, value_name = "SIZE", default_value = build::ccache::DEFAULT_SIZE, value_parser = build::ccache::parse_size)]
    pub ccache_size: u64,
    /// Compile on distcc hosts (DISTCC_HOSTS syntax, plain mode, no local
    /// fallback), e.g. "10.0.0.2/8 10.0.0.3/8"; raise -j to the remote slots.
    #[arg(long, value_name = "HOSTS", value_parser = build::distcc::parse_hosts)]
    pub distcc: Option<build::distcc::Distcc>,
    /// OpenWrt mode: configure, patch and flag each target as this OpenWrt
    /// checkout does (its config-<kver> files, its patch series classified
    /// on the source's point release, its KCFLAGS); builds and results go
    /// to target/xtask/openwrt/ (see `size-report --openwrt`).
    #[arg(long, value_name = "PATH")]
    pub openwrt: Option<PathBuf>,
}

impl BuildArgs {
    /// The library's request.
    pub fn request(self) -> build::command::BuildRequest {
        build::command::BuildRequest {
            targets: self.targets,
            variants: self.variants,
            jobs: self.jobs.unwrap_or_else(default_jobs),
            kernel_src: self.kernel_src,
            verbose: self.verbose,
            rebuild: if self.force {
                build::Rebuild::Always
            } else {
                build::Rebuild::IfChanged
            },
            wait: wait(self.no_wait),
            mode: if self.dry_run {
                build::command::Mode::DryRun
            } else {
                build::command::Mode::Build
            },
            ccache: if self.no_ccache {
                build::ccache::Ccache::Off
            } else {
                build::ccache::Ccache::On {
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

/// `--lab host`: this machine's kernel with runtime settings.
pub const LAB_HOST: &str = "host";

/// What `cargo xtask lab` runs, as the library takes it.
pub enum LabMode {
    /// The forwarding lab: a target's router kernels in QEMU or on a real
    /// router over SSH (boxed: the request is ten times the host lab's).
    Forwarding(Box<xtask::lab::LabRequest>),
    /// The host lab.
    Host(xtask::lab::host::HostRequest),
    /// The core model's known answers (`--known-answers`).
    KnownAnswers(xtask::lab::known_answer::KnownAnswerRequest),
}

#[derive(Debug, clap::Args)]
pub struct LabArgs {
    /// Target with a [lab] table in targets/<t>.toml (brcm47xx), or the
    /// router's target with --lab ssh; not with --lab host.
    #[arg(long, short = 't', value_name = "TARGET")]
    pub target: Option<String>,
    /// Variant from patches/variants.toml (QEMU lab) or lab/runtime.toml
    /// (host lab). Repeatable; default: baseline. The first is the base,
    /// run twice as an A/A control.
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Measured runs per (variant, direction, GRO setting) or (variant, benchmark).
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Seconds per run (iperf3, tbench), at most an hour.
    #[arg(long, default_value_t = 10, value_name = "SECONDS", value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub duration: u32,
    /// GRO settings to measure in the guest (QEMU lab; default both).
    #[arg(long, value_name = "on|off|both")]
    pub gro: Option<xtask::lab::GroChoice>,
    /// Directions to measure through the router (forwarding labs; default
    /// both, LAN → WAN first).
    #[arg(long, value_name = "lan-to-wan|wan-to-lan|both")]
    pub direction: Option<xtask::lab::DirectionChoice>,
    /// Benchmarks of the host lab, comma-separated, run in this order
    /// (default tbench).
    #[arg(long = "bench", value_name = "tbench,iperf3", value_delimiter = ',')]
    pub benches: Vec<xtask::lab::host::BenchName>,
    /// tbench's clients (host lab; default 2).
    #[arg(long, value_name = "N")]
    pub clients: Option<u32>,
    /// Leave out the A/A control (the base booted a second time as its own arm).
    #[arg(long)]
    pub no_control: bool,
    /// Only build the lab kernels and the initramfs.
    #[arg(long)]
    pub build_only: bool,
    /// QEMU lab: load the L1 cache model (a TCG plugin simulating the
    /// target's [lab.l1] caches) into every boot and add instructions and
    /// L1I/L1D misses per forwarded packet to each run. It slows QEMU
    /// (Mbit/s drops to a few), so normal Mbit/s runs go without it.
    #[arg(long)]
    pub cache_model: bool,
    /// QEMU lab, a target with [lab.timing]: instead of forwarding, boot
    /// the baseline lab kernel under the core model and run its known
    /// answers (branch patterns, a pointer chase), printing expected
    /// against measured; fails when one is off.
    #[arg(long)]
    pub known_answers: bool,
    /// With --known-answers: also write the answers as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Parallel make jobs (make -jN); default: number of CPUs.
    #[arg(long, short = 'j', value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: Option<usize>,
    /// Kernel source: a tarball or an unpacked tree (never modified).
    #[arg(long, value_name = "PATH")]
    pub kernel_src: Option<PathBuf>,
    /// Stream make's output instead of a progress line.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// The machine: `qemu` (the target's [lab] table), a real router
    /// over SSH, `ssh://[USER@]HOST[:PORT]` (user root by default; `ssh`
    /// alone takes the destination from the lab file), or `host`: this
    /// machine's kernel with runtime settings from lab/runtime.toml
    /// (tbench, iperf3 over a private namespace's loopback).
    #[arg(
        long = "lab",
        default_value = "qemu",
        value_name = "qemu|ssh://USER@HOST|host"
    )]
    pub machine: String,
    /// With --lab ssh: the lab file (TOML: the router's interfaces, the
    /// LAN and WAN endpoints on this machine, the image per target; see
    /// docs/lab-ssh.md).
    #[arg(long, value_name = "FILE")]
    pub lab_file: Option<PathBuf>,
    /// With --lab ssh: measure the kernel the router runs now instead of
    /// flashing each variant's image (its /proc/version is still recorded).
    #[arg(long)]
    pub no_flash: bool,
    /// QEMU lab in OpenWrt mode: build each variant's lab kernel as this
    /// OpenWrt checkout builds its target for the QEMU machine (malta,
    /// armsr: config, patch series), with the router target's KCFLAGS and
    /// only what the lab needs added; the guest loads firewall4's ruleset.
    /// Kernels and runs go to target/xtask/openwrt/ (`size-report --openwrt`).
    #[arg(long, value_name = "PATH")]
    pub openwrt: Option<PathBuf>,
}

impl LabArgs {
    /// The library's request, refusing options of the other lab.
    pub fn mode(&self) -> anyhow::Result<LabMode> {
        if self.machine == LAB_HOST {
            if self.cache_model {
                anyhow::bail!(
                    "--cache-model is for the QEMU lab (--target T): it simulates caches inside QEMU; --lab host measures this machine's kernel"
                );
            }
            let qemu_only = [
                (self.target.is_some(), "--target"),
                (self.gro.is_some(), "--gro"),
                (self.direction.is_some(), "--direction"),
                (self.build_only, "--build-only"),
                (self.jobs.is_some(), "--jobs"),
                (self.kernel_src.is_some(), "--kernel-src"),
                (self.verbose, "--verbose"),
                (self.lab_file.is_some(), "--lab-file"),
                (self.no_flash, "--no-flash"),
                (self.openwrt.is_some(), "--openwrt"),
                (self.known_answers, "--known-answers"),
                (self.json.is_some(), "--json"),
            ];
            if let Some((_, flag)) = qemu_only.iter().find(|(given, _)| *given) {
                anyhow::bail!(
                    "{flag} is for the forwarding lab (QEMU or SSH); --lab host measures this machine's kernel with runtime settings from lab/runtime.toml"
                );
            }
            return Ok(LabMode::Host(xtask::lab::host::HostRequest {
                variants: self.variants.clone(),
                runs: self.runs,
                duration_seconds: self.duration,
                benches: if self.benches.is_empty() {
                    vec![xtask::lab::host::BenchName::Tbench]
                } else {
                    self.benches.clone()
                },
                tbench_clients: self.clients.unwrap_or(2),
                control: !self.no_control,
            }));
        }
        if !self.benches.is_empty() || self.clients.is_some() {
            anyhow::bail!("--bench and --clients are for --lab host");
        }
        let Some(target) = &self.target else {
            anyhow::bail!(
                "the forwarding lab needs --target (a target with a [lab] table, e.g. brcm47xx, or the router's); --lab host measures this machine's kernel instead"
            );
        };
        if self.json.is_some() && !self.known_answers {
            anyhow::bail!("--json is for --known-answers (a forwarding lab writes lab.json)");
        }
        if self.known_answers {
            if self.machine != "qemu" || !self.variants.is_empty() || self.build_only {
                anyhow::bail!(
                    "--known-answers boots the target's baseline lab kernel in QEMU under the core model: leave out --lab, --variant and --build-only"
                );
            }
            return Ok(LabMode::KnownAnswers(
                xtask::lab::known_answer::KnownAnswerRequest {
                    target: target.clone(),
                    build: xtask::build::BuildOptions {
                        verbose: self.verbose,
                        ..xtask::build::BuildOptions::with_jobs(
                            self.jobs.unwrap_or_else(default_jobs),
                        )
                    },
                    json: self.json.clone(),
                },
            ));
        }
        let flash = if self.no_flash {
            xtask::lab::Flash::NotFlashed
        } else {
            xtask::lab::Flash::Sysupgrade
        };
        let machine =
            xtask::lab::Machine::from_args(&self.machine, self.lab_file.as_deref(), flash)?;
        Ok(LabMode::Forwarding(Box::new(xtask::lab::LabRequest {
            target: target.clone(),
            variants: self.variants.clone(),
            runs: self.runs,
            duration_seconds: self.duration,
            gro: self.gro.unwrap_or(xtask::lab::GroChoice::Both),
            direction: self.direction.unwrap_or(xtask::lab::DirectionChoice::Both),
            control: !self.no_control,
            build_only: self.build_only,
            build: xtask::build::BuildOptions {
                verbose: self.verbose,
                ..xtask::build::BuildOptions::with_jobs(self.jobs.unwrap_or_else(default_jobs))
            },
            kernel_src: self.kernel_src.clone(),
            machine,
            cache_model: self.cache_model,
            openwrt: self.openwrt.clone(),
        })))
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
    pub bloat_mode: Option<bloat::Mode>,
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

    /// The library's request.
    pub fn request(&self) -> xtask::report::Request {
        xtask::report::Request {
            targets: self.targets.clone(),
            base: self.base.clone(),
            variants: self.variants.clone(),
            symbols: self.symbols.then_some(xtask::report::SymbolOptions {
                mode: self.bloat_mode.unwrap_or_default(),
                fold_clones: self.fold_clones,
            }),
            allow_mismatch: self.allow_mismatch,
            lab: if self.no_lab {
                xtask::report::LabRuns::Off
            } else if self.lab_runs.is_empty() {
                xtask::report::LabRuns::Newest
            } else {
                xtask::report::LabRuns::Dirs(self.lab_runs.clone())
            },
        }
    }

    /// The library's style.
    pub fn style(&self) -> xtask::report::Style {
        xtask::report::Style {
            decimal_comma: self.decimal_comma,
        }
    }
}
