//! A lab run on a machine of more than one CPU (`lab --cpus 2`, schema 3)
//! in the report: the per-CPU families of the models
//! ([`crate::results::lab::per_cpu`]: `Modelled cycles per packet on
//! CPU1`), what the machine and its packet steering were, and which CPU
//! limits forwarding (the bottleneck; its notes are `notes.rs`'s).

use crate::results::lab::{LabMetric, LabRecord};

/// The record's CPUs: QEMU's `-smp`, 1 for other labs.
pub fn cpus_of(record: &LabRecord) -> u32 {
    record.machine.qemu().map_or(1, |q| q.smp.max(1))
}

/// The per-CPU families of a record on `cpus` CPUs, in report order
/// (name, unit): the sum of the CPUs' cycles, then each of
/// [`LabMetric::PER_CPU`] per CPU; none on one CPU.
pub fn families(cpus: u32) -> Vec<(String, &'static str)> {
    if cpus < 2 {
        return Vec::new();
    }
    let total = LabMetric::CyclesPerPacketTotal;
    let mut out = vec![(total.name().to_string(), total.unit())];
    for metric in LabMetric::PER_CPU {
        for cpu in 0..cpus {
            out.push((metric.cpu_name(cpu), metric.unit()));
        }
    }
    out
}

/// The title of a per-CPU family (`Modelled cycles per packet on CPU1`,
/// `Modelled cycles per packet, all CPUs`); `None` for other names.
pub fn title(name: &str) -> Option<String> {
    match LabMetric::parse(name)? {
        (m, Some(cpu)) => Some(format!("{} on CPU{cpu}", m.title())),
        (m, None) => Some(m.title().to_string()),
    }
}

/// What the report says of a QEMU lab on more than one CPU: the machine,
/// what its clock means, the packet steering and the egress qdisc; `None`
/// for one CPU without steering.
pub fn machine_note(record: &LabRecord) -> Option<String> {
    let qemu = record.machine.qemu()?;
    let qdiscs: Vec<&str> = {
        let mut q: Vec<&str> = record
            .boots
            .iter()
            .filter_map(|b| b.qdisc.as_deref())
            .collect();
        q.sort_unstable();
        q.dedup();
        q
    };
    let qdisc = match qdiscs.as_slice() {
        [] => String::new(),
        [one] => format!("; egress qdisc {one} (the guest's default_qdisc)"),
        many => format!("; egress qdiscs {} (boots differ)", many.join(", ")),
    };
    let steering = qemu
        .steering
        .as_ref()
        .map(|s| {
            let how = if s.resolved.is_empty() {
                String::new()
            } else {
                format!(": {}", s.resolved)
            };
            format!(
                "; packet steering {} (asked: {} by {}{how})",
                s.describe(),
                s.asked,
                s.from
            )
        })
        .unwrap_or_default();
    if qemu.smp < 2 {
        return (!steering.is_empty() || !qdisc.is_empty())
            .then(|| format!("one CPU{steering}{qdisc}"));
    }
    Some(format!(
        "the lab machine had {} CPUs (-smp {}) on QEMU's multi-threaded TCG ({}), without -icount: the guest's clock is the host's, so ns/packet is left out (it would time the emulator, not the path) and Mbit/s is the emulator's; the models count each CPU apart (the families \"… on CPUn\", an L1 per CPU and one shared L2), and modelled cycles/packet and packets/s are the busiest CPU's, which limits forwarding (packets/s = clock ÷ its cycles/packet; \"all CPUs\" is their sum); each CPU's counts also hold its timer ticks and housekeeping, which come at the host's clock while the emulator forwards a few thousand packets per second, hundreds of instructions per packet (an idle CPU1 measured 481), so they move with host load and widen the A/A floor{steering}{qdisc}",
        qemu.smp,
        qemu.smp,
        qemu.accel.as_deref().unwrap_or("tcg"),
    ))
}
