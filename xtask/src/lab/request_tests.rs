//! Tests of [`super`]: the one check of a lab request.
use super::*;

/// Each refusal names the field; a request of the defaults passes.
#[test]
fn the_check_names_the_field_of_each_refusal() {
    LabRequest::qemu("brcm47xx").check().unwrap();
    for name in topology::Name::KNOWN {
        LabRequest::qemu("brcm47xx")
            .on_topology(name.clone())
            .check()
            .unwrap_or_else(|p| panic!("{name}: {p}"));
    }
    let loopback = LabRequest::qemu("brcm47xx").on_topology(topology::Name::Loopback);
    let ssh = LabRequest::qemu("bcm53xx").with(|r| {
        r.machine =
            Machine::from_args("ssh", Some(Path::new("lab.toml")), Flash::Sysupgrade).unwrap()
    });
    ssh.check().unwrap();
    let cases: Vec<(LabRequest, Field)> = vec![
        (ssh.clone().with(|r| r.cpus = Some(2)), Field::Cpus),
        (ssh.clone().on_topology("mesh"), Field::Topology),
        (
            ssh.clone()
                .with(|r| r.machine = Machine::from_args("ssh", None, Flash::Sysupgrade).unwrap()),
            Field::LabFile,
        ),
        (
            loopback.clone().with(|r| r.gro = Some(GroChoice::On)),
            Field::Gro,
        ),
        (
            loopback.clone().with(|r| r.cache_model = true),
            Field::CacheModel,
        ),
        (
            LabRequest::qemu("brcm47xx").with(|r| r.tbench_clients = Some(4)),
            Field::Clients,
        ),
        (
            LabRequest::qemu("brcm47xx").with(|r| r.routers = Some(3)),
            Field::Routers,
        ),
        (
            LabRequest::qemu("brcm47xx").on_topology("ring"),
            Field::Topology,
        ),
        (
            LabRequest::qemu("brcm47xx")
                .with(|r| r.workload = WorkloadSpec::Tbench { guest: "r1".into() }),
            Field::Workload,
        ),
    ];
    for (request, field) in cases {
        let problem = request.check().unwrap_err();
        assert_eq!(problem.field(), field, "{problem}");
        // The command line's words name the flag, but for the
        // registry's "unknown topology" and the workload's places.
        let named = problem.to_string().contains(&field.flag());
        assert!(
            named || matches!(field, Field::Workload | Field::Topology),
            "{problem}"
        );
    }
    let wan_to_lan = LabRequest::qemu("brcm47xx").with(|r| {
        r.workload = WorkloadSpec::Iperf3 {
            from: "wan".into(),
            to: "lan".into(),
        }
    });
    assert!(matches!(
        wan_to_lan.check(),
        Err(Problem::NotRunnable { .. })
    ));
}

/// Each count's range comes from its one definition, and the refusal
/// names the option in the command line's or the file's words.
#[test]
fn counts_out_of_their_range_and_contradicting_options_are_refused() {
    let ok = |f: Field, v: u32| LabRequest::qemu("brcm47xx").with(|r| r.set_count(f, v));
    for (field, bad, good) in [
        (Field::Parallel, 0, 128),
        (Field::Parallel, 129, 2),
        (Field::Mss, 87, 88),
        (Field::Mss, 9217, 9216),
        (Field::Udp, 0, 1),
        (Field::Udp, 10_001, 10_000),
        (Field::Runs, 0, 1),
        (Field::Duration, 3601, 3600),
    ] {
        ok(field, good).check().unwrap_or_else(|p| panic!("{p}"));
        let p = ok(field, bad).check().unwrap_err();
        assert_eq!(p, Problem::OutOfRange(field, bad));
        let c = field.count().unwrap();
        assert_eq!(
            p.to_string(),
            format!(
                "{} {bad}: use {} to {} ({})",
                field.flag(),
                c.min,
                c.max,
                c.limit
            )
        );
        assert!(p
            .words(Words::Keys)
            .starts_with(&format!("{} = {bad} — ", field.key())));
    }
    let both = LabRequest::qemu("brcm47xx").with(|r| {
        r.set_count(Field::Mss, 536);
        r.set_count(Field::Udp, 100);
    });
    let p = both.check().unwrap_err();
    assert_eq!(p, Problem::Conflict(Field::Mss, Field::Udp));
    assert!(
        p.to_string().starts_with("--set-mss and --udp contradict"),
        "{p}"
    );
    assert!(
        p.words(Words::Keys).starts_with("mss and udp contradict"),
        "{p}"
    );
}

/// Every whole-number option's value reads back as it was set, and its
/// record pointer names where `lab.json`'s settings keep it (the counts
/// recorded elsewhere, with the topology, machine or workload, are
/// checked by their own tests).
#[test]
fn each_count_is_set_read_and_recorded_where_its_definition_says() {
    for o in OPTIONS.iter().filter(|o| o.count.is_some()) {
        let c = o.count.unwrap();
        let v = c.max;
        let r = LabRequest::qemu("brcm47xx").with(|r| r.set_count(o.field, v));
        assert_eq!(r.count(o.field), Some(v), "{}", o.flag);
        // The forwarding lab's settings (tbench's clients are its
        // benchmark's, recorded by the tbench workload).
        let pointer = o.record.strip_prefix("/settings");
        if let Some(pointer) = pointer.filter(|_| o.shapes != Shapes::Tbench) {
            let settings =
                serde_json::to_value(crate::lab::forwarding::settings(&r, "baseline")).unwrap();
            assert_eq!(
                settings.pointer(pointer).and_then(|v| v.as_u64()),
                Some(u64::from(v)),
                "{}: {pointer} in {settings}",
                o.flag
            );
        }
    }
}
