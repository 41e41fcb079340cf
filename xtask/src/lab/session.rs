//! One booted guest: its namespaces and taps, QEMU (with the cache model's
//! plugin, if asked), the console, and the iperf3 runs through it.
//! Dropping a [`Guest`] stops QEMU and removes the namespaces and taps, on
//! success, error or Ctrl-C alike.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::cache_model::CacheModel;
use super::console::Console;
use super::guest::{SamplePoint, FAILED, READY, SAMPLE};
pub use super::iperf::RunOutput;
use super::iperf::{self};
use super::kernel::LabKernel;
use super::process::{interrupted, ChildGuard};
use super::qemu::{self, Boot};
use super::record::{Arm, BootRecord, Direction};
use super::rootfs::Initramfs;
use super::router::{Bench, Endpoints, Gro, Router, Up};
use super::sample::GuestSample;
use super::topology::{self, Topology};
use crate::inputs::lab::LabSpec;
use crate::results::lab::timing::{self, Stopwatch};
use crate::results::lab::{CacheCounters, WallStep};

/// From starting QEMU to the router being ready.
const BOOT_TIMEOUT: Duration = Duration::from_secs(240);
/// For QEMU to open its console socket and its taps.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// For one console command (sampling, ethtool, conntrack).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// A running guest; stopped and cleaned up when dropped.
pub struct Guest {
    // Field order is drop order: console, then QEMU, then the network.
    console: Console,
    qemu: ChildGuard,
    // Held for its Drop: removes the namespaces and taps.
    _topology: Topology,
    endpoints: Endpoints,
    /// The cache model loaded into QEMU and the socket it serves.
    model: Option<(CacheModel, PathBuf)>,
    _socket_dir: tempfile::TempDir,
    /// QEMU's own output, for errors.
    qemu_log: PathBuf,
    /// Wall seconds from starting QEMU to the router being ready.
    pub boot_seconds: f64,
    /// The guest's uptime when it said it was ready.
    pub uptime_at_ready: Option<f64>,
    /// QEMU's command line (program first).
    pub qemu_argv: Vec<String>,
    /// Where `boot_seconds` went ([`timing::BOOT_CONSOLE`],
    /// [`timing::BOOT_TAPS`], [`timing::BOOT_READY`]).
    pub boot_steps: Vec<WallStep>,
}

impl Guest {
    /// Creates the network, starts QEMU with `kernel` (and its device tree)
    /// and `initramfs` and
    /// waits until `/init` says the router forwards and masquerades. The
    /// console goes to `console_log`, QEMU's own output to `qemu_log`.
    pub fn boot(
        spec: &LabSpec,
        kernel: (&Path, Option<&Path>),
        initramfs: &Path,
        console_log: &Path,
        qemu_log: &Path,
    ) -> Result<Guest> {
        Guest::boot_with_model(spec, kernel, initramfs, (console_log, qemu_log), None)
    }

    /// [`Guest::boot`] with `model`'s plugin loaded into QEMU, serving its
    /// counters on a socket next to the console's
    /// ([`Guest::model_counters`]); the logs are the console's and QEMU's.
    pub fn boot_with_model(
        spec: &LabSpec,
        (kernel, dtb): (&Path, Option<&Path>),
        initramfs: &Path,
        (console_log, qemu_log): (&Path, &Path),
        model: Option<&CacheModel>,
    ) -> Result<Guest> {
        let mut topology = Topology::create()?;
        let socket_dir = tempfile::Builder::new()
            .prefix(&topology::socket_dir_prefix())
            .tempdir()
            .context("creating a directory for QEMU's console socket")?;
        let socket = socket_dir.path().join("console.sock");
        let model_socket = socket_dir.path().join("cache-model.sock");
        let plugin = model.map(|m| m.plugin_arg(&model_socket)).transpose()?;
        let args = qemu::argv(
            spec,
            Boot {
                kernel,
                initramfs,
                console_socket: &socket,
                dtb,
                plugin: plugin.as_deref(),
            },
            [&topology.lan.tap, &topology.wan.tap],
        );
        let mut command = Command::new(&spec.qemu);
        command.args(&args);
        let mut qemu_argv = vec![spec.qemu.clone()];
        qemu_argv.extend(args);
        let started = Instant::now();
        let mut watch = Stopwatch::default();
        let mut qemu = ChildGuard::spawn(command, "QEMU", qemu_log)?;
        let console = watch
            .time(timing::BOOT_CONSOLE, || {
                Console::connect(&socket, console_log, &mut qemu, START_TIMEOUT)
            })
            .map_err(|e| with_qemu_log(e, qemu_log))?;
        watch
            .time(timing::BOOT_TAPS, || {
                topology.attach(START_TIMEOUT, || match qemu.try_status()? {
                    Some(status) => bail!("QEMU exited ({status}) before opening its taps"),
                    None => Ok(()),
                })
            })
            .map_err(|e| with_qemu_log(e, qemu_log))?;
        let line = watch
            .time(timing::BOOT_READY, || {
                console.wait_for_line(
                    0,
                    &[READY, FAILED, "Kernel panic"],
                    &mut qemu,
                    BOOT_TIMEOUT,
                    "booting the lab kernel",
                )
            })
            .map_err(|e| with_qemu_log(e, qemu_log))?;
        if !line.contains(READY) {
            bail!(
                "the guest did not become a router: {line}\n{}",
                console.tail()
            );
        }
        let uptime_at_ready = line.split_whitespace().last().and_then(|s| s.parse().ok());
        let endpoints = Endpoints {
            lan_netns: topology.lan.netns.clone(),
            wan_netns: topology.wan.netns.clone(),
            server_ip: topology.wan.host_ip.to_string(),
            router_wan_ip: topology.wan.guest_ip.to_string(),
        };
        Ok(Guest {
            console,
            qemu,
            _topology: topology,
            qemu_log: qemu_log.to_path_buf(),
            endpoints,
            model: model.map(|m| (m.clone(), model_socket)),
            _socket_dir: socket_dir,
            boot_seconds: started.elapsed().as_secs_f64(),
            uptime_at_ready,
            qemu_argv,
            boot_steps: watch.into_steps(),
        })
    }

    /// Runs `command` in the guest's shell, failing on a non-zero status.
    pub fn check(&mut self, command: &str) -> Result<String> {
        self.console
            .check(command, &mut self.qemu, COMMAND_TIMEOUT)
            .map_err(|e| anyhow::anyhow!("{e:#}\n{}", self.console.tail()))
    }

    /// Turns GRO on or off on both guest NICs (ethtool).
    pub fn set_gro(&mut self, gro: Gro) -> Result<()> {
        let v = gro.word();
        self.check(&format!("ethtool -K lan gro {v} && ethtool -K wan gro {v}"))
            .context("switching GRO in the guest")?;
        Ok(())
    }

    /// The guest's counters now, read in the order `point` asks for.
    pub fn sample(&mut self, point: SamplePoint) -> Result<GuestSample> {
        let out = self.check(&format!("{SAMPLE} {}", point.word()))?;
        GuestSample::parse(&out)
    }

    /// The cache model's counters now, from QEMU's plugin; `None` when
    /// the guest was booted without a model.
    pub fn model_counters(&mut self) -> Result<Option<CacheCounters>> {
        let Some((model, socket)) = &self.model else {
            return Ok(None);
        };
        match model.read(socket) {
            Ok(c) => Ok(Some(c)),
            Err(e) => match self.qemu.try_status() {
                Ok(Some(status)) => Err(e.context(format!("QEMU exited ({status})"))),
                _ => Err(e),
            },
        }
    }

    /// The guest's connection-tracking table (`/proc/net/nf_conntrack`).
    pub fn conntrack(&mut self) -> Result<String> {
        self.check("cat /proc/net/nf_conntrack")
    }

    /// One iperf3 run of `seconds` in `direction`, the server in the WAN
    /// namespace and the client in the LAN namespace; the reports are kept
    /// as `<prefix>-client.json` and `<prefix>-server.json` in `dir`.
    pub fn iperf(
        &mut self,
        direction: Direction,
        seconds: u32,
        dir: &Path,
        prefix: &str,
    ) -> Result<RunOutput> {
        iperf::run(self, direction, seconds, dir, prefix)
    }

    /// The last console lines.
    pub fn console_tail(&self) -> String {
        self.console.tail()
    }
}

/// Adds QEMU's own output to a boot error (not to an interruption).
fn with_qemu_log(e: anyhow::Error, qemu_log: &Path) -> anyhow::Error {
    if interrupted() {
        return e;
    }
    let text = std::fs::read_to_string(qemu_log).unwrap_or_default();
    anyhow::anyhow!(
        "{e:#}\nQEMU's own output ({}):\n{}",
        qemu_log.display(),
        super::process::last_lines(&text, 10)
    )
}

impl Router for Guest {
    fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    fn set_gro(&mut self, gro: Gro) -> Result<()> {
        Guest::set_gro(self, gro)
    }

    fn sample(&mut self, point: SamplePoint) -> Result<GuestSample> {
        Guest::sample(self, point)
    }

    fn diagnostics(&self) -> String {
        self.console_tail()
    }

    fn model_counters(&mut self) -> Result<Option<CacheCounters>> {
        Guest::model_counters(self)
    }

    fn check_alive(&mut self) -> Result<()> {
        match self.qemu.try_status()? {
            Some(status) => Err(with_qemu_log(
                anyhow::anyhow!(
                    "QEMU exited ({status}) during the run\n{}",
                    self.console_tail()
                ),
                &self.qemu_log,
            )),
            None => Ok(()),
        }
    }
}

/// The QEMU machine of a target's `[lab]` table: each bring-up boots the
/// arm's lab kernel with the initramfs in a fresh network.
pub struct QemuBench<'a> {
    /// The target's `[lab]` table.
    pub spec: &'a LabSpec,
    /// The guest's userspace.
    pub initramfs: &'a Initramfs,
    /// Each variant's lab kernel; an arm runs its variant's.
    pub kernels: &'a [LabKernel],
    /// The cache model every boot loads (`--cache-model`).
    pub cache_model: Option<&'a CacheModel>,
}

impl Bench for QemuBench<'_> {
    fn bring_up(&mut self, arm: &Arm, round: u32, tag: &str, dir: &Path) -> Result<Up> {
        let kernel = self
            .kernels
            .iter()
            .find(|k| k.variant.name == arm.variant)
            .with_context(|| format!("no lab kernel for arm {}", arm.name))?;
        let console_log = format!("console-{tag}.log");
        let guest = Guest::boot_with_model(
            self.spec,
            (&kernel.image, kernel.dtb.as_deref()),
            &self.initramfs.path,
            (
                &dir.join(&console_log),
                &dir.join(format!("qemu-{tag}.log")),
            ),
            self.cache_model,
        )?;
        let boot = BootRecord {
            arm: arm.name.clone(),
            round,
            boot_seconds: (guest.boot_seconds * 1e3).round() / 1e3,
            guest_uptime_at_ready: guest.uptime_at_ready,
            console_log,
            qemu_argv: guest.qemu_argv.clone(),
            kernel: None,
            wall_steps: guest.boot_steps.clone(),
        };
        Ok(Up {
            router: Box::new(guest),
            boot,
        })
    }
}
