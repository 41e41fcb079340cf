//! The lab's network: namespace `lan` — tap — guest — tap — namespace
//! `wan`, named per process and boot (`xlab-<pid>-<n>-lan`, tap
//! `xl<pid>_<n>l`) so two runs never collide, and removed when the
//! [`Topology`] is dropped.
//!
//! The namespaces have no link to the host's network: all lab traffic
//! stays between them and the guest. The taps are created in the host's
//! namespace (where QEMU opens them by name) and moved into their
//! namespace once QEMU holds them ([`Topology::attach`]). Their offloads
//! are off: with them on the host hands the guest 64 KB GSO frames and the
//! numbers mean nothing.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::guest::{GUEST_LAN_IP, GUEST_WAN_IP, LAN_HOST_IP, PREFIX, WAN_HOST_IP};
use super::process::{last_lines, tick, ChildGuard, POLL};

/// The kernel's table of IPv4 TCP sockets, for [`wait_listening`].
pub const TCP: &str = "/proc/net/tcp";

/// The kernel's table of IPv6 TCP sockets, for [`wait_listening`].
pub const TCP6: &str = "/proc/net/tcp6";

/// Prefix of every namespace the lab creates.
pub const NETNS_PREFIX: &str = "xlab-";
/// Prefix of every tap the lab creates.
pub const TAP_PREFIX: &str = "xl";

/// Longest a single `ip`/`ethtool` call may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(20);

/// One side of the router.
#[derive(Debug, Clone)]
pub struct Side {
    /// Network namespace name.
    pub netns: String,
    /// Tap device name.
    pub tap: String,
    /// The host address in the namespace.
    pub host_ip: &'static str,
    /// The guest's address on this side.
    pub guest_ip: &'static str,
}

/// The namespaces and taps of one lab process; removed on drop.
#[derive(Debug)]
pub struct Topology {
    /// The LAN side (iperf3 client).
    pub lan: Side,
    /// The WAN side (iperf3 server).
    pub wan: Side,
    created: Vec<String>,
    taps: Vec<String>,
}

/// Runs `ip`/`ethtool`/… with `args`, failing with its output (and as
/// soon as Ctrl-C arrived).
pub fn tool(program: &str, args: &[&str]) -> Result<String> {
    run_tool(program, args, true)
}

/// Like [`tool`], but runs to the end after Ctrl-C: for cleaning up.
pub fn cleanup_tool(program: &str, args: &[&str]) -> Result<String> {
    run_tool(program, args, false)
}

fn run_tool(program: &str, args: &[&str], interruptible: bool) -> Result<String> {
    let mut cmd = Command::new(program);
    cmd.args(args);
    let out = run_with_timeout(cmd, STEP_TIMEOUT, interruptible)
        .with_context(|| format!("running {program} {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            last_lines(&String::from_utf8_lossy(&out.stderr), 5)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn run_with_timeout(
    mut cmd: Command,
    timeout: Duration,
    interruptible: bool,
) -> Result<std::process::Output> {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| {
            format!(
                "starting {}; is it installed? (`cargo xtask setup`)",
                cmd.get_program().to_string_lossy()
            )
        })?;
    let deadline = Instant::now() + timeout;
    loop {
        if child.try_wait()?.is_some() {
            return Ok(child.wait_with_output()?);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("timed out after {} s", timeout.as_secs());
        }
        if interruptible {
            tick()?;
        } else {
            std::thread::sleep(POLL);
        }
    }
}

/// Waits up to `timeout` until something listens on TCP `port` in
/// `netns` (its `table`, `/proc/net/tcp` or `/proc/net/tcp6`, read from
/// inside it); fails at once when `server` exits first.
pub fn wait_listening(
    (netns, table): (&str, &str),
    port: u16,
    server: &mut ChildGuard,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let local = format!(":{port:04X} ");
    loop {
        let table = tool("ip", &["netns", "exec", netns, "cat", table])?;
        // Columns: sl local_address rem_address st …; st 0A is LISTEN.
        let listening = table.lines().any(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.len() > 3 && format!("{} ", cols[1]).ends_with(&local) && cols[3] == "0A"
        });
        if listening {
            return Ok(());
        }
        if let Some(status) = server.try_status()? {
            bail!("the {} exited ({status}) before listening", server.what);
        }
        if Instant::now() >= deadline {
            bail!(
                "the {} did not listen on port {port} within {} s",
                server.what,
                timeout.as_secs()
            );
        }
        tick()?;
    }
}

static SERIAL: AtomicU32 = AtomicU32::new(0);

impl Topology {
    /// Creates both namespaces (loopback up) and both taps (up, in the
    /// host's namespace), named after this process and a counter. Whatever
    /// was created is removed again if a later step fails.
    pub fn create() -> Result<Topology> {
        let id = std::process::id();
        let n = SERIAL.fetch_add(1, Ordering::SeqCst) % 100;
        let mut topo = Topology {
            lan: Side {
                netns: format!("{NETNS_PREFIX}{id}-{n}-lan"),
                tap: format!("{TAP_PREFIX}{id}_{n}l"),
                host_ip: LAN_HOST_IP,
                guest_ip: GUEST_LAN_IP,
            },
            wan: Side {
                netns: format!("{NETNS_PREFIX}{id}-{n}-wan"),
                tap: format!("{TAP_PREFIX}{id}_{n}w"),
                host_ip: WAN_HOST_IP,
                guest_ip: GUEST_WAN_IP,
            },
            created: Vec::new(),
            taps: Vec::new(),
        };
        for side in [topo.lan.clone(), topo.wan.clone()] {
            tool("ip", &["netns", "add", &side.netns])
                .context("creating the lab's network namespaces (the lab runs as root)")?;
            topo.created.push(side.netns.clone());
            tool("ip", &["-n", &side.netns, "link", "set", "lo", "up"])?;
            tool("ip", &["tuntap", "add", "dev", &side.tap, "mode", "tap"])
                .context("creating a tap device (needs /dev/net/tun)")?;
            topo.taps.push(side.tap.clone());
            tool("ip", &["link", "set", &side.tap, "up"])?;
        }
        Ok(topo)
    }

    /// Once QEMU holds both taps (their carrier comes up), moves each into
    /// its namespace, addresses it, turns its offloads off and routes the
    /// LAN through the guest. Fails after `timeout`, or as soon as
    /// `still_running` (QEMU's check) fails.
    pub fn attach(
        &self,
        timeout: Duration,
        mut still_running: impl FnMut() -> Result<()>,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        for side in [&self.lan, &self.wan] {
            let carrier = format!("/sys/class/net/{}/carrier", side.tap);
            while !std::fs::read_to_string(&carrier).is_ok_and(|s| s.trim() == "1") {
                still_running()?;
                if Instant::now() >= deadline {
                    bail!(
                        "QEMU did not open tap {} within {} s",
                        side.tap,
                        timeout.as_secs()
                    );
                }
                tick()?;
            }
        }
        for side in [&self.lan, &self.wan] {
            let (ns, tap) = (side.netns.as_str(), side.tap.as_str());
            tool("ip", &["link", "set", tap, "netns", ns])?;
            let addr = format!("{}/{PREFIX}", side.host_ip);
            tool("ip", &["-n", ns, "addr", "add", &addr, "dev", tap])?;
            tool("ip", &["-n", ns, "link", "set", tap, "up"])?;
            tool(
                "ip",
                &[
                    "netns", "exec", ns, "ethtool", "-K", tap, "tx", "off", "sg", "off", "tso",
                    "off", "gso", "off", "gro", "off",
                ],
            )
            .context("turning the tap's offloads off (ethtool)")?;
        }
        tool(
            "ip",
            &[
                "-n",
                &self.lan.netns,
                "route",
                "add",
                "default",
                "via",
                self.lan.guest_ip,
            ],
        )?;
        Ok(())
    }

    /// Removes the taps and namespaces now; errors are reported, not returned.
    pub fn remove(&mut self) {
        for tap in self.taps.drain(..) {
            // In the host's namespace until attach(); afterwards it goes
            // with its namespace.
            if std::path::Path::new("/sys/class/net").join(&tap).exists() {
                if let Err(e) = cleanup_tool("ip", &["link", "del", &tap]) {
                    eprintln!("warning: removing tap {tap}: {e:#}");
                }
            }
        }
        for ns in self.created.drain(..) {
            if let Err(e) = cleanup_tool("ip", &["netns", "del", &ns]) {
                eprintln!("warning: removing network namespace {ns}: {e:#}");
            }
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Readies this process for a lab: Ctrl-C and SIGTERM stop it cleanly
/// ([`crate::util::cancel::install_handler`]), and what a killed lab
/// left is removed ([`remove_stale`]) and named on stderr after `who`
/// (`lab`, `bench`).
pub fn start_clean(who: &str) -> Result<()> {
    crate::util::cancel::install_handler();
    let stale = remove_stale()?;
    if !stale.is_empty() {
        eprintln!(
            "{who}: removed what an interrupted lab left: {}",
            stale.join(", ")
        );
    }
    Ok(())
}

/// Prefix of a boot's directory in the system's temporary directory (QEMU's
/// console and cache-model sockets): `xlab-<pid>-`, so that
/// [`remove_stale`] knows a dead lab's.
pub fn socket_dir_prefix() -> String {
    format!("{NETNS_PREFIX}{}-", std::process::id())
}

/// Removes namespaces, taps and socket directories an earlier lab process
/// left (killed with SIGKILL, say): those named after a process id that no
/// longer runs. Its QEMU and iperf3 died with it (they get SIGKILL when
/// the lab dies, [`super::process::ChildGuard`]). Returns what was
/// removed.
pub fn remove_stale() -> Result<Vec<String>> {
    let mut removed = Vec::new();
    let dead = |id: &str| {
        id.parse::<u32>()
            .is_ok_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
    };
    let tmp = std::env::temp_dir();
    if let Ok(entries) = std::fs::read_dir(&tmp) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(rest) = name.strip_prefix(NETNS_PREFIX) else {
                continue;
            };
            let id = rest.split('-').next().unwrap_or("");
            if dead(id) && entry.path().is_dir() {
                std::fs::remove_dir_all(entry.path())
                    .with_context(|| format!("removing {}", entry.path().display()))?;
                removed.push(entry.path().display().to_string());
            }
        }
    }
    let netns = tool("ip", &["netns", "list"])?;
    for name in netns.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(rest) = name.strip_prefix(NETNS_PREFIX) else {
            continue;
        };
        let id = rest.split('-').next().unwrap_or("");
        if dead(id) {
            cleanup_tool("ip", &["netns", "del", name])?;
            removed.push(name.to_string());
        }
    }
    let links = std::fs::read_dir("/sys/class/net").context("reading /sys/class/net")?;
    for link in links {
        let name = link?.file_name().to_string_lossy().into_owned();
        let Some((pid, rest)) = name
            .strip_prefix(TAP_PREFIX)
            .and_then(|r| r.split_once('_'))
        else {
            continue;
        };
        let is_lab_tap = (rest.ends_with('l') || rest.ends_with('w'))
            && rest[..rest.len() - 1].bytes().all(|b| b.is_ascii_digit());
        if is_lab_tap && dead(pid) {
            cleanup_tool("ip", &["link", "del", &name])?;
            removed.push(name);
        }
    }
    Ok(removed)
}
