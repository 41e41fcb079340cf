//! What the guest's counters were ([`GuestSample`], parsed from the lab's
//! sampling script's `XL …` lines), the work they show during one run
//! ([`GuestWork`]: busy time per forwarded packet in ns/packet), and the
//! guest's initramfs ([`Initramfs`]) as `lab.json` records them.
//!
//! Guest CPU time per forwarded packet, ns/packet: the guest's busy time
//! (every `/proc/stat` CPU field but idle and iowait, in USER_HZ ticks of
//! 10 ms) over the packets its two NICs received, during the run. Under
//! `-icount` guest time counts instructions, so this is a path-length proxy
//! that host load does not disturb; it cannot see cache or layout effects.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// `/proc/stat` ticks per second (USER_HZ, 100 on every Linux architecture).
pub const USER_HZ: u64 = 100;

/// One NIC's counters (`/sys/class/net/<nic>/statistics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicCounters {
    /// Packets received.
    pub rx_packets: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Received packets dropped.
    pub rx_dropped: u64,
    /// Packets dropped on sending.
    pub tx_dropped: u64,
}

impl From<[u64; 6]> for NicCounters {
    /// The counters in the order above (the guest's sampling script's).
    fn from(
        [rx_packets, tx_packets, rx_bytes, tx_bytes, rx_dropped, tx_dropped]: [u64; 6],
    ) -> Self {
        NicCounters {
            rx_packets,
            tx_packets,
            rx_bytes,
            tx_bytes,
            rx_dropped,
            tx_dropped,
        }
    }
}

/// The guest's counters at one instant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuestSample {
    /// The aggregate `cpu` line of `/proc/stat`: user nice system idle
    /// iowait irq softirq steal …, in USER_HZ ticks.
    pub cpu_ticks: Vec<u64>,
    /// The LAN NIC.
    pub lan: NicCounters,
    /// The WAN NIC.
    pub wan: NicCounters,
    /// Guest uptime in seconds (guest time).
    pub uptime_seconds: f64,
    /// Interrupts the two NICs raised so far (all CPUs).
    #[serde(default)]
    pub nic_interrupts: u64,
    /// IP datagrams received so far (`InReceives` of `/proc/net/snmp`'s
    /// `Ip:` lines, RFC 4293's ipSystemStatsInReceives); `None` where
    /// the sample does not read it (a real router over SSH, older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_in_receives: Option<u64>,
}

impl GuestSample {
    /// Parses the sampling script's `XL …` lines for NICs `lan` and
    /// `wan`; other lines (kernel messages on the console) are ignored.
    pub fn parse(text: &str) -> Result<GuestSample> {
        GuestSample::parse_counted(text, ["lan", "wan"])
    }

    /// [`GuestSample::parse`] of a guest whose counted NICs are `nics`:
    /// the first's counters are [`GuestSample::lan`], the second's
    /// [`GuestSample::wan`].
    pub fn parse_counted(text: &str, nics: [&str; 2]) -> Result<GuestSample> {
        let mut cpu = None;
        let (mut lan, mut wan, mut uptime) = (None, None, None);
        let mut nic_interrupts = 0;
        let mut ip_in_receives = None;
        for line in text.lines() {
            let mut words = line.split_whitespace();
            if words.next() != Some("XL") {
                continue;
            }
            match words.next() {
                Some("stat") if words.next() == Some("cpu") => {
                    cpu = Some(
                        words
                            .map(str::parse)
                            .collect::<Result<Vec<u64>, _>>()
                            .with_context(|| format!("bad /proc/stat line {line:?}"))?,
                    );
                }
                Some("net") => {
                    let nic = words.next();
                    let v = words
                        .map(str::parse)
                        .collect::<Result<Vec<u64>, _>>()
                        .with_context(|| format!("bad NIC counters {line:?}"))?;
                    let Ok(v) = <[u64; 6]>::try_from(v) else {
                        bail!("bad NIC counters {line:?}");
                    };
                    let c = NicCounters::from(v);
                    if nic == Some(nics[0]) {
                        lan = Some(c);
                    } else if nic == Some(nics[1]) {
                        wan = Some(c);
                    }
                }
                Some("uptime") => uptime = words.next().and_then(|s| s.parse().ok()),
                Some("irq") => {
                    nic_interrupts = words.next().and_then(|s| s.parse().ok()).unwrap_or(0)
                }
                Some("ip") => ip_in_receives = words.next().and_then(|s| s.parse().ok()),
                _ => {}
            }
        }
        match (cpu, lan, wan, uptime) {
            (Some(cpu_ticks), Some(lan), Some(wan), Some(uptime_seconds))
                if cpu_ticks.len() >= 4 =>
            {
                Ok(GuestSample {
                    cpu_ticks,
                    lan,
                    wan,
                    uptime_seconds,
                    nic_interrupts,
                    ip_in_receives,
                })
            }
            _ => bail!("the guest's sample is incomplete:\n{text}"),
        }
    }

    /// Busy ticks: every CPU field but idle (4th) and iowait (5th).
    pub fn busy_ticks(&self) -> u64 {
        self.cpu_ticks
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != 3 && *i != 4)
            .map(|(_, v)| v)
            .sum()
    }

    /// Packets received by both NICs: each forwarded packet is received once.
    pub fn rx_packets(&self) -> u64 {
        self.lan.rx_packets + self.wan.rx_packets
    }
}

/// The guest's work during a run, from samples before and after.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GuestWork {
    /// Busy ticks (USER_HZ) during the run.
    pub busy_ticks: u64,
    /// Packets received by both NICs during the run.
    pub packets: u64,
    /// Guest seconds that passed (uptime difference).
    pub guest_seconds: f64,
    /// Busy time per received packet, in ns; `None` without packets.
    pub ns_per_packet: Option<f64>,
    /// Packets per NIC interrupt: how much NAPI batched. A diagnostic:
    /// batching depends on how fast QEMU runs against the packets' arrival
    /// in host time, and the per-interrupt cost is spread over the batch,
    /// so ns/packet moves with it between boots.
    #[serde(default)]
    pub packets_per_interrupt: Option<f64>,
    /// IP datagrams the guest received during the run (`InReceives`);
    /// `None` where the samples do not read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_datagrams: Option<u64>,
    /// Frames the NICs received per IP datagram, [`GuestWork::packets`]
    /// over [`GuestWork::ip_datagrams`]: what GRO merged (about 1 when it
    /// merges nothing; a TCP stream's frames merge up to 64 KB datagrams).
    /// `None` without datagrams or where they are not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames_per_ip_datagram: Option<f64>,
}

impl GuestWork {
    /// The difference `after - before`.
    pub fn between(before: &GuestSample, after: &GuestSample) -> GuestWork {
        let busy_ticks = after.busy_ticks().saturating_sub(before.busy_ticks());
        let packets = after.rx_packets().saturating_sub(before.rx_packets());
        let ns_per_packet =
            (packets > 0).then(|| busy_ticks as f64 * (1e9 / USER_HZ as f64) / packets as f64);
        let interrupts = after.nic_interrupts.saturating_sub(before.nic_interrupts);
        let ip_datagrams = before
            .ip_in_receives
            .zip(after.ip_in_receives)
            .map(|(b, a)| a.saturating_sub(b));
        GuestWork {
            busy_ticks,
            packets,
            packets_per_interrupt: (interrupts > 0).then(|| packets as f64 / interrupts as f64),
            ip_datagrams,
            frames_per_ip_datagram: ip_datagrams
                .filter(|&d| d > 0)
                .map(|d| packets as f64 / d as f64),
            guest_seconds: after.uptime_seconds - before.uptime_seconds,
            ns_per_packet,
        }
    }
}

/// One unpacked package (or one file of a source package).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DebRecord {
    /// The `.deb` file name (`name_version_arch.deb`), or a source
    /// package's `.dsc` or tarball.
    pub file: String,
    /// sha256 of the file, lowercase hex.
    pub sha256: String,
}

/// A ready initramfs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Initramfs {
    /// The `newc` cpio archive (uncompressed).
    pub path: PathBuf,
    /// sha256 of the archive.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// Debian architecture of its binaries.
    pub arch: String,
    /// The Debian packages in it: `.deb` files, or for a static guest the
    /// source packages' files (`.dsc`, tarballs) its programs were built
    /// from.
    pub packages: Vec<DebRecord>,
    /// A static guest's programs: what each was built from and how
    /// (`lab::static_guest`); empty for Debian's binary packages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub built: Vec<BuiltProgram>,
    /// A static guest's cross compiler: `gcc --version`'s first line, its
    /// target triplet, and `package version` of its Debian packages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub toolchain: Vec<String>,
    /// The masquerade ruleset the measured guest's `/init` loads, in words
    /// (`nat-router (table ip xl: …)`, `firewall4 (table inet fw4: …)`;
    /// `lab::topology::Ruleset::describe`), recorded by the lab;
    /// `None` in the cache's manifest and in older files, whose guests
    /// loaded the nat-router's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ruleset: Option<String>,
}

/// One program a static guest's initramfs holds, built by the lab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuiltProgram {
    /// Path in the guest, without the leading `/` (`bin/busybox`).
    pub path: String,
    /// What it was built from: `<source package> <Debian version>`
    /// (`busybox 1:1.35.0-4+deb12u1`), or a file of this repository.
    pub source: String,
    /// How: the configuration and the build's arguments.
    pub build: String,
    /// sha256 of the (stripped) binary, lowercase hex.
    pub sha256: String,
    /// Wall-clock seconds its build took (unpacking included; `-j1`, nice).
    pub build_seconds: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "XL-BEGIN-3\nXL stat cpu  100 0 50 1000 0 5 45 0 0 0\n\
        XL net lan 10 20 1000 2000 0 0\n[   12.3] some kernel line\n\
        XL net wan 30 40 3000 4000 0 0\nXL irq 1000\nXL ip 45\nXL uptime 12.50\n";
    const AFTER: &str = "XL stat cpu  150 0 250 1100 0 5 145 0 0 0\n\
        XL net lan 5010 20 1000 2000 0 0\nXL net wan 5030 40 3000 4000 0 0\nXL irq 3000\n\
        XL ip 2545\nXL uptime 15.50\n";

    #[test]
    fn busy_time_per_packet_from_two_samples() {
        let (a, b) = (
            GuestSample::parse(BEFORE).unwrap(),
            GuestSample::parse(AFTER).unwrap(),
        );
        assert_eq!(a.busy_ticks(), 200);
        let w = GuestWork::between(&a, &b);
        assert_eq!(w.busy_ticks, 350);
        assert_eq!(w.packets, 10_000);
        assert_eq!(w.guest_seconds, 3.0);
        // 350 ticks of 10 ms over 10000 packets.
        assert_eq!(w.ns_per_packet, Some(350_000.0));
        assert_eq!(w.packets_per_interrupt, Some(5.0));
        // 10,000 frames entered IP as 2,500 datagrams.
        assert_eq!(w.ip_datagrams, Some(2500));
        assert_eq!(w.frames_per_ip_datagram, Some(4.0));
        let mut old = a.clone();
        old.ip_in_receives = None;
        let w = GuestWork::between(&old, &b);
        assert_eq!((w.ip_datagrams, w.frames_per_ip_datagram), (None, None));
    }

    #[test]
    fn an_incomplete_sample_is_an_error() {
        let err = GuestSample::parse("XL stat cpu 1 2 3 4\n").unwrap_err();
        assert!(err.to_string().contains("incomplete"), "{err}");
    }
}
