//! Tests of [`super`]: the one check of a lab request.
use super::*;

/// Each refusal names the field; a request of the defaults passes.
#[test]
fn the_check_names_the_field_of_each_refusal() {
    LabRequest::qemu("brcm47xx").check().unwrap();
    for name in topology::NAMES {
        LabRequest::qemu("brcm47xx")
            .on_topology(name)
            .check()
            .unwrap_or_else(|p| panic!("{name}: {p}"));
    }
    let loopback = LabRequest::qemu("brcm47xx").on_topology(topology::loopback::NAME);
    let ssh = LabRequest {
        machine: Machine::from_args("ssh", Some(Path::new("lab.toml")), Flash::Sysupgrade).unwrap(),
        ..LabRequest::qemu("bcm53xx")
    };
    ssh.check().unwrap();
    let cases: Vec<(LabRequest, Field)> = vec![
        (
            LabRequest {
                cpus: Some(2),
                ..ssh.clone()
            },
            Field::Cpus,
        ),
        (ssh.clone().on_topology("mesh"), Field::Topology),
        (
            LabRequest {
                machine: Machine::from_args("ssh", None, Flash::Sysupgrade).unwrap(),
                ..ssh.clone()
            },
            Field::LabFile,
        ),
        (
            LabRequest {
                gro: Some(GroChoice::On),
                ..loopback.clone()
            },
            Field::Gro,
        ),
        (
            LabRequest {
                cache_model: true,
                ..loopback.clone()
            },
            Field::CacheModel,
        ),
        (
            LabRequest {
                tbench_clients: Some(4),
                ..LabRequest::qemu("brcm47xx")
            },
            Field::Clients,
        ),
        (
            LabRequest {
                routers: Some(3),
                ..LabRequest::qemu("brcm47xx")
            },
            Field::Routers,
        ),
        (
            LabRequest::qemu("brcm47xx").on_topology("ring"),
            Field::Topology,
        ),
        (
            LabRequest {
                workload: WorkloadSpec::Tbench { guest: "r1".into() },
                ..LabRequest::qemu("brcm47xx")
            },
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
    let wan_to_lan = LabRequest {
        workload: WorkloadSpec::Iperf3 {
            from: "wan".into(),
            to: "lan".into(),
        },
        ..LabRequest::qemu("brcm47xx")
    };
    assert!(matches!(
        wan_to_lan.check(),
        Err(Problem::NotRunnable { .. })
    ));
}
