//! One booted guest: its namespaces and taps, QEMU, the console, and the
//! iperf3 runs through it. Dropping a [`Guest`] stops QEMU and removes the
//! namespaces and taps, on success, error or Ctrl-C alike.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::console::Console;
use super::guest::{FAILED, READY, SAMPLE};
use super::process::{interrupted, ChildGuard};
use super::qemu::{self, Boot};
use super::record::Direction;
use super::sample::read_json;
use super::sample::GuestSample;
use super::topology::{wait_listening, Topology};
use crate::inputs::lab::LabSpec;

/// From starting QEMU to the router being ready.
const BOOT_TIMEOUT: Duration = Duration::from_secs(240);
/// For QEMU to open its console socket and its taps.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// For one console command (sampling, ethtool, conntrack).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// For the iperf3 server to listen, and to exit after its one test.
const SERVER_TIMEOUT: Duration = Duration::from_secs(15);
/// iperf3's port in the WAN namespace.
const IPERF_PORT: u16 = 5201;

/// A running guest; stopped and cleaned up when dropped.
pub struct Guest {
    // Field order is drop order: console, then QEMU, then the network.
    console: Console,
    qemu: ChildGuard,
    topology: Topology,
    _socket_dir: tempfile::TempDir,
    /// Wall seconds from starting QEMU to the router being ready.
    pub boot_seconds: f64,
    /// The guest's uptime when it said it was ready.
    pub uptime_at_ready: Option<f64>,
    /// QEMU's command line (program first).
    pub qemu_argv: Vec<String>,
}

/// One iperf3 run's raw results.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Guest counters before.
    pub before: GuestSample,
    /// Guest counters after.
    pub after: GuestSample,
    /// The client's `--json` report.
    pub client: serde_json::Value,
    /// The server's `--json` report.
    pub server: serde_json::Value,
}

impl Guest {
    /// Creates the network, starts QEMU with `kernel` (and its device tree)
    /// and `initramfs` and
    /// waits until `/init` says the router forwards and masquerades. The
    /// console goes to `console_log`, QEMU's own output to `qemu_log`.
    pub fn boot(
        spec: &LabSpec,
        (kernel, dtb): (&Path, Option<&Path>),
        initramfs: &Path,
        console_log: &Path,
        qemu_log: &Path,
    ) -> Result<Guest> {
        let topology = Topology::create()?;
        let socket_dir = tempfile::Builder::new()
            .prefix("xlab-")
            .tempdir()
            .context("creating a directory for QEMU's console socket")?;
        let socket = socket_dir.path().join("console.sock");
        let args = qemu::argv(
            spec,
            Boot {
                kernel,
                initramfs,
                console_socket: &socket,
                dtb,
            },
            [&topology.lan.tap, &topology.wan.tap],
        );
        let mut command = Command::new(&spec.qemu);
        command.args(&args);
        let mut qemu_argv = vec![spec.qemu.clone()];
        qemu_argv.extend(args);
        let started = Instant::now();
        let mut qemu = ChildGuard::spawn(command, "QEMU", qemu_log)?;
        let console = Console::connect(&socket, console_log, &mut qemu, START_TIMEOUT)
            .map_err(|e| with_qemu_log(e, qemu_log))?;
        topology
            .attach(START_TIMEOUT, || match qemu.try_status()? {
                Some(status) => bail!("QEMU exited ({status}) before opening its taps"),
                None => Ok(()),
            })
            .map_err(|e| with_qemu_log(e, qemu_log))?;
        let line = console
            .wait_for_line(
                0,
                &[READY, FAILED, "Kernel panic"],
                &mut qemu,
                BOOT_TIMEOUT,
                "booting the lab kernel",
            )
            .map_err(|e| with_qemu_log(e, qemu_log))?;
        if !line.contains(READY) {
            bail!(
                "the guest did not become a router: {line}\n{}",
                console.tail()
            );
        }
        let uptime_at_ready = line.split_whitespace().last().and_then(|s| s.parse().ok());
        Ok(Guest {
            console,
            qemu,
            topology,
            _socket_dir: socket_dir,
            boot_seconds: started.elapsed().as_secs_f64(),
            uptime_at_ready,
            qemu_argv,
        })
    }

    /// Runs `command` in the guest's shell, failing on a non-zero status.
    pub fn check(&mut self, command: &str) -> Result<String> {
        self.console
            .check(command, &mut self.qemu, COMMAND_TIMEOUT)
            .map_err(|e| anyhow::anyhow!("{e:#}\n{}", self.console.tail()))
    }

    /// Turns GRO on or off on both guest NICs (ethtool).
    pub fn set_gro(&mut self, on: bool) -> Result<()> {
        let v = if on { "on" } else { "off" };
        self.check(&format!("ethtool -K lan gro {v} && ethtool -K wan gro {v}"))
            .context("switching GRO in the guest")?;
        Ok(())
    }

    /// The guest's counters now.
    pub fn sample(&mut self) -> Result<GuestSample> {
        let out = self.check(SAMPLE)?;
        GuestSample::parse(&out)
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
        let file = |suffix: &str| -> PathBuf { dir.join(format!("{prefix}-{suffix}")) };
        let (wan, lan) = (self.topology.wan.clone(), self.topology.lan.clone());
        let port = IPERF_PORT.to_string();
        let mut server = Command::new("ip");
        server
            .args([
                "netns",
                "exec",
                &wan.netns,
                "iperf3",
                "--server",
                "--one-off",
            ])
            .args(["--json", "--bind", wan.host_ip, "--port", &port]);
        let mut server = ChildGuard::spawn_split(
            server,
            "iperf3 server",
            &file("server.json"),
            &file("server.stderr"),
        )?;
        wait_listening(&wan.netns, IPERF_PORT, &mut server, SERVER_TIMEOUT)?;
        let before = self.sample()?;
        let mut client = Command::new("ip");
        client
            .args([
                "netns",
                "exec",
                &lan.netns,
                "iperf3",
                "--client",
                wan.host_ip,
            ])
            .args(["--port", &port, "--time", &seconds.to_string(), "--json"])
            .args(["--connect-timeout", "5000"]);
        if direction == Direction::WanToLan {
            client.arg("--reverse");
        }
        let mut client = ChildGuard::spawn_split(
            client,
            "iperf3 client",
            &file("client.json"),
            &file("client.stderr"),
        )?;
        let limit = Duration::from_secs(u64::from(seconds) + 30);
        let status = match client.wait(limit) {
            Ok(status) => status,
            Err(e) if interrupted() => return Err(e),
            Err(e) => {
                return Err(e.context(format!(
                    "the {} run stalled (a NIC that stops moving packets?)\n{}",
                    direction.name(),
                    self.console.tail()
                )))
            }
        };
        let client = read_json(&file("client.json"))?;
        if !status.success() {
            let stderr = std::fs::read_to_string(file("client.stderr")).unwrap_or_default();
            bail!(
                "iperf3 {} failed ({status}): {}{stderr}\n{}",
                direction.name(),
                client.get("error").and_then(|e| e.as_str()).unwrap_or(""),
                self.console.tail()
            );
        }
        let after = self.sample()?;
        server
            .wait(SERVER_TIMEOUT)
            .context("waiting for the iperf3 server to finish")?;
        let server = read_json(&file("server.json"))?;
        Ok(RunOutput {
            before,
            after,
            client,
            server,
        })
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
