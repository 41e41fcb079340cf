//! A real router over SSH: `cargo xtask lab --target T --variant V…
//! --lab ssh://root@HOST --lab-file lab-ssh.toml [--no-flash]`.
//!
//! The kernels are the target's own builds (`cargo xtask build`, results
//! in `target/xtask/results/<target>/<variant>/`), flashed as the image
//! the lab file names for the target. Each bring-up of an arm copies its
//! image (`scp -O`), runs `sysupgrade -n`, waits for the reboot and checks
//! `/proc/version` against the build's `Linux version` banner
//! ([`flash`]); `--no-flash` measures the kernel the router runs, one
//! variant only, and records its `/proc/version` all the same. Then the
//! lab's one flow runs ([`crate::lab::orchestrate`], [`resolve`] and
//! [`SshBackend`] being this lab's part): the forwarding workload
//! between the LAN and WAN endpoints on this machine ([`endpoint`]), GRO
//! switched and counters read over ssh ([`router`], [`remote`]).

pub mod endpoint;
pub mod flash;
pub mod perf;
pub mod remote;
pub mod router;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::backend::{Backend, EndpointUp, Endpoints, Prepared, Up};
use super::forwarding::{self, Forwarding};
use super::orchestrate::LabPlan;
use super::request::LabRequest;
pub use super::request::SshRequest;
use crate::inputs::ssh_lab::{Destination, SshFrom, SshLabFile};
use crate::inputs::targets;
use crate::results::lab::{Arm, BootRecord, MachineInfo};
use crate::results::lab::{ArmKernel, Flash, KernelCheck, RouterInfo};
use crate::results::BuildResult;
use crate::util::hash::sha256_file;
use crate::util::layout::Layout;
use endpoint::HostSides;
use remote::Ssh;
use router::SshRouter;

/// Host programs the SSH lab runs, with their Debian packages.
pub const HOST_TOOLS: &[(&str, &str)] = &[
    ("ssh", "openssh-client"),
    ("scp", "openssh-client"),
    ("iperf3", "iperf3"),
    ("ip", "iproute2"),
];

/// One variant's kernel on the router.
#[derive(Debug, Clone)]
struct VariantImage {
    variant: String,
    /// The image to flash (with [`Flash::Sysupgrade`]).
    image: Option<PathBuf>,
    /// The `Linux version` banner of its build's vmlinux.
    banner: Option<String>,
}

/// The real router as the lab's [`Backend`].
pub struct SshBackend {
    destination: Destination,
    request: SshRequest,
    file: SshLabFile,
    arms: Vec<Arm>,
    kernels: Vec<VariantImage>,
    kernels_target: String,
    /// Made by [`Backend::prepare`]: the endpoints' namespaces (removed
    /// when the backend is dropped), ssh, where iperf3 runs.
    /// Once prepared: the endpoints' sides, the client, the endpoints and
    /// perf's version on the router (`None`: no perf).
    ready: Option<(HostSides, Ssh, Endpoints, Option<String>)>,
}

impl Backend for SshBackend {
    fn prepare(&mut self) -> Result<Prepared> {
        let file = &self.file;
        let sides = HostSides::prepare(&file.lan, &file.wan)?;
        let netns = match file.from {
            SshFrom::Host => None,
            SshFrom::Lan => Some(sides.lan_netns.clone()),
            SshFrom::Wan => Some(sides.wan_netns.clone()),
        };
        let destination = &self.destination;
        let client = Ssh {
            destination: destination.clone(),
            identity: file.identity.clone(),
            options: file.options.clone(),
            netns,
            timeouts: file.timeouts,
            log: None,
        };
        let version = flash::proc_version(&client)
            .with_context(|| format!("reaching the router {} over ssh", destination.login()))?;
        eprintln!("lab: {} runs {version}", destination.login());
        let perf = perf::version(&client)?;
        if perf.is_none() {
            eprintln!(
                "lab: note: the router has no perf (OpenWrt's perf package): its runs record /proc/stat time per packet, not its cycles, instructions, branch and L1I misses"
            );
        }
        let endpoint =
            |name: &str, netns: &str, address: Option<(std::net::IpAddr, _)>| EndpointUp {
                name: name.to_string(),
                netns: netns.to_string(),
                address: address.map(|(ip, _)| ip),
            };
        let endpoints = Endpoints {
            list: vec![
                endpoint("lan", &sides.lan_netns, file.lan.address),
                endpoint("wan", &sides.wan_netns, file.wan.address),
            ],
            masquerade: Some(file.router.wan_address),
        };
        let router = RouterInfo {
            access: "ssh".to_string(),
            destination: destination.login(),
            host: destination.host.clone(),
            port: destination.port,
            lan_interface: file.router.lan_interface.clone(),
            wan_interface: file.router.wan_interface.clone(),
            gro_interfaces: file.router.gro_interfaces.clone(),
            wan_address: file.router.wan_address.to_string(),
            flash: self.request.flash,
            lab_file: std::path::absolute(&self.request.lab_file)
                .unwrap_or(self.request.lab_file.clone()),
            lab_file_sha256: file.sha256.clone(),
            perf: perf.clone(),
        };
        self.ready = Some((sides, client, endpoints, perf.clone()));
        Ok(Prepared {
            // The target's own builds, not a lab target's.
            lab_target: self.kernels_target.clone(),
            machine: MachineInfo::Router { router },
            arms: self.arms.clone(),
            cache_model: None,
        })
    }

    fn bring_up(&mut self, arm: &Arm, round: u32, tag: &str, dir: &Path) -> Result<Up> {
        let Some((_, client, endpoints, perf)) = &self.ready else {
            bail!("the SSH lab brings up nothing before it is prepared");
        };
        let endpoints = endpoints.clone();
        let flash_mode = self.request.flash;
        let log = format!("ssh-{tag}.log");
        let mut ssh = client.clone();
        ssh.log = Some(dir.join(&log));
        let kernel = self
            .kernels
            .iter()
            .find(|k| k.variant == arm.variant)
            .with_context(|| format!("no kernel for arm {}", arm.name))?;
        let boot_seconds = match (flash_mode, &kernel.image) {
            (Flash::Sysupgrade, Some(image)) => {
                eprintln!(
                    "lab: flashing {} onto {}",
                    image.display(),
                    ssh.destination.login()
                );
                flash::flash(&ssh, image)?
            }
            (Flash::Sysupgrade, None) => bail!("no image to flash for {}", arm.name),
            (Flash::NotFlashed, _) => 0.0,
        };
        let proc_version = flash::proc_version(&ssh)?;
        let matches_build = kernel.banner.as_ref().map(|b| *b == proc_version);
        match (matches_build, flash_mode) {
            (Some(false), Flash::Sysupgrade) => bail!(
                "after sysupgrade the router runs\n  {proc_version}\nnot {}'s build\n  {}",
                arm.variant,
                kernel.banner.as_deref().unwrap_or_default()
            ),
            (Some(false), Flash::NotFlashed) => eprintln!(
                "lab: note: the router runs {proc_version:?}, not {}'s build (--no-flash)",
                arm.variant
            ),
            _ => {}
        }
        let uptime = flash::uptime(&ssh)?;
        let mut router = SshRouter::new(ssh, self.file.router.clone(), endpoints);
        if perf.is_some() {
            router = router.counting_with_perf();
        }
        router.check_interfaces()?;
        let boot = BootRecord {
            qdisc: None,
            arm: arm.name.clone(),
            round,
            boot_seconds: (boot_seconds * 1e3).round() / 1e3,
            guest_uptime_at_ready: Some(uptime),
            console_log: log,
            qemu_argv: Vec::new(),
            kernel: Some(KernelCheck {
                proc_version,
                built_banner: kernel.banner.clone(),
                matches_build,
                flash: flash_mode,
            }),
            wall_steps: Vec::new(),
        };
        Ok(Up {
            bed: Box::new(router),
            boot: Some(boot),
        })
    }
}

/// The SSH lab's plan of `request` and its backend: the lab file, the
/// destination, the variants' builds and images are checked here, before
/// anything runs.
pub fn resolve(
    layout: &Layout,
    request: &LabRequest,
    ssh: &SshRequest,
) -> Result<(LabPlan, SshBackend)> {
    let all_targets = targets::load_all(&layout.targets_dir())?;
    let target = targets::select(&all_targets, std::slice::from_ref(&request.target))?.remove(0);
    let chosen = super::variants::chosen_variants(layout, &request.variants)?;
    let file = SshLabFile::load(&ssh.lab_file)?;
    let destination = match (&ssh.destination, &file.destination) {
        (Some(a), Some(b)) if a != b => bail!(
            "--lab ssh://{}:{} and {}'s destination ssh://{}:{} differ; name it once",
            a.login(),
            a.port,
            ssh.lab_file.display(),
            b.login(),
            b.port
        ),
        (Some(d), _) | (None, Some(d)) => d.clone(),
        (None, None) => bail!(
            "no router named: use --lab ssh://root@HOST or [ssh] destination in {}",
            ssh.lab_file.display()
        ),
    };
    if ssh.flash == Flash::NotFlashed && chosen.len() > 1 {
        bail!("--no-flash measures the kernel the router runs now: name one --variant (it labels that kernel)");
    }
    // Everything the file and the builds say is checked before anything runs.
    let mut kernels = Vec::new();
    let mut arms = Vec::new();
    for v in &chosen {
        let dir = layout.results_dir(&target.name, &v.name);
        let (arm, image, banner) = arm_of(&file, (&target.name, &v.name), &dir, ssh.flash)?;
        arms.push(arm);
        kernels.push(VariantImage {
            variant: v.name.clone(),
            image,
            banner,
        });
    }
    check_host_tools()?;
    let plan = LabPlan {
        target: target.name.clone(),
        machine: format!(
            "router {} over SSH ({}, {})",
            destination.login(),
            ssh.lab_file.display(),
            ssh.flash.describe()
        ),
        topology: None,
        places: (vec!["lan".to_string(), "wan".to_string()], Vec::new()),
        workload: Box::new(Forwarding::lan_to_wan().with_iperf(request.iperf)),
        reference: None,
        variants: chosen.iter().map(|v| v.name.clone()).collect(),
        control: request.control(),
        schedule: forwarding::plan(request),
        settings: forwarding::settings(request, &chosen[0].name),
    };
    let backend = SshBackend {
        destination,
        request: ssh.clone(),
        file,
        arms,
        kernels,
        kernels_target: target.name.clone(),
        ready: None,
    };
    Ok((plan, backend))
}

/// Fails naming every missing host program and the packages to install.
pub fn check_host_tools() -> Result<()> {
    crate::lab::host_tools::require_tools("the SSH lab", HOST_TOOLS)
}

/// The arm of `variant` of `target` (results in `dir`), the image to
/// flash and the build's banner. Flashing needs all three from a finished
/// build; `--no-flash` takes what there is.
fn arm_of(
    file: &SshLabFile,
    (target, variant): (&str, &str),
    dir: &Path,
    flash: Flash,
) -> Result<(Arm, Option<PathBuf>, Option<String>)> {
    let result = match BuildResult::read(dir) {
        Ok(r) => Some(r),
        Err(e) if flash == Flash::Sysupgrade => return Err(e),
        Err(_) => None,
    };
    let vmlinux = dir.join("vmlinux");
    let banner = if vmlinux.is_file() {
        flash::banner_of(&vmlinux)?
    } else {
        None
    };
    let image = match file.image(target, variant, dir) {
        Some(p) if flash == Flash::Sysupgrade && !p.is_file() => bail!(
            "the image to flash for {target}/{variant}, {}, does not exist ([images] in {})",
            p.display(),
            file.path.display()
        ),
        Some(p) if flash == Flash::Sysupgrade => Some(p),
        // Not flashed: the router runs whatever it runs.
        _ => None,
    };
    if flash == Flash::Sysupgrade {
        if image.is_none() {
            bail!(
                "{} has no [images] entry for {target}: which file does sysupgrade take?",
                file.path.display()
            );
        }
        if banner.is_none() {
            bail!(
                "{} has no `Linux version` banner to check the flashed kernel against",
                vmlinux.display()
            );
        }
    }
    let image_sha256 = match &image {
        Some(p) => sha256_file(p)?,
        None => String::new(),
    };
    let arm = Arm {
        name: variant.to_string(),
        variant: variant.to_string(),
        control: false,
        kernel: Some(ArmKernel {
            results_dir: dir.to_path_buf(),
            image: image.clone().unwrap_or_default(),
            image_sha256,
            config_sha256: result
                .as_ref()
                .map(|r| r.config_sha256.clone())
                .unwrap_or_default(),
            vmlinux_text: result.as_ref().map_or(0, |r| r.vmlinux_sections.text),
        }),
        runtime: None,
        topology: None,
    };
    Ok((arm, image, banner))
}
