//! The real router as a [`Testbed`]: GRO switched with `ethtool -K` over
//! ssh (and read back with `ethtool -k`), its counters read in one ssh
//! call of `grep -H . FILES…`, which prefixes each line with its file so
//! the output parses without ambiguity.
//!
//! What the samples mean on real hardware: busy time from the router's
//! `/proc/stat` (every CPU, USER_HZ ticks of 10 ms) over the packets its
//! LAN and WAN interfaces received. That is real CPU time per packet —
//! no `-icount` here, so it includes cache, TLB and branch-layout effects
//! and whatever else the router's CPU did — at a 10 ms resolution, which
//! long runs (`--duration`) average out.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};

use super::remote::Ssh;
use crate::inputs::ssh_lab::RouterSide;
use crate::lab::backend::{Endpoints, Gro, Testbed};
use crate::lab::guest::SamplePoint;
use crate::lab::sample::{GuestSample, NicCounters};

/// The statistics files read per interface, in [`NicCounters`]' order.
const STATISTICS: [&str; 6] = [
    "rx_packets",
    "tx_packets",
    "rx_bytes",
    "tx_bytes",
    "rx_dropped",
    "tx_dropped",
];

/// A real router reached over ssh.
pub struct SshRouter {
    /// How to reach it.
    pub ssh: Ssh,
    /// Its interfaces.
    pub side: RouterSide,
    /// Where iperf3 runs.
    pub endpoints: Endpoints,
    last: String,
    /// The router's own counters.
    perf: Perf,
}

/// Where a router's `perf` is ([`super::perf`]).
enum Perf {
    /// The router has none.
    Absent,
    /// Between runs.
    Idle,
    /// Counting a run's traffic.
    Counting(super::perf::Counting),
}

impl SshRouter {
    /// The router `side` describes, reached with `ssh`.
    pub fn new(ssh: Ssh, side: RouterSide, endpoints: Endpoints) -> SshRouter {
        SshRouter {
            ssh,
            side,
            endpoints,
            last: String::new(),
            perf: Perf::Absent,
        }
    }

    /// The router, counting each run's traffic with its `perf`
    /// ([`super::perf`]).
    pub fn counting_with_perf(self) -> SshRouter {
        SshRouter {
            perf: Perf::Idle,
            ..self
        }
    }

    fn files(&self) -> Vec<String> {
        let mut files = Vec::new();
        for interface in [&self.side.lan_interface, &self.side.wan_interface] {
            for s in STATISTICS {
                files.push(format!("/sys/class/net/{interface}/statistics/{s}"));
            }
        }
        files.extend(
            ["/proc/uptime", "/proc/stat", "/proc/interrupts"]
                .iter()
                .map(|s| s.to_string()),
        );
        files
    }

    /// Checks both interfaces exist on the router.
    pub fn check_interfaces(&mut self) -> Result<()> {
        for interface in self
            .side
            .gro_interfaces
            .iter()
            .chain([&self.side.lan_interface, &self.side.wan_interface])
        {
            let path = format!("/sys/class/net/{interface}/ifindex");
            self.ssh
                .check(&["cat", &path])
                .with_context(|| format!("the router has no interface {interface:?}"))?;
        }
        Ok(())
    }
}

impl Testbed for SshRouter {
    fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    fn set_gro(&mut self, gro: Gro) -> Result<()> {
        for interface in self.side.gro_interfaces.clone() {
            self.ssh
                .check(&["ethtool", "-K", &interface, "gro", gro.word()])
                .with_context(|| {
                    format!("switching GRO {} on the router's {interface}", gro.word())
                })?;
            let shown = self.ssh.check(&["ethtool", "-k", &interface])?;
            let now = shown
                .lines()
                .find_map(|l| l.trim().strip_prefix("generic-receive-offload:"))
                .map(|v| v.split_whitespace().next().unwrap_or(""));
            if now != Some(gro.word()) {
                self.last = shown.clone();
                bail!(
                    "the router's {interface} keeps GRO at {now:?} after `ethtool -K {interface} gro {}`",
                    gro.word()
                );
            }
        }
        Ok(())
    }

    /// One `grep` process reads every file, so the order (and `point`)
    /// costs nothing measurable on the router.
    fn sample(&mut self, _point: SamplePoint) -> Result<GuestSample> {
        let files = self.files();
        let mut words = vec!["grep", "-H", "."];
        words.extend(files.iter().map(String::as_str));
        let text = self
            .ssh
            .check(&words)
            .context("sampling the router's counters")?;
        self.last = text.clone();
        parse_sample(&text, &files, &self.side.interrupt_names)
    }

    fn start_router_counters(&mut self) -> Result<()> {
        if !matches!(self.perf, Perf::Absent) {
            self.perf = Perf::Counting(super::perf::Counting::start(&self.ssh)?);
        }
        Ok(())
    }

    /// A perf that fails is said and the run keeps its other figures.
    fn stop_router_counters(&mut self) -> Result<Option<BTreeMap<String, u64>>> {
        let counting = match std::mem::replace(&mut self.perf, Perf::Idle) {
            Perf::Counting(counting) => counting,
            other => {
                self.perf = other;
                return Ok(None);
            }
        };
        match counting.stop() {
            Ok(counts) => Ok(Some(counts)),
            Err(e) => {
                eprintln!("lab: note: {e:#}; this run records no router counters");
                Ok(None)
            }
        }
    }

    fn diagnostics(&self) -> String {
        if self.last.is_empty() {
            String::new()
        } else {
            format!(
                "the router's last answer:\n{}",
                crate::lab::process::last_lines(&self.last, 10)
            )
        }
    }
}

/// Parses `grep -H . FILES…` output: the 12 statistics files, then
/// `/proc/uptime`, `/proc/stat` and `/proc/interrupts` (as
/// [`SshRouter::files`] lists them); interrupts are counted on the lines
/// whose last word is one of `irq_names`.
fn parse_sample(text: &str, files: &[String], irq_names: &[String]) -> Result<GuestSample> {
    let lines_of = |file: &str| -> Vec<&str> {
        text.lines()
            .filter_map(|l| l.strip_prefix(file).and_then(|r| r.strip_prefix(':')))
            .collect()
    };
    let number = |file: &str| -> Result<u64> {
        lines_of(file)
            .first()
            .and_then(|v| v.trim().parse().ok())
            .with_context(|| format!("the router's {file} is missing or not a number"))
    };
    let mut nics = Vec::new();
    for chunk in files[..12].chunks(6) {
        let v: Vec<u64> = chunk.iter().map(|f| number(f)).collect::<Result<_>>()?;
        let v: [u64; 6] = v.try_into().expect("chunks of 6");
        nics.push(NicCounters::from(v));
    }
    let uptime_seconds = lines_of("/proc/uptime")
        .first()
        .and_then(|l| l.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .context("the router's /proc/uptime is missing")?;
    let cpu_ticks: Vec<u64> = lines_of("/proc/stat")
        .iter()
        .find_map(|l| l.strip_prefix("cpu "))
        .context("the router's /proc/stat has no cpu line")?
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .context("the router's /proc/stat cpu line")?;
    if cpu_ticks.len() < 4 {
        bail!("the router's /proc/stat cpu line is short: {cpu_ticks:?}");
    }
    let nic_interrupts = lines_of("/proc/interrupts")
        .iter()
        .filter(|l| {
            l.split_whitespace()
                .last()
                .is_some_and(|name| irq_names.iter().any(|n| n == name))
        })
        .map(|l| {
            l.split_whitespace()
                .skip(1)
                .map_while(|w| w.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum();
    Ok(GuestSample {
        cpu_ticks,
        lan: nics[0],
        wan: nics[1],
        uptime_seconds,
        nic_interrupts,
        ip_in_receives: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grep_h_output_parses_into_a_sample() {
        let side = RouterSide {
            lan_interface: "lan".to_string(),
            wan_interface: "wan".to_string(),
            gro_interfaces: vec![],
            interrupt_names: vec!["eth0".to_string()],
            wan_address: "203.0.113.1".parse().unwrap(),
        };
        let router = SshRouter::new(
            Ssh {
                destination: crate::inputs::ssh_lab::Destination::parse("ssh://r").unwrap(),
                identity: None,
                options: vec![],
                netns: None,
                timeouts: Default::default(),
                log: None,
            },
            side.clone(),
            Endpoints::default(),
        );
        let files = router.files();
        let mut text = String::new();
        for (i, f) in files[..12].iter().enumerate() {
            text.push_str(&format!("{f}:{}\n", i * 10));
        }
        text.push_str("/proc/uptime:123.45 200.00\n");
        text.push_str("/proc/stat:cpu  100 0 50 1000 0 5 45 0 0 0\n/proc/stat:cpu0 1 2 3 4\n");
        text.push_str("/proc/interrupts:           CPU0       CPU1\n");
        text.push_str("/proc/interrupts: 25:       1000        500     GIC-0 52 Level     eth0\n");
        text.push_str("/proc/interrupts: 26:          7          0     GIC-0 53 Level     uart\n");
        let s = parse_sample(&text, &files, &side.interrupt_names).unwrap();
        assert_eq!(s.lan.rx_packets, 0);
        assert_eq!(s.lan.tx_dropped, 50);
        assert_eq!(s.wan.rx_packets, 60);
        assert_eq!(s.uptime_seconds, 123.45);
        assert_eq!(s.busy_ticks(), 200);
        assert_eq!(s.nic_interrupts, 1500);
        let broken = text.replace("/proc/stat:cpu  ", "/proc/stat:cpux ");
        assert!(parse_sample(&broken, &files, &side.interrupt_names).is_err());
    }
}
