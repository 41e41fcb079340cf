//! The QEMU lab as a kind of lab ([`super::orchestrate`]): [`resolve`]
//! reads the target's `[lab]` table, the variants and the topology into a
//! plan; [`QemuBackend`] builds each variant's lab kernel and the guest's
//! initramfs once ([`QemuBackend::prepare`]) and boots an arm's kernel on
//! the topology per session ([`super::session::QemuTestbed`]).

use std::path::Path;

use anyhow::{bail, Context, Result};
use xshell::{cmd, Shell};

use super::backend::{Backend, Prepared, Up};
use super::cache_model::{self, CacheModel};
use super::forwarding::{self, Forwarding};
use super::guest_tbench::GuestTbench;
use super::kernel::{self, LabKernel, Recipe};
use super::orchestrate::LabPlan;
use super::qemu;
use super::request::{LabRequest, WorkloadSpec};
use super::rootfs::{self, Initramfs};
use super::runner;
use super::session::{Image, QemuTestbed};
use super::topology::{self, Ruleset, Topology};
use super::workload::Workload;
use crate::inputs::lab::LabSpec;
use crate::inputs::targets::{self, Target};
use crate::inputs::variants;
use crate::kernel_build::BuildOptions;
use crate::results::lab::ArmKernel;
use crate::results::lab::{Arm, BootRecord, MachineInfo, QemuInfo, Settings};
use crate::util::hash::sha256_file;
use crate::util::layout::Layout;

/// Where the lab kernels come from.
pub enum Kernels {
    /// Built (or found up to date) by the build pipeline in
    /// [`QemuBackend::prepare`].
    Build {
        /// The variants, the base first.
        variants: Vec<variants::Variant>,
        /// Build options for the lab kernels.
        options: BuildOptions,
        /// `--kernel-src`.
        kernel_src: Option<std::path::PathBuf>,
        /// The workbench's profiles, or OpenWrt's (`--openwrt PATH`).
        recipe: Recipe,
    },
    /// Built earlier (`bench lab`).
    Built(Vec<LabKernel>),
}

/// The QEMU machine of a target's `[lab]` table as a [`Backend`].
pub struct QemuBackend<'a> {
    /// Its own shell (in the caller's directory), so that a backend
    /// resolved on one thread runs on another (an experiment's labs side
    /// by side).
    sh: Shell,
    layout: &'a Layout,
    /// Where the lab kernels are built: `layout`, or OpenWrt mode's
    /// ([`Layout::openwrt_mode`]) for [`Recipe::Openwrt`].
    kernels_layout: Layout,
    target: Target,
    spec: LabSpec,
    topology: Topology,
    reference: Option<Topology>,
    kernels: Kernels,
    cache_model: bool,
    model: Option<CacheModel>,
    initramfs: Option<Initramfs>,
}

impl<'a> QemuBackend<'a> {
    /// The backend of `target` (with a `[lab]` table) booting `topology`,
    /// the kernels from `kernels`, with the cache model when
    /// `cache_model` says so.
    pub fn new(
        (sh, layout): (&'a Shell, &'a Layout),
        target: Target,
        topology: Topology,
        kernels: Kernels,
        cache_model: CacheModelChoice,
    ) -> Result<QemuBackend<'a>> {
        let spec = kernel::spec_of(&target)?.clone();
        let own = Shell::new().context("creating a shell")?;
        own.change_dir(sh.current_dir());
        let sh = own;
        let kernels_layout = match &kernels {
            Kernels::Build {
                recipe: Recipe::Openwrt(_),
                ..
            } => layout.openwrt_mode(),
            _ => layout.clone(),
        };
        Ok(QemuBackend {
            sh,
            layout,
            kernels_layout,
            target,
            spec,
            topology,
            reference: None,
            kernels,
            cache_model: cache_model == CacheModelChoice::Load,
            model: None,
            initramfs: None,
        })
    }

    /// The backend booting its guests with NIC model `nic` instead of the
    /// `[lab]` table's (`--nic`; `None` keeps it): see
    /// [`LabSpec::with_nic`], whose error names the models the target's
    /// file allows.
    pub fn with_nic(mut self, nic: Option<&str>) -> Result<QemuBackend<'a>> {
        self.spec = self.spec.with_nic(nic, &self.target.file)?;
        Ok(self)
    }

    /// The backend booting its guests with `cpus` CPUs instead of the
    /// `[lab]` table's (`--cpus`; `None` keeps it): see
    /// [`LabSpec::with_cpus`], which refuses more than the lab runs.
    pub fn with_cpus(mut self, cpus: Option<u32>) -> Result<QemuBackend<'a>> {
        self.spec = self.spec.with_cpus(cpus)?;
        Ok(self)
    }

    /// The lab kernels, once prepared.
    pub fn built(&self) -> &[LabKernel] {
        match &self.kernels {
            Kernels::Built(k) => k,
            Kernels::Build { .. } => &[],
        }
    }
}

/// Whether every boot loads the L1 cache model (`--cache-model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheModelChoice {
    /// It does.
    Load,
    /// It does not.
    Off,
}

/// The QEMU lab's plan of `request` and its backend. Checks the target's
/// `[lab]` table, the variants, the host tools and that the guest's
/// userspace can be made; builds nothing.
pub fn resolve<'a>(
    (sh, layout): (&'a Shell, &'a Layout),
    request: &LabRequest,
) -> Result<(LabPlan, QemuBackend<'a>)> {
    request.check()?;
    let all_targets = targets::load_all(&layout.targets_dir())?;
    let target = targets::select(&all_targets, std::slice::from_ref(&request.target))?.remove(0);
    let spec = kernel::spec_of(&target)?
        .with_nic(request.nic.as_deref(), &target.file)?
        .with_cpus(request.cpus)?;
    let chosen = super::variants::chosen_variants(layout, &request.variants)?;
    // pcnet32 keeps ether_setup's max_mtu, ETH_DATA_LEN (it never sets
    // its own: drivers/net/ethernet/amd/pcnet32.c), so the guest's `ip
    // link set … mtu` would fail at the first boot, after every build.
    if let Some(m) = request
        .count(super::request::Field::Mtu)
        .filter(|m| *m > 1500)
    {
        if spec.nic == "pcnet" {
            bail!("--mtu {m}: the pcnet NIC takes at most 1500 bytes (pcnet32 keeps Ethernet's max_mtu); use --mtu 1500 or less, or the target's other NIC");
        }
    }
    let mtu = |t: Topology| match request.count(super::request::Field::Mtu) {
        Some(mtu) => t.with_mtu(mtu),
        None => t,
    };
    let mut topology = mtu(topology::named_with(&request.topology, request.routers)?);
    let (workload, schedule, mut settings) = workload(request, &chosen[0].name)?;
    settings.labs_at_once = (request.labs_at_once > 1).then_some(request.labs_at_once);
    super::host_tools::check_host_tools(&spec)?;
    rootfs::check(&spec)
        .with_context(|| format!("the lab cannot make {}'s guest userspace", target.name))?;
    let steering = super::steering::attach(
        &target,
        &spec,
        request.packet_steering.as_ref(),
        request.openwrt.as_deref(),
        &mut topology,
    )?;
    let mut reference = reference(&topology)?.map(mtu);
    if let Some(r) = &mut reference {
        super::steering::attach(
            &target,
            &spec,
            request.packet_steering.as_ref(),
            request.openwrt.as_deref(),
            r,
        )?;
    }
    let recipe = match &request.openwrt {
        None => Recipe::Profiles,
        Some(checkout) => {
            openwrt_ruleset(&mut topology, &spec);
            Recipe::Openwrt(checkout.clone())
        }
    };
    let kernels_from = match (&recipe, &spec.openwrt) {
        (Recipe::Openwrt(checkout), Some(machine_target)) => format!(
            ", built as OpenWrt {} builds {machine_target} with {}'s KCFLAGS",
            checkout.display(),
            target.name
        ),
        (Recipe::Openwrt(_), None) => anyhow::bail!(
            "{}: its [lab] table names no OpenWrt target for `lab --openwrt` (openwrt = \"malta/le\", \"malta/be\" or \"armsr/armv7\", with openwrt_fragments)",
            target.file.display()
        ),
        (Recipe::Profiles, _) => String::new(),
    };
    let model = match (request.cache_model, &spec.timing) {
        (false, _) => String::new(),
        (true, Some(_)) => format!(
            "; the cache and core models: L1 of [lab.l1], L2, branch predictor and cycles of [lab.timing] in {}",
            target.file.display()
        ),
        (true, None) => format!(
            "; the L1 cache model of [lab.l1] in {} (no [lab.timing]: no cycles)",
            target.file.display()
        ),
    };
    let cpus = match qemu::icount(&spec) {
        Some(_) => String::new(),
        None => format!(
            " -smp {} (multi-threaded TCG, no -icount: the guest's clock is the host's)",
            spec.cpus
        ),
    };
    let steered = if spec.cpus > 1 || steering.is_on() {
        let how = if steering.resolved.is_empty() {
            String::new()
        } else {
            format!(": {}", steering.resolved)
        };
        format!(
            "; packet steering {} (asked: {} by {}{how})",
            steering.describe(),
            steering.asked,
            steering.from
        )
    } else {
        String::new()
    };
    let plan = LabPlan {
        target: target.name.clone(),
        machine: format!(
            "QEMU {} -cpu {}{cpus}, {} NICs ({} kernels{kernels_from}){model}{steered}",
            spec.machine,
            spec.cpu,
            spec.nic,
            kernel::lab_target(&target)?.name
        ),
        topology: Some(topology.clone()),
        places: (Vec::new(), Vec::new()),
        workload,
        reference: reference.clone(),
        variants: chosen.iter().map(|v| v.name.clone()).collect(),
        control: request.control(),
        schedule,
        settings,
    };
    let mut backend = QemuBackend::new(
        (sh, layout),
        target,
        topology,
        Kernels::Build {
            variants: chosen,
            options: request.build.clone(),
            kernel_src: request.kernel_src.clone(),
            recipe,
        },
        if request.cache_model {
            CacheModelChoice::Load
        } else {
            CacheModelChoice::Off
        },
    )?
    .with_nic(request.nic.as_deref())?
    .with_cpus(request.cpus)?;
    backend.reference = reference;
    Ok((plan, backend))
}

/// The reference arm's topology of a lab on `topology`: the mesh's third
/// column, the same routers (as many) bridged without batman-adv
/// (`mesh-bridged`); none for every other topology.
pub fn reference(topology: &Topology) -> Result<Option<Topology>> {
    if topology.name == topology::Name::Mesh {
        let routers = Some(topology.guests.len());
        return Ok(Some(topology::named_with(
            &topology::Name::MeshBridged,
            routers,
        )?));
    }
    Ok(None)
}

/// What runs as `request` asks ([`LabRequest::workload`], checked by
/// [`LabRequest::check`]), with the schedule and `lab.json`'s settings
/// (`base` the base variant): tbench inside a guest ([`GuestTbench`],
/// `--clients`), or iperf3 from one endpoint to another ([`Forwarding`])
/// with `--parallel`/`--set-mss`/`--udp`.
///
/// Errors: tbench's clients out of range.
pub fn workload(
    request: &LabRequest,
    base: &str,
) -> Result<(Box<dyn Workload>, runner::Plan, Settings)> {
    match &request.workload {
        WorkloadSpec::Tbench { guest } => {
            let tbench = GuestTbench::new(guest, request.clients())?;
            let schedule = tbench.plan(request.runs, request.duration_seconds);
            let settings = tbench.settings(&schedule, (base, request.control));
            Ok((Box::new(tbench), schedule, settings))
        }
        WorkloadSpec::Iperf3 { from, to } => Ok((
            Box::new(Forwarding::between(from, to).with_iperf(request.iperf)),
            forwarding::plan(request),
            forwarding::settings(request, base),
        )),
    }
}

/// `lab --openwrt`: the measured guest loads firewall4's ruleset
/// ([`Ruleset::Firewall4`]) in place of the nat-router's, where its `nft`
/// can: a static guest's loader knows the nat-router's alone, which it then
/// keeps, saying so. A topology whose measured guest loads no ruleset
/// (`loopback`: tbench on the guest's own `lo`) is left as it is: there
/// the OpenWrt-mode kernel is all `--openwrt` changes.
pub fn openwrt_ruleset(topology: &mut Topology, spec: &LabSpec) {
    let measured = topology.measured.clone();
    for g in topology.guests.iter_mut().filter(|g| g.name == measured) {
        if g.ruleset != Some(Ruleset::NatRouter) {
            continue;
        }
        if spec.static_guest.is_some() {
            eprintln!(
                "lab: {}'s guest is built static, with the lab's loader of its own ruleset (lab/static-guest/nft.c): it loads {}, not firewall4's",
                spec.guest_arch,
                Ruleset::NatRouter.describe()
            );
        } else {
            g.ruleset = Some(Ruleset::Firewall4);
        }
    }
}

/// The arms of lab `kernels`, in order: each kernel's variant with its
/// image.
pub fn arms(kernels: &[LabKernel]) -> Result<Vec<Arm>> {
    kernels
        .iter()
        .map(|k| {
            Ok(Arm {
                name: k.variant.name.clone(),
                variant: k.variant.name.clone(),
                control: false,
                kernel: Some(ArmKernel {
                    results_dir: k.image.parent().map(Path::to_path_buf).unwrap_or_default(),
                    image: k.image.clone(),
                    image_sha256: sha256_file(&k.image)?,
                    config_sha256: k.result.config_sha256.clone(),
                    vmlinux_text: k.result.vmlinux_sections.text,
                }),
                runtime: None,
                topology: None,
            })
        })
        .collect()
}

impl Backend for QemuBackend<'_> {
    fn prepare(&mut self) -> Result<Prepared> {
        let (sh, layout, target, spec) = (&self.sh, self.layout, &self.target, &self.spec);
        let kernels_layout = &self.kernels_layout;
        if self.cache_model {
            let m = cache_model::prepare(layout, target, spec)?;
            eprintln!(
                "lab: cache model {} (I: {}; D: {}, from {})",
                m.plugin.display(),
                m.info.icache.describe(),
                m.info.dcache.describe(),
                m.info.geometry_from
            );
            self.model = Some(m);
        }
        let lab_name = kernel::lab_target(target)?.name;
        if let Kernels::Build {
            variants,
            options,
            kernel_src,
            recipe,
        } = &self.kernels
        {
            let missing: Vec<&str> = variants
                .iter()
                .filter(|v| {
                    !kernels_layout
                        .results_dir(&lab_name, &v.name)
                        .join(crate::results::FILE_NAME)
                        .is_file()
                })
                .map(|v| v.name.as_str())
                .collect();
            if !missing.is_empty() {
                eprintln!(
                    "lab: no {lab_name} kernel yet for {}: building (a router kernel, 10–25 minutes each on 2 cores; Ctrl-C stops it)",
                    missing.join(", ")
                );
            }
            let built = kernel::build_with(
                sh,
                kernels_layout,
                target,
                variants,
                options.clone(),
                kernel_src.clone(),
                recipe,
            )?;
            self.kernels = Kernels::Built(built);
        }
        let mut initramfs = rootfs::prepare(layout, spec)?;
        initramfs.ruleset = self
            .topology
            .guest(&self.topology.measured)
            .and_then(|g| g.ruleset)
            .map(|r| r.describe().to_string());
        for k in self.built() {
            eprintln!("lab: kernel {}: {}", k.variant.name, k.image.display());
        }
        eprintln!(
            "lab: initramfs {} ({} bytes)",
            initramfs.path.display(),
            initramfs.size
        );
        let qemu_bin = &spec.qemu;
        let version = cmd!(sh, "{qemu_bin} --version")
            .quiet()
            .read()
            .with_context(|| format!("running {qemu_bin} --version"))?;
        let machine = MachineInfo::Qemu {
            qemu: QemuInfo {
                binary: spec.qemu.clone(),
                version: version.lines().next().unwrap_or_default().to_string(),
                machine: spec.machine.clone(),
                cpu: spec.cpu.clone(),
                smp: spec.cpus,
                icount: qemu::icount(spec).unwrap_or_default().to_string(),
                accel: qemu::icount(spec)
                    .is_none()
                    .then(|| qemu::TCG_MULTI_THREADED.to_string()),
                steering: self
                    .topology
                    .guest(&self.topology.measured)
                    .and_then(|g| g.steering.clone())
                    .map(Box::new),
                append: qemu::kernel_cmdline(spec),
            },
            initramfs: initramfs.clone(),
        };
        self.initramfs = Some(initramfs);
        Ok(Prepared {
            lab_target: lab_name,
            machine,
            arms: arms(self.built())?,
            cache_model: self.model.as_ref().map(|m| m.info.clone()),
        })
    }

    fn bring_up(&mut self, arm: &Arm, round: u32, tag: &str, dir: &Path) -> Result<Up> {
        let kernel = self
            .built()
            .iter()
            .find(|k| k.variant.name == arm.variant)
            .with_context(|| format!("no lab kernel for arm {}", arm.name))?;
        let initramfs = self
            .initramfs
            .as_ref()
            .context("the QEMU lab boots nothing before it is prepared")?;
        let image = Image {
            kernel: &kernel.image,
            dtb: kernel.dtb.as_deref(),
            initramfs,
        };
        let topology = match (&arm.topology, &self.reference) {
            (None, _) => &self.topology,
            (Some(name), Some(r)) if *name == r.name => r,
            (Some(name), _) => bail!(
                "arm {} boots topology {name}, which this lab has not",
                arm.name
            ),
        };
        let mut bed =
            QemuTestbed::boot(&self.spec, topology, image, (dir, tag), self.model.as_ref())?;
        let qdisc = bed.default_qdisc()?;
        let first = &bed.guests()[0];
        let boot = BootRecord {
            qdisc: Some(qdisc),
            arm: arm.name.clone(),
            round,
            boot_seconds: (bed.boot_seconds * 1e3).round() / 1e3,
            guest_uptime_at_ready: first.uptime_at_ready,
            console_log: first.console_log.clone(),
            qemu_argv: first.qemu_argv.clone(),
            kernel: None,
            wall_steps: bed.boot_steps.clone(),
        };
        Ok(Up {
            bed: Box::new(bed),
            boot: Some(boot),
        })
    }
}

#[cfg(test)]
#[path = "qemu_lab_tests.rs"]
mod tests;
