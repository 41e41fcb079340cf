//! The notes of a lab run's report ([`super::LabReport::notes`]) that
//! come from its record alone: GRO on a NIC that ignores it, the mesh's
//! directions, arms measured side by side, redone runs, the models that
//! ran, the host lab's, and the bottleneck CPU per condition.

use super::series::Series;
use crate::results::lab::{
    CacheModelInfo, CoreTiming, LabMetric, LabRecord, MachineInfo, TopologyName,
};

/// What [`super::LabReport::notes`] says of every host lab.
pub const HOST_NOTE: &str = "measures this machine's kernel, not a router's";

/// A note when the QEMU lab switched GRO on NICs whose driver never uses
/// it: QEMU's `pcnet` (Linux's pcnet32, which the Malta labs boot with
/// `--nic pcnet`; their default is e1000) hands every received packet to
/// `netif_receive_skb()`, not `napi_gro_receive()`
/// (drivers/net/ethernet/amd/pcnet32.c in 6.12), so `ethtool -K … gro on`
/// changes nothing there. Read from the record's QEMU command lines, so
/// `None` for every other NIC (e1000, virtio-net), for one GRO setting,
/// and outside QEMU.
pub fn gro_note(record: &LabRecord) -> Option<String> {
    record.machine.qemu()?;
    if record.settings.gro.len() < 2 {
        return None;
    }
    let pcnet = record.boots.iter().any(|b| {
        b.qemu_argv
            .windows(2)
            .any(|w| w[0] == "-device" && w[1].starts_with("pcnet"))
    });
    pcnet.then(|| {
        "GRO on and off forward alike here: the guest's pcnet NICs (Linux's pcnet32, --nic pcnet) pass every received packet to netif_receive_skb(), not napi_gro_receive(), so GRO never merges a packet; the GRO settings are two samples of the same path (the Malta labs' default e1000 and the vexpress lab's virtio-net do use GRO)".to_string()
    })
}

/// In the mesh (`--topology mesh`) the directions keep the lab's names,
/// `LAN to WAN` and `WAN to LAN`, though nothing there is a WAN: this
/// note says which endpoints they are. `None` for other topologies.
pub fn mesh_direction_note(record: &LabRecord) -> Option<String> {
    (record.topology == Some(TopologyName::Mesh)).then(|| {
        "in the mesh, \"LAN to WAN\" is the LAN endpoint behind router 1 sending to the far endpoint behind router 2, across both routers and the batman-adv link (iperf3's client to its server), and \"WAN to LAN\" the reverse (iperf3 -R); nothing is translated".to_string()
    })
}

/// When the lab ran side by side with others (`cargo xtask experiment`,
/// [`crate::results::lab::Settings::labs_at_once`]): which of its figures
/// that load moved. `None` for a lab that ran alone.
pub fn side_by_side_note(record: &LabRecord) -> Option<String> {
    let n = record.settings.labs_at_once.filter(|n| *n > 1)?;
    let icount = match &record.machine {
        MachineInfo::Qemu { qemu, .. } if !qemu.icount.is_empty() => {
            "; ns/packet counts guest instructions under -icount and does not"
        }
        _ => "; so does ns/packet, which is host time without -icount",
    };
    Some(format!(
        "measured side by side: {n} labs ran at once on this machine (cargo xtask experiment; labs = \"serial\" in its [lab] runs them one after another). Mbit/s, tbench MB/s and UDP loss follow the host's load, so they compare between this lab's arms (interleaved under the same load) but not with a lab run alone{icount}; the cache and core models' counts do not depend on load"
    ))
}

/// The runs that stalled and were done again in a fresh boot of their arm
/// (`lab.json`'s `redone`), each named; `None` when none did. The redone
/// run replaces the stalled one, so every arm still has its rounds; the
/// note lets a reader see whether stalls fell on one arm.
pub fn redone_note(record: &LabRecord) -> Option<String> {
    if record.redone.is_empty() {
        return None;
    }
    let runs: Vec<String> = record
        .redone
        .iter()
        .map(|r| {
            let what = match r.condition {
                None => "boot".to_string(),
                Some(_) if r.warmup => "warm-up".to_string(),
                Some(c) => c.describe(),
            };
            format!(
                "{} {} {what} ({})",
                r.arm,
                crate::results::lab::check::round_words(r.round, record.settings.runs),
                r.reason
            )
        })
        .collect();
    Some(format!(
        "{} run(s) or boot(s) stalled and were done again after booting their arm afresh (a new warm-up first); what stalled left no numbers: {}",
        runs.len(),
        runs.join("; ")
    ))
}

/// What the cache model is, in words the report's notes and caveats share.
pub fn model_words(m: &CacheModelInfo) -> String {
    let rest = if m.timing.is_some() {
        "LRU, no prefetch, no TLB, behind them the core model's L2 (see its note)"
    } else {
        "LRU, no timing, no prefetch, no TLB, no L2"
    };
    format!(
        "a model of the SoC's L1 caches (I: {}; D: {}; from {}) fed by TCG's instruction stream and its data accesses: {rest}, addresses of QEMU's machine rather than the router's",
        m.icache.describe(),
        m.dcache.describe(),
        m.geometry_from
    )
}

/// The note on the core model's figures: the formula with the table's
/// values, what it includes and leaves out, and which values have no
/// source.
pub fn timing_note(t: &CoreTiming) -> String {
    let c = &t.costs;
    let l2 = match &t.l2 {
        Some(g) => format!("an L2 of {} ({} cycles)", g.describe(), c.l2_hit_cycles),
        None => "no L2 (every L1 miss goes to DRAM)".to_string(),
    };
    let p = &t.predictor;
    let btac = if p.btac > 0 {
        format!(", a {}-entry BTAC", p.btac)
    } else {
        String::new()
    };
    let history = if p.history_bits > 0 {
        format!(" with {} bits of global history", p.history_bits)
    } else {
        String::new()
    };
    let unsourced = t.unsourced();
    let sources = if unsourced.is_empty() {
        format!("every value has its source in {}", t.from)
    } else {
        format!(
            "no source for {} (each says why in {}): read those terms as assumptions",
            unsourced.join(", "),
            t.from
        )
    };
    format!(
        "the modelled cycles/packet, packets/s and Mbit/s are a model, not a measurement: a single-issue in-order {} at {} MHz, cycles = {} × instructions + {} × taken branches + {} × mispredictions + {} × (L1I + L1D load misses) + {} × their L2 misses, with {l2} and a {} predictor of {} counters{history}, a {}-entry return stack{btac}; Mbit/s at the run's mean received frame; it includes the instructions TCG executes, taken branches, mispredictions, L1 and L2 misses of the forwarding path; it leaves out out-of-order and dual issue, prefetch, stalls on store misses and write-backs, TLB refills beyond their instructions, DMA, contention between cores beyond the write-invalidate between their L1 D-caches (a run on one CPU leaves out the router's other core; on several, packets/s is the busiest CPU's), and the NIC hardware (QEMU's NIC is not the router's: its uncached register accesses are counted, not costed); {sources}",
        t.core,
        c.clock_mhz,
        c.base_cpi,
        c.taken_branch_cycles,
        c.mispredict_cycles,
        c.l2_hit_cycles,
        c.dram_cycles - c.l2_hit_cycles,
        p.kind,
        p.entries,
        p.return_stack,
    )
}

/// An arm's bottleneck: the arm, its busiest CPU and that CPU's mean
/// modelled cycles per packet.
type ArmBottleneck = (String, u32, f64);

/// The bottleneck per condition: for each arm of `arms`, the CPU whose
/// mean modelled cycles per packet are the most, with that mean; one
/// sentence per condition, and one more for each arm whose bottleneck is
/// not the base's. Empty without per-CPU cycles.
pub fn bottleneck_notes(series: &[Series], base: &str) -> Vec<String> {
    let mut per_condition: Vec<(String, Vec<ArmBottleneck>)> = Vec::new();
    for s in series {
        let Some((LabMetric::CyclesPerPacket, Some(cpu))) = LabMetric::parse(&s.family) else {
            continue;
        };
        let title = s.title();
        let at = match per_condition.iter().position(|(t, _)| *t == title) {
            Some(i) => i,
            None => {
                per_condition.push((title, Vec::new()));
                per_condition.len() - 1
            }
        };
        for (arm, values) in &s.arms {
            if values.is_empty() {
                continue;
            }
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let arms = &mut per_condition[at].1;
            match arms.iter_mut().find(|(a, _, _)| a == arm) {
                Some(slot) if mean > slot.2 => *slot = (arm.clone(), cpu, mean),
                Some(_) => {}
                None => arms.push((arm.clone(), cpu, mean)),
            }
        }
    }
    let mut notes = Vec::new();
    for (title, arms) in &per_condition {
        let list: Vec<String> = arms
            .iter()
            .map(|(a, cpu, mean)| format!("{a} CPU{cpu} ({mean:.0} cycles/packet)"))
            .collect();
        notes.push(format!("bottleneck in {title}: {}", list.join(", ")));
        let Some((_, base_cpu, _)) = arms.iter().find(|(a, _, _)| a == base) else {
            continue;
        };
        for (arm, cpu, _) in arms.iter().filter(|(a, c, _)| a != base && c != base_cpu) {
            notes.push(format!(
                "the bottleneck moves in {title}: {base}'s is CPU{base_cpu}, {arm}'s CPU{cpu}, so packets/s compares two different CPUs' work there"
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::gro_note;
    use crate::results::lab::{Gro, LabRecord};

    fn fixture(device: &str, gro: Vec<Gro>) -> LabRecord {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/lab_fixture/lab.json"
        ))
        .unwrap();
        let mut r: LabRecord = serde_json::from_str(&text).unwrap();
        r.settings.gro = gro;
        r.boots[0].qemu_argv = ["qemu-system-mipsel", "-M", "malta", "-device", device]
            .map(String::from)
            .to_vec();
        r
    }

    #[test]
    fn gro_is_said_to_do_nothing_on_pcnet_only() {
        let pcnet = "pcnet,netdev=lan,mac=52:54:00:12:34:01,addr=0x12,romfile=";
        let note = gro_note(&fixture(pcnet, Gro::BOTH.to_vec())).unwrap();
        assert!(note.contains("netif_receive_skb()"), "{note}");
        assert_eq!(gro_note(&fixture(pcnet, vec![Gro::Off])), None);
        let virtio = "virtio-net-device,netdev=lan,mac=52:54:00:12:34:01";
        assert_eq!(gro_note(&fixture(virtio, Gro::BOTH.to_vec())), None);
        let e1000 = "e1000,netdev=lan,mac=52:54:00:12:34:01,addr=0x12,romfile=";
        assert_eq!(gro_note(&fixture(e1000, Gro::BOTH.to_vec())), None);
        let mut host = fixture(pcnet, Gro::BOTH.to_vec());
        let host_lab: LabRecord = serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/lab_fixture/host-lab.json"
            ))
            .unwrap(),
        )
        .unwrap();
        host.machine = host_lab.machine;
        assert_eq!(gro_note(&host), None);
    }

    /// A stalled, redone run is named in the report's notes with its
    /// round counted from 1; the reason's control characters are escaped
    /// by the renderers, as every note's.
    #[test]
    fn a_redone_run_is_named() {
        let mut r = fixture("e1000", Gro::BOTH.to_vec());
        assert_eq!(super::redone_note(&r), None);
        r.redone.push(crate::results::lab::RedoneRun {
            arm: r.arms[0].name.clone(),
            round: 0,
            condition: Some(r.settings.conditions()[0]),
            warmup: false,
            index: Some(3),
            reason: "the lan-to-wan run stalled (a NIC that stops moving packets?)".to_string(),
        });
        let note = super::redone_note(&r).unwrap();
        assert!(note.starts_with("1 run(s) or boot(s) stalled"), "{note}");
        assert!(
            note.contains(&format!("{} round 1 of", r.arms[0].name)),
            "{note}"
        );
        assert!(note.contains("lan-to-wan run stalled"), "{note}");
    }
}
