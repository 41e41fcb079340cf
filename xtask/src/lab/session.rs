//! One boot of a topology in QEMU ([`QemuTestbed`]): its network on this
//! machine ([`crate::lab::net::Net`], as [`super::topology::plan`]
//! plans it), one QEMU per guest ([`RunningGuest`]: its console, its NICs, its
//! network setup in the initramfs, the cache model's plugin in the
//! measured guest) and the endpoints the workload runs in. Dropping it
//! stops every QEMU, then removes the namespaces and taps, on success,
//! error or Ctrl-C alike.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::backend::{EndpointUp, Endpoints, Gro, Testbed};
use super::cache_model::CacheModel;
use super::console::Console;
use super::guest::{self, SamplePoint, FAILED, READY, SAMPLE};
pub use super::iperf::RunOutput;
use super::net::{self, Names, Net};
use super::process::{self, interrupted, Supervised};
use super::qemu::{self, Boot};
use super::rootfs::{self, Initramfs};
use super::sample::GuestSample;
use super::topology::plan::{self, QemuNic};
use super::topology::{self, Topology};
use crate::inputs::lab::LabSpec;
use crate::results::lab::per_cpu::Snapshot;
use crate::results::lab::timing::{self, Stopwatch};
use crate::results::lab::Direction;
use crate::results::lab::{CoreTiming, WallStep};

/// From starting QEMU to the guests being ready.
const BOOT_TIMEOUT: Duration = Duration::from_secs(240);
/// For QEMU to open its console socket and its taps.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// For one console command (sampling, ethtool, conntrack).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// One running QEMU of a testbed.
pub struct RunningGuest {
    // Field order is drop order: the console, then QEMU.
    console: Console,
    qemu: Supervised,
    /// Its name in the topology.
    pub name: String,
    counted: [String; 2],
    gro: Vec<String>,
    /// The cache model loaded into it and the socket it serves.
    model: Option<(CacheModel, PathBuf)>,
    qemu_log: PathBuf,
    /// QEMU's command line (program first).
    pub qemu_argv: Vec<String>,
    /// Its console log's file name, in the boot's log directory.
    pub console_log: String,
    /// The guest's uptime when it said it was ready.
    pub uptime_at_ready: Option<f64>,
}

/// What a guest boots: its kernel and device tree, the initramfs its
/// network setup is added to.
#[derive(Debug, Clone, Copy)]
pub struct Image<'a> {
    /// The kernel image.
    pub kernel: &'a Path,
    /// The device tree, if the machine takes one.
    pub dtb: Option<&'a Path>,
    /// The guest's userspace (without a network setup).
    pub initramfs: &'a Initramfs,
}

impl RunningGuest {
    /// Starts `g`'s QEMU with `nics` and connects its console (QEMU starts
    /// the guest then); `/init` has not said anything yet.
    fn start(
        spec: &LabSpec,
        (topology, g): (&Topology, &topology::Guest),
        nics: &[QemuNic],
        image: Image<'_>,
        (dir, tag, sockets): (&Path, &str, &Path),
        model: Option<&CacheModel>,
    ) -> Result<RunningGuest> {
        let initrd = rootfs::with_setup(
            image.initramfs,
            &guest::overlay(&topology.name, g, spec.cpus)?,
        )?;
        let suffix = if topology.guests.len() == 1 {
            String::new()
        } else {
            format!("-{}", g.name)
        };
        let console_log = format!("console-{tag}{suffix}.log");
        let qemu_log = dir.join(format!("qemu-{tag}{suffix}.log"));
        let socket = sockets.join(format!("{}-console.sock", g.name));
        let model_socket = sockets.join(format!("{}-cache-model.sock", g.name));
        let plugin = model.map(|m| m.plugin_arg(&model_socket)).transpose()?;
        let boot = Boot {
            kernel: image.kernel,
            initramfs: &initrd,
            console_socket: &socket,
            dtb: image.dtb,
            plugin: plugin.as_deref(),
        };
        let args = qemu::argv(spec, boot, nics)
            .with_context(|| format!("guest {} of topology {}", g.name, topology.name))?;
        let mut command = Command::new(&spec.qemu);
        command.args(&args);
        let mut qemu_argv = vec![spec.qemu.clone()];
        qemu_argv.extend(args);
        let what = if topology.guests.len() == 1 {
            "QEMU".to_string()
        } else {
            format!("QEMU of {}", g.name)
        };
        let mut qemu = process::spawn(command, &what, &qemu_log)?;
        let console = Console::connect(&socket, &dir.join(&console_log), &mut qemu, START_TIMEOUT)
            .map_err(|e| with_qemu_log(e, &qemu_log))?;
        Ok(RunningGuest {
            console,
            qemu,
            name: g.name.clone(),
            counted: g.counted.clone(),
            gro: g.gro.clone(),
            model: model.map(|m| (m.clone(), model_socket)),
            qemu_log,
            qemu_argv,
            console_log,
            uptime_at_ready: None,
        })
    }

    /// Waits until `/init` says the network is set up.
    fn wait_ready(&mut self) -> Result<()> {
        let line = self
            .console
            .wait_for_line(
                0,
                &[READY, FAILED, "Kernel panic"],
                &mut self.qemu,
                BOOT_TIMEOUT,
                "booting the lab kernel",
            )
            .map_err(|e| {
                // QEMU runs but the guest hangs: the runner boots again.
                let hung = e.downcast_ref::<super::console::NoAnswer>().is_some();
                let e = with_qemu_log(e, &self.qemu_log);
                if hung {
                    e.context(super::runner::Stalled(format!(
                        "guest {} hung while booting (no answer within {} s)",
                        self.name,
                        BOOT_TIMEOUT.as_secs()
                    )))
                } else {
                    e
                }
            })?;
        if !line.contains(READY) {
            bail!(
                "guest {} did not come up: {line}\n{}",
                self.name,
                self.console.tail()
            );
        }
        self.uptime_at_ready = line.split_whitespace().last().and_then(|s| s.parse().ok());
        Ok(())
    }

    /// Runs `command` in the guest's shell, failing on a non-zero status.
    pub fn check(&mut self, command: &str) -> Result<String> {
        self.check_within(command, COMMAND_TIMEOUT)
    }

    /// [`RunningGuest::check`] within `timeout`.
    pub fn check_within(&mut self, command: &str, timeout: Duration) -> Result<String> {
        self.console
            .check(command, &mut self.qemu, timeout)
            .map_err(|e| anyhow::anyhow!("{e:#}\n{}", self.console.tail()))
    }

    /// The guest's connection-tracking table (`/proc/net/nf_conntrack`).
    pub fn conntrack(&mut self) -> Result<String> {
        self.check("cat /proc/net/nf_conntrack")
    }

    /// The last console lines.
    pub fn console_tail(&self) -> String {
        self.console.tail()
    }

    /// An error when its QEMU exited, with QEMU's own output.
    fn alive(&mut self) -> Result<()> {
        match self.qemu.try_status()? {
            // QEMU ended by a signal of the same interruption (a SIGTERM
            // sent to it too, exit status 0) is not a guest that died.
            Some(_) if interrupted() => super::process::check_interrupted(),
            Some(status) => Err(with_qemu_log(
                anyhow::anyhow!(
                    "{} exited ({status})\n{}",
                    self.qemu.what(),
                    self.console_tail()
                ),
                &self.qemu_log,
            )),
            None => Ok(()),
        }
    }
}

/// Adds QEMU's own output to a boot error (not to an interruption).
fn with_qemu_log(e: anyhow::Error, qemu_log: &Path) -> anyhow::Error {
    if interrupted() {
        return e;
    }
    let text =
        crate::util::fs::read_limited(qemu_log, crate::util::fs::FileLimit::log("QEMU log"), "")
            .unwrap_or_default();
    anyhow::anyhow!(
        "{e:#}\nQEMU's own output ({}):\n{}",
        qemu_log.display(),
        super::process::last_lines(&text, 10)
    )
}

/// What each guest's batman-adv and bridge and this machine's side of
/// the links look like, for the error of a topology whose guests do not
/// reach their endpoints (`batctl` says it has no mesh outside one):
/// `batctl n`, `batctl o`, its translation tables, BusyBox's `ip link`
/// and `ip addr`, each bridge port's STP state (`brport/state`: 3 is
/// forwarding) and each interface's packet counters in each guest
/// (through its console); `ip -s link` and `bridge link` in each
/// namespace of `plan`.
fn link_state(plan: &plan::NetPlan, guests: &mut [RunningGuest]) -> String {
    const GUEST: &str = "batctl n; batctl o; batctl tl; batctl tg; ip link; ip addr; \
        for p in /sys/class/net/*/brport; do echo \"$p $(cat $p/state)\"; done; \
        for n in /sys/class/net/*; do echo \"${n##*/} rx $(cat $n/statistics/rx_packets) tx $(cat $n/statistics/tx_packets)\"; done";
    let mut out = String::new();
    for g in guests.iter_mut() {
        let text = match g.console.run(GUEST, &mut g.qemu, COMMAND_TIMEOUT) {
            Ok((text, _)) => text,
            Err(e) => format!("({e:#})"),
        };
        out.push_str(&format!("guest {} ({GUEST}):\n{text}", g.name));
    }
    let namespaces = plan.create.iter().filter_map(|s| match s {
        net::Step::Namespace { name } => Some(name),
        _ => None,
    });
    for ns in namespaces {
        let link = net::ip::run_in(ns, "ip", &["-s", "link"]).unwrap_or_else(|e| format!("{e:#}"));
        let bridge = net::ip::run_in(ns, "bridge", &["link"]).unwrap_or_else(|e| format!("{e:#}"));
        out.push_str(&format!(
            "namespace {ns} (ip -s link; bridge link):\n{link}{bridge}"
        ));
    }
    for g in guests.iter() {
        out.push_str(&format!(
            "guest {}'s console:\n{}\n",
            g.name,
            g.console_tail()
        ));
    }
    out
}

/// The boot step of a mesh: until every router reaches every endpoint
/// across it.
pub const MESH_UP: &str = "mesh-up";
/// How long batman-adv may take to find its neighbours (an OGM a second).
const MESH_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a router of any other topology may take to reach its
/// endpoints after READY (ARP on a guest slowed by the cache model and a
/// loaded host).
const REACH_TIMEOUT: Duration = Duration::from_secs(30);

/// Waits until every guest pings every endpoint of `plan` (BusyBox's
/// `ping -c 1 -W 2` on the guest's console), within `timeout`, so that
/// the first run does not pay for, or fail on, finding its way. In a
/// mesh, batman-adv forwards a frame across `bat0` only to a client its
/// translation table names, so a run started right after boot finds no
/// route to the far endpoint (iperf3: "No route to host"); behind a NAT
/// router the endpoints and the router resolve each other by ARP, which
/// on a guest slowed by the cache model and a loaded host took longer
/// than the client's first connect (ath79, 2026-12-02: the control's
/// warm-up run got "No route to host"). Pinging from the guests (this
/// machine need not have `ping`) sends a frame from each router to each
/// endpoint and back, so both sides know each other before the first
/// run. The error names the guest and the endpoint not reached, with
/// what batman-adv, the bridges and this machine's side of the links
/// look like ([`link_state`]).
fn wait_reachable(
    plan: &plan::NetPlan,
    guests: &mut [RunningGuest],
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    for i in 0..guests.len() {
        for e in &plan.endpoints {
            let ping = format!("ping -c 1 -W 2 {}", e.address);
            let mut tries = 0;
            loop {
                if interrupted() {
                    bail!(
                        "interrupted (Ctrl-C or SIGTERM) while the guests pinged their endpoints"
                    );
                }
                let g = &mut guests[i];
                let (out, status) = g.console.run(&ping, &mut g.qemu, COMMAND_TIMEOUT)?;
                if status == 0 {
                    break;
                }
                tries += 1;
                if Instant::now() > deadline {
                    let name = g.name.clone();
                    bail!(
                        "guest {name} did not reach endpoint {} ({}) within {} s of READY ({tries} tries of `{ping}`; the last said: {})\n{}",
                        e.name,
                        e.address,
                        timeout.as_secs(),
                        out.trim(),
                        link_state(plan, guests)
                    );
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }
    }
    Ok(())
}

/// One boot of a topology: its guests and its network (see the module
/// docs).
pub struct QemuTestbed {
    // Field order is drop order: the guests (console, then QEMU), their
    // sockets, then the network.
    guests: Vec<RunningGuest>,
    _socket_dir: tempfile::TempDir,
    _net: Net,
    endpoints: Endpoints,
    measured: usize,
    /// Wall seconds from making the network to every guest being ready
    /// and reaching its endpoints.
    pub boot_seconds: f64,
    /// Where `boot_seconds` went ([`timing::BOOT_CONSOLE`],
    /// [`timing::BOOT_TAPS`], [`timing::BOOT_READY`], then
    /// [`timing::BOOT_REACH`] or a mesh's [`MESH_UP`]), over all guests.
    pub boot_steps: Vec<WallStep>,
    /// The machine's CPUs (`[lab] cpus`).
    cpus: u32,
}

impl QemuTestbed {
    /// Makes `topology`'s network, starts one QEMU per guest booting
    /// `image` (the measured guest with `model`'s plugin, serving its
    /// counters, [`Testbed::model_counters`]), and waits until every
    /// guest's `/init` says its network is set up and every guest pings
    /// every endpoint ([`wait_reachable`]). Logs go into `dir` as
    /// `console-<tag>.log` and `qemu-<tag>.log` (with `-<guest>` when
    /// the topology has more than one guest).
    pub fn boot(
        spec: &LabSpec,
        topology: &Topology,
        image: Image<'_>,
        (dir, tag): (&Path, &str),
        model: Option<&CacheModel>,
    ) -> Result<QemuTestbed> {
        let names = Names::next();
        let plan = plan::plan(topology, names)?;
        let mut net = Net::with_names(names);
        net.apply(&plan.create)?;
        let sockets = tempfile::Builder::new()
            .prefix(&net::socket_dir_prefix())
            .tempdir()
            .context("creating a directory for QEMU's console sockets")?;
        let started = Instant::now();
        let mut watch = Stopwatch::default();
        let mut guests: Vec<RunningGuest> = Vec::new();
        watch.time(timing::BOOT_CONSOLE, || -> Result<()> {
            for g in &topology.guests {
                let model = model.filter(|_| g.name == topology.measured);
                guests.push(RunningGuest::start(
                    spec,
                    (topology, g),
                    plan.nics(&g.name)?,
                    image,
                    (dir, tag, sockets.path()),
                    model,
                )?);
            }
            Ok(())
        })?;
        watch.time(timing::BOOT_TAPS, || -> Result<()> {
            net.wait_carrier(&plan.taps, START_TIMEOUT, || {
                guests
                    .iter_mut()
                    .try_for_each(|g| g.alive().context("QEMU exited before opening its taps"))
            })?;
            net.apply(&plan.attach)
        })?;
        watch.time(timing::BOOT_READY, || {
            guests.iter_mut().try_for_each(RunningGuest::wait_ready)
        })?;
        let measured = topology
            .guests
            .iter()
            .position(|g| g.name == topology.measured)
            .context("the topology's measured guest is not one of its guests")?;
        if topology.guests.iter().any(|g| g.batman.is_some()) {
            watch.time(MESH_UP, || wait_reachable(&plan, &mut guests, MESH_TIMEOUT))?;
        } else if !plan.endpoints.is_empty() {
            watch.time(timing::BOOT_REACH, || {
                wait_reachable(&plan, &mut guests, REACH_TIMEOUT)
            })?;
        }
        let endpoints = Endpoints {
            list: plan
                .endpoints
                .iter()
                .map(|e| EndpointUp {
                    name: e.name.clone(),
                    netns: e.netns.clone(),
                    address: Some(e.address),
                })
                .collect(),
            masquerade: topology.masquerade,
        };
        Ok(QemuTestbed {
            guests,
            _socket_dir: sockets,
            _net: net,
            endpoints,
            measured,
            boot_seconds: started.elapsed().as_secs_f64(),
            boot_steps: watch.into_steps(),
            cpus: spec.cpus,
        })
    }

    /// The measured guest's default egress qdisc
    /// (`/proc/sys/net/core/default_qdisc`), read over its console.
    pub fn default_qdisc(&mut self) -> Result<String> {
        let out = self
            .measured()
            .check("cat /proc/sys/net/core/default_qdisc")
            .context("reading the guest's default qdisc")?;
        Ok(out.trim().to_string())
    }

    /// The guests, in the topology's order.
    pub fn guests(&self) -> &[RunningGuest] {
        &self.guests
    }

    /// The guest called `name`.
    pub fn guest(&mut self, name: &str) -> Result<&mut RunningGuest> {
        self.guests
            .iter_mut()
            .find(|g| g.name == name)
            .with_context(|| format!("this testbed has no guest {name}"))
    }

    /// The guest each run samples.
    pub fn measured(&mut self) -> &mut RunningGuest {
        &mut self.guests[self.measured]
    }

    /// One iperf3 run of `seconds` from endpoint `client` to `server` in
    /// `direction` ([`super::iperf::run`]), the reports kept as
    /// `<prefix>-client.json` and `<prefix>-server.json` in `dir`.
    pub fn iperf(
        &mut self,
        (client, server): (&str, &str),
        direction: Direction,
        seconds: u32,
        (dir, prefix): (&Path, &str),
    ) -> Result<RunOutput> {
        super::iperf::run(
            self,
            (client, server),
            (direction, Default::default()),
            seconds,
            (dir, prefix),
        )
    }
}

impl Testbed for QemuTestbed {
    fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    fn set_gro(&mut self, gro: Gro) -> Result<()> {
        let v = gro.word();
        for g in &mut self.guests {
            if g.gro.is_empty() {
                continue;
            }
            let calls: Vec<String> = g
                .gro
                .iter()
                .map(|n| format!("ethtool -K {n} gro {v}"))
                .collect();
            g.check(&calls.join(" && "))
                .with_context(|| format!("switching GRO {v} in guest {}", g.name))?;
        }
        Ok(())
    }

    fn sample(&mut self, point: SamplePoint) -> Result<GuestSample> {
        let g = self.measured();
        let [a, b] = g.counted.clone();
        let out = g.check(&format!("{SAMPLE} {} {a} {b}", point.word()))?;
        GuestSample::parse_counted(&out, [&a, &b])
    }

    fn diagnostics(&self) -> String {
        match self.guests.as_slice() {
            [one] => one.console_tail(),
            many => many
                .iter()
                .map(|g| format!("guest {}'s console:\n{}", g.name, g.console_tail()))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    fn check_alive(&mut self) -> Result<()> {
        for g in &mut self.guests {
            g.alive().context("during the run")?;
        }
        Ok(())
    }

    fn cpus(&self) -> u32 {
        self.cpus
    }

    fn model_counters(&mut self) -> Result<Option<Snapshot>> {
        let g = self.measured();
        let Some((model, socket)) = &g.model else {
            return Ok(None);
        };
        match model.read(socket) {
            Ok(c) => Ok(Some(c)),
            Err(e) => match g.qemu.try_status() {
                Ok(Some(_)) if interrupted() => super::process::check_interrupted().and(Err(e)),
                Ok(Some(status)) => Err(e.context(format!("QEMU exited ({status})"))),
                _ => Err(e),
            },
        }
    }

    fn model_timing(&self) -> Option<&CoreTiming> {
        let g = &self.guests[self.measured];
        g.model.as_ref().and_then(|(m, _)| m.info.timing.as_ref())
    }

    fn guest_shell(&mut self, guest: &str, command: &str, timeout: Duration) -> Result<String> {
        self.guest(guest)?.check_within(command, timeout)
    }
}
