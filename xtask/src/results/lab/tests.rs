//! Tests of `lab.json`'s reading and writing across schemas.

use super::*;

fn fixture(name: &str) -> String {
    let file = format!("{}/tests/lab_fixture/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(file).unwrap()
}

#[test]
fn a_schema_1_file_reads_into_the_new_types() {
    let text = fixture("lab.json");
    let v1: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v1["schema"], 1);
    let record: LabRecord = serde_json::from_str(&text).unwrap();
    assert_eq!(record.schema, SCHEMA);
    assert_eq!(record.status, Status::Complete);
    let MachineInfo::Qemu { qemu, initramfs } = &record.machine else {
        panic!("not QEMU: {:?}", record.machine);
    };
    assert_eq!(
        (qemu.machine.as_str(), qemu.cpu.as_str()),
        ("malta", "74Kf")
    );
    assert_eq!(initramfs.arch, "mipsel");
    assert_eq!(record.settings.gro, Gro::BOTH);
    assert!(record.arms.iter().all(|a| a.kernel.is_some()));
    assert!(record.runs.iter().all(|r| r.guest.is_some()));
    let gro_off = record
        .runs
        .iter()
        .filter(|r| matches!(r.condition, Condition::Forward { gro: Gro::Off, .. }))
        .count();
    let written_off = v1["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["gro"] == false)
        .count();
    assert!(gro_off > 0);
    assert_eq!(gro_off, written_off);
    // Everything below the top level is written as schema 1 wrote it.
    let again = serde_json::to_value(&record).unwrap();
    for key in ["settings", "arms", "boots", "runs", "started", "target"] {
        assert_eq!(again[key], v1[key], "{key}");
    }
    assert_eq!(again["schema"], SCHEMA);
    assert_eq!(again["status"], serde_json::json!({"state": "complete"}));
    assert_eq!(again["machine"]["kind"], "qemu");
    assert_eq!(again["machine"]["qemu"], v1["qemu"]);
    // And today's schema reads back as written.
    let back: LabRecord = serde_json::from_value(again).unwrap();
    assert_eq!(back, record);
}

#[test]
fn every_machine_of_schema_1_reads() {
    let host: LabRecord = serde_json::from_str(&fixture("host-lab.json")).unwrap();
    assert!(
        matches!(host.machine, MachineInfo::Host { .. }),
        "{:?}",
        host.machine
    );
    let mut v1: serde_json::Value = serde_json::from_str(&fixture("lab.json")).unwrap();
    v1["status"] = "failed: interrupted".into();
    let failed: LabRecord = serde_json::from_value(v1.clone()).unwrap();
    assert_eq!(
        failed.status,
        Status::Failed {
            reason: "interrupted".into()
        }
    );
    let host_v1: serde_json::Value = serde_json::from_str(&fixture("host-lab.json")).unwrap();
    v1["host"] = host_v1["host"].clone();
    let two = serde_json::from_value::<LabRecord>(v1.clone()).unwrap_err();
    assert!(
        two.to_string()
            .contains("this record has qemu, initramfs, host"),
        "{two}"
    );
    v1["schema"] = (SCHEMA + 1).into();
    let newer = serde_json::from_value::<LabRecord>(v1).unwrap_err();
    assert!(
        newer
            .to_string()
            .contains(&format!("reads schemas 1 to {SCHEMA}")),
        "{newer}"
    );
}

#[test]
fn a_host_run_has_a_bench_and_no_guest() {
    let run = RunRecord {
        index: 0,
        arm: "baseline".to_string(),
        variant: "baseline".to_string(),
        round: 0,
        condition: Condition::Bench {
            bench: Benchmark::Tbench { clients: 2 },
        },
        warmup: false,
        started: "2026-01-01T00:00:00Z".to_string(),
        metrics: vec![MetricValue::new(LabMetric::Tbench, 579.4)],
        guest: None,
        iperf3_client: None,
        host: Some(HostRun {
            netns: "xt-host-1-0".to_string(),
            features: Default::default(),
            summary: "Throughput 579.4 MB/sec  2 clients".to_string(),
            log: "run000-tbench.log".to_string(),
        }),
        cache_model: None,
        wall_seconds: Some(10.5),
        wall_steps: Vec::new(),
    };
    let json = serde_json::to_value(&run).unwrap();
    assert_eq!(json["bench"]["name"], "tbench");
    assert_eq!(json["bench"]["clients"], 2);
    assert!(json.get("direction").is_none() && json.get("guest_work").is_none());
    let back: RunRecord = serde_json::from_value(json).unwrap();
    assert_eq!(back, run);
}

#[test]
fn a_metric_this_xtask_does_not_know_reads_as_written_and_is_refused_by_the_check() {
    let mut v1: serde_json::Value = serde_json::from_str(&fixture("lab.json")).unwrap();
    v1["runs"][0]["metrics"][0] =
        serde_json::json!({"name": "l3_misses_per_packet", "value": 3.5, "unit": "misses/packet"});
    let record: LabRecord = serde_json::from_value(v1).unwrap();
    let m = &record.runs[0].metrics[0];
    assert_eq!(
        (m.name.as_str(), m.value, m.unit.as_str(), m.metric()),
        ("l3_misses_per_packet", 3.5, "misses/packet", None)
    );
    // It writes back as it was read.
    let again = serde_json::to_value(&record).unwrap();
    assert_eq!(
        again["runs"][0]["metrics"][0]["name"],
        "l3_misses_per_packet"
    );
    // Known names read as their metric.
    let known = &record.runs[1].metrics;
    assert!(known.iter().all(|m| m.metric().is_some()), "{known:?}");
    let refusals = check::check(&record).refusals;
    assert!(
        refusals.iter().any(|r| r
            .contains("l3_misses_per_packet is not a metric the lab records (tbench, throughput")),
        "{refusals:?}"
    );
}
