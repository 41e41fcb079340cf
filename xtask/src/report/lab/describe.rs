//! What a lab run's report says about itself: the machine in headings,
//! what each metric can and cannot show ([`LabReport::caveats`]), the host
//! lab's runtime settings.

use super::notes::{model_words, HOST_NOTE};
use super::LabReport;
use crate::results::lab::{LabMetric, MachineInfo};

impl LabReport {
    /// What each metric can and cannot show, one sentence each.
    pub fn caveats(&self) -> Vec<String> {
        let qemu = match &self.machine {
            MachineInfo::Router { .. } => return vec![
                "Mbit/s is the real router's forwarding speed, as far as the hosts running iperf3 keep up with it".to_string(),
                "ns/packet is the router's CPU time per packet its two interfaces received (busy /proc/stat time, 10 ms ticks): real time on real hardware, so it sees cache, TLB and branch-layout effects, and whatever else the router's CPU did during the run".to_string(),
            ],
            MachineInfo::Host { .. } => return vec![
                format!("the host lab {HOST_NOTE}: tbench MB/s and iperf3 Mbit/s over loopback follow this machine's kernel, CPU and load (other processes, frequency), so only runs interleaved on one quiet machine compare"),
                "loopback has no NIC, driver or wire: offload settings there change how the stack segments and checksums, not what a router's hardware does".to_string(),
            ],
            MachineInfo::Qemu { qemu, .. } => qemu,
        };
        let icount = if qemu.icount.is_empty() {
            "without -icount it is host time, which host load moves too".to_string()
        } else {
            format!(
                "under -icount {} guest time counts instructions, so it is a path-length proxy that host load does not move",
                qemu.icount
            )
        };
        let has = |metric: LabMetric| self.series.iter().any(|s| s.is(metric));
        if !has(LabMetric::Throughput) && has(LabMetric::Tbench) {
            // tbench inside the guest (`--topology loopback`): no NIC, no
            // forwarding, no Mbit/s or ns/packet.
            // tbench times itself with the guest's clock: under -icount
            // that clock counts instructions (a brcm47xx lab's A/A
            // control: sd 0.00 %, 0.01 % apart).
            let clock = if qemu.icount.is_empty() {
                "the guest's clock is host time here (no -icount), so it follows host load (other processes, CPU frequency) and only runs interleaved on one quiet host compare".to_string()
            } else {
                format!(
                    "tbench times itself with the guest's clock, which under -icount {} counts instructions: a path-length proxy that host load does not move, blind to cache and memory latency",
                    qemu.icount
                )
            };
            return vec![
                format!("tbench MB/s inside the guest is the variant kernel's loopback TCP path at the emulated CPU's pace: {clock}"),
                "loopback has no NIC, driver or wire: it shows what the kernel's TCP/IP and offload code (TSO, GSO, checksums) cost, not a router's forwarding; it does not show cache, TLB or branch-layout effects, which need real hardware".to_string(),
            ];
        }
        let mut out = vec![
            "Mbit/s is the emulator's forwarding speed: it follows host load (other processes, CPU frequency), so only runs interleaved on one quiet host compare".to_string(),
            format!("ns/packet is the guest's CPU time per forwarded packet: {icount}"),
        ];
        if has(LabMetric::UdpLost) {
            out.push("UDP loss % is what the receiver missed at the asked rate: where the rate is above what the emulator forwards, it measures the emulator and the host's load, not the kernel; a rate the guest keeps up with, with loss near 0, compares ns/packet at a fixed packet rate".to_string());
        }
        let Some(m) = &self.cache_model else {
            out.push("neither shows cache, TLB or branch-layout effects (what block reordering changes): those need real hardware".to_string());
            return out;
        };
        out.extend([
            "neither Mbit/s nor ns/packet shows cache, TLB or branch-layout effects; the cache model's misses show cache effects, as a model".to_string(),
            "insns/packet is the guest instructions executed per forwarded packet, counted by the cache model's plugin over the traffic alone: the path length ns/packet approximates, without its 10 ms ticks".to_string(),
            format!(
                "L1I/L1D misses/packet are misses of {}: they show how code and data layout map onto the cache's sets (what -fno-reorder-blocks or alignment change), not what a miss costs on the router",
                model_words(m)
            ),
        ]);
        if m.timing.is_some() {
            out.push("modelled cycles/packet prices those counts with the SoC's documented costs (its note has the formula): it moves with path length, taken branches, mispredictions and misses, not with host load, and packets/s and Mbit/s at the SoC's clock are its inverse, a model's rate rather than one measured anywhere".to_string());
        }
        out
    }

    /// What ran, for headings: `QEMU malta -cpu 74Kf`, `router
    /// root@192.168.1.1 over SSH`, `host kernel 6.12.57 (x86_64)`.
    pub fn machine(&self) -> String {
        match &self.machine {
            MachineInfo::Router { router } => format!("router {} over SSH", router.destination),
            MachineInfo::Qemu { qemu, .. } => format!("QEMU {} -cpu {}", qemu.machine, qemu.cpu),
            MachineInfo::Host { host } => {
                format!("host kernel {} ({})", host.kernel_release, host.machine)
            }
        }
    }

    /// The machine in few words, for plot titles: `QEMU malta`, `router
    /// root@192.168.1.1`, or [`LabReport::machine`] for the host.
    pub fn machine_short(&self) -> String {
        match &self.machine {
            MachineInfo::Router { router } => format!("router {}", router.destination),
            MachineInfo::Qemu { qemu, .. } => format!("QEMU {}", qemu.machine),
            MachineInfo::Host { .. } => self.machine(),
        }
    }

    /// The machine for a CSV row's `soc` column: `router root@… (SSH)`,
    /// `QEMU malta (74Kf)`, or [`LabReport::machine`] for the host.
    pub fn machine_soc(&self) -> String {
        match &self.machine {
            MachineInfo::Router { router } => format!("router {} (SSH)", router.destination),
            MachineInfo::Qemu { qemu, .. } => format!("QEMU {} ({})", qemu.machine, qemu.cpu),
            MachineInfo::Host { .. } => self.machine(),
        }
    }

    /// Whether it measured this machine's kernel (the host lab): no
    /// target, no router, headings say so.
    pub fn is_host(&self) -> bool {
        matches!(self.machine, MachineInfo::Host { .. })
    }

    /// What its kernels are called in headings: `lab kernels` in QEMU,
    /// `kernels` on a real router (the target's own).
    pub fn kernels_word(&self) -> &'static str {
        match self.machine {
            MachineInfo::Router { .. } => "kernels",
            MachineInfo::Qemu { .. } | MachineInfo::Host { .. } => "lab kernels",
        }
    }

    /// What each runtime variant set (host lab), e.g. `baseline: nothing
    /// changed; lo-no-tso-gso: ethtool -K lo gso off tso off`; `None` for
    /// a lab of kernels.
    pub fn runtime_settings(&self) -> Option<String> {
        let parts: Vec<String> = self
            .arms
            .iter()
            .filter(|a| !a.control)
            .filter_map(|a| {
                let r = a.runtime.as_ref()?;
                let calls: Vec<String> = r
                    .ethtool
                    .iter()
                    .map(|e| {
                        let features: Vec<String> =
                            e.features.iter().map(|(f, v)| format!("{f} {v}")).collect();
                        format!("ethtool -K {} {}", e.dev, features.join(" "))
                    })
                    .collect();
                Some(if calls.is_empty() {
                    format!("{}: nothing changed", a.name)
                } else {
                    format!("{}: {}", a.name, calls.join(", "))
                })
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}
