//! `cargo xtask lab`'s flags, and the refusals of flags that mean
//! nothing for the chosen lab, machine or topology.

use std::path::PathBuf;

use xtask::lab::request::Field;

/// `--lab host`: this machine's kernel with runtime settings.
pub const LAB_HOST: &str = "host";

/// What `cargo xtask lab` runs, as the library takes it.
pub enum LabMode {
    /// The forwarding lab: a target's router kernels in QEMU or on a real
    /// router over SSH.
    Forwarding(Box<xtask::lab::LabRequest>),
    /// The host lab.
    Host(xtask::lab::host_lab::HostRequest),
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
    /// GRO settings to measure on the router's NICs (forwarding labs, QEMU
    /// or SSH; default both).
    #[arg(long, value_name = "on|off|both")]
    pub gro: Option<xtask::lab::GroChoice>,
    /// Directions to measure through the router (forwarding labs; default
    /// both, LAN → WAN first).
    #[arg(long, value_name = "lan-to-wan|wan-to-lan|both")]
    pub direction: Option<xtask::lab::DirectionChoice>,
    /// Benchmarks of the host lab, comma-separated, run in this order
    /// (default tbench).
    #[arg(long = "bench", value_name = "tbench,iperf3", value_delimiter = ',')]
    pub benches: Vec<xtask::lab::host_lab::BenchName>,
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
    /// QEMU lab: boot the guest with this NIC model instead of the target's
    /// [lab] nic, one of its [lab] other_nics (e.g. `--nic pcnet` on the
    /// Malta labs, whose driver never uses GRO, to compare with e1000).
    #[arg(long, value_name = "MODEL")]
    pub nic: Option<String>,
    /// QEMU lab: the network (default nat-router). `loopback` boots one
    /// guest without NICs and runs tbench inside it, on the variant
    /// kernel's own loopback (--clients N); `mesh` is two routers joined by
    /// batman-adv with bat0 bridged to their LAN ports, plus a reference
    /// arm of the same routers bridged without batman-adv (`mesh-bridged`).
    #[arg(long, value_name = "nat-router|loopback|mesh|mesh-bridged")]
    pub topology: Option<String>,
    #[command(flatten)]
    pub make: super::build::MakeArgs,
    /// The whole-number options, each from its definition.
    #[command(flatten)]
    pub counts: super::lab_options::CountArgs,
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
    /// With --known-answers: check the answers on OpenWrt mode's baseline
    /// lab kernel.
    #[arg(long, value_name = "PATH")]
    pub openwrt: Option<PathBuf>,
    /// QEMU lab: the router's packet steering instead of the target's
    /// [lab] packet_steering: `openwrt` (what OpenWrt does on the router),
    /// `off`, or `rps_cpus=2[,xps_cpus=3][,irq_cpu=0][,threaded_napi=on][,napi_cpu=0]`.
    #[arg(long, value_name = "openwrt|off|rps_cpus=MASK,…", value_parser = xtask::inputs::steering::SteeringSpec::parse_flag)]
    pub packet_steering: Option<xtask::inputs::steering::SteeringSpec>,
    /// Forwarding lab: continue the lab that stopped in DIR (the directory
    /// its error names, holding lab.json) with the same command line: its
    /// runs are kept, the missing ones run. Refused when DIR's target,
    /// arms or settings differ from the command's, or its lab still runs.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
}

impl LabArgs {
    /// The lab options given, each once, in [`xtask::lab::OPTIONS`]'
    /// order.
    fn given(&self) -> Vec<Field> {
        xtask::lab::OPTIONS
            .iter()
            .map(|o| o.field)
            .filter(|&f| match f {
                Field::Gro => self.gro.is_some(),
                Field::Direction => self.direction.is_some(),
                Field::Nic => self.nic.is_some(),
                Field::Topology => self.topology.is_some(),
                Field::CacheModel => self.cache_model,
                Field::Control => self.no_control,
                Field::BuildOnly => self.build_only,
                Field::Openwrt => self.openwrt.is_some(),
                Field::PacketSteering => self.packet_steering.is_some(),
                Field::Resume => self.resume.is_some(),
                Field::LabFile => self.lab_file.is_some(),
                Field::NoFlash => self.no_flash,
                count => self.counts.0.contains_key(&count),
            })
            .collect()
    }

    /// The library's request, refusing options of the other lab.
    pub fn mode(&self) -> anyhow::Result<LabMode> {
        let given = self.given();
        let labs = |f: &Field| f.option().map(|o| o.labs);
        if self.machine == LAB_HOST {
            if let Some(f) = given.iter().find(|f| labs(f).is_some_and(|l| !l.host)) {
                let what = if *f == Field::CacheModel {
                    ": it simulates caches inside QEMU"
                } else {
                    ""
                };
                anyhow::bail!(
                    "{} is for {}{what}; --lab host measures this machine's kernel with runtime settings from lab/runtime.toml",
                    f.flag(),
                    labs(f).map_or("", |l| l.describe())
                );
            }
            // The build's flags, which the host lab has no kernel to build with.
            let not_host = [
                (self.target.is_some(), "--target"),
                (self.make.jobs.is_some(), "--jobs"),
                (self.make.kernel_src.is_some(), "--kernel-src"),
                (self.make.verbose, "--verbose"),
                (self.known_answers, "--known-answers"),
                (self.json.is_some(), "--json"),
            ];
            if let Some((_, flag)) = not_host.iter().find(|(given, ..)| *given) {
                let lab = if flag.starts_with("--known") {
                    "the QEMU lab"
                } else if *flag == "--json" {
                    "--known-answers"
                } else {
                    "the forwarding lab (QEMU or SSH)"
                };
                anyhow::bail!(
                    "{flag} is for {lab}; --lab host measures this machine's kernel with runtime settings from lab/runtime.toml"
                );
            }
            let count = |f: Field| self.counts.get_or_default(f).unwrap_or(1);
            return Ok(LabMode::Host(xtask::lab::host_lab::HostRequest {
                variants: self.variants.clone(),
                runs: count(Field::Runs),
                duration_seconds: count(Field::Duration),
                benches: if self.benches.is_empty() {
                    vec![xtask::lab::host_lab::BenchName::Tbench]
                } else {
                    self.benches.clone()
                },
                tbench_clients: count(Field::Clients),
                control: !self.no_control,
            }));
        }
        if !self.benches.is_empty() {
            anyhow::bail!("--bench is for --lab host (--topology loopback runs tbench)");
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
            let not_there = [
                (self.machine != "qemu", "--lab".to_string()),
                (!self.variants.is_empty(), "--variant".to_string()),
                (self.make.kernel_src.is_some(), "--kernel-src".to_string()),
            ]
            .into_iter()
            .chain(
                given
                    .iter()
                    .map(|f| (labs(f).is_some_and(|l| !l.known_answers), f.flag())),
            );
            if let Some((_, flag)) = not_there.into_iter().find(|(given, _)| *given) {
                anyhow::bail!(
                    "{flag} is not for --known-answers, which boots the target's baseline lab kernel in QEMU under the core model and runs its guest programs (no traffic, no variants): leave it out"
                );
            }
            return Ok(LabMode::KnownAnswers(
                xtask::lab::known_answer::KnownAnswerRequest {
                    target: target.clone(),
                    build: self.make.build_options(),
                    json: self.json.clone(),
                    cpus: self.counts.0.get(&Field::Cpus).copied(),
                    openwrt: self.openwrt.clone(),
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
        let topology = self
            .topology
            .as_deref()
            .map_or(xtask::lab::topology::Name::NatRouter, From::from);
        let mut request = xtask::lab::LabRequest::qemu(target).on_topology(topology);
        for (&field, &value) in &self.counts.0 {
            request.set_count(field, value);
        }
        request.variants = self.variants.clone();
        request.gro = self.gro;
        request.direction = self.direction;
        request.control = !self.no_control;
        request.build_only = self.build_only;
        request.build = self.make.build_options();
        request.kernel_src = self.make.kernel_src.clone();
        request.machine = machine;
        request.cache_model = self.cache_model;
        request.nic = self.nic.clone();
        request.openwrt = self.openwrt.clone();
        request.resume = self.resume.clone();
        request.packet_steering = self
            .packet_steering
            .clone()
            .map(|s| (s, "--packet-steering".to_string()));
        request.check()?;
        Ok(LabMode::Forwarding(Box::new(request)))
    }
}
