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
        let named = problem.to_string().contains(field.flag());
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
