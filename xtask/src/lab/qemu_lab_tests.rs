//! Tests of [`super`]: the QEMU lab's plans.
use super::*;
use crate::lab::orchestrate::Control;
use crate::results::lab::Benchmark;
use crate::results::lab::{Condition, Direction, Gro};

fn request(topology: topology::Name) -> LabRequest {
    let mut r = LabRequest::qemu("brcm47xx").on_topology(topology);
    r.variants = vec!["baseline".into(), "lo-no-tso-gso".into()];
    r.duration_seconds = 2;
    r.build = BuildOptions::with_jobs(1);
    r
}

/// The QEMU lab's plan as `resolve` builds it, without the target's
/// tools or kernels.
fn plan_of(request: &LabRequest) -> Result<LabPlan> {
    request.check()?;
    let topology = topology::named(&request.topology)?;
    let (workload, schedule, settings) = workload(request, &request.variants[0])?;
    Ok(LabPlan {
        target: request.target.clone(),
        machine: "QEMU malta -cpu 74Kf, e1000 NICs (brcm47xx-lab kernels)".into(),
        reference: reference(&topology)?,
        topology: Some(topology),
        places: (Vec::new(), Vec::new()),
        workload,
        variants: request.variants.clone(),
        control: request.control(),
        schedule,
        settings,
    })
}

#[test]
fn the_loopback_topology_runs_tbench_inside_its_guest() {
    let plan = plan_of(&request(topology::Name::Loopback)).unwrap();
    plan.check().unwrap();
    let tbench = Condition::Bench {
        bench: Benchmark::Tbench { clients: 2 },
    };
    assert_eq!(plan.schedule.warmup, tbench);
    assert_eq!(plan.schedule.conditions, [tbench]);
    assert_eq!((plan.schedule.runs, plan.schedule.duration_seconds), (5, 2));
    assert_eq!(plan.settings.benches, [Benchmark::Tbench { clients: 2 }]);
    assert!(plan.settings.gro.is_empty() && plan.settings.directions.is_empty());
    assert_eq!(plan.settings.conditions(), [tbench]);
    assert_eq!(plan.control, Control::Twin);
    assert_eq!(
        plan.describe(),
        "lab plan for brcm47xx:\n\
         \x20 machine:  QEMU malta -cpu 74Kf, e1000 NICs (brcm47xx-lab kernels)\n\
         \x20 topology: loopback (one guest, no NIC: the workload runs on the variant kernel's own loopback)\n\
         \x20 workload: tbench, 2 clients, against tbench_srv inside guest router over its own loopback (the variant kernel's), MB/s\n\
         \x20 arms:     baseline, baseline~control (A/A control), lo-no-tso-gso\n\
         \x20 session:  warm-up tbench, 2 clients (discarded), then tbench, 2 clients\n\
         \x20 runs:     5 rounds × 3 arms × 2 runs of 2 s = 30 runs, 1m of traffic\n"
    );
}

#[test]
fn the_nat_router_still_forwards_and_loopback_refuses_the_cache_model() {
    let plan = plan_of(&request(topology::Name::NatRouter)).unwrap();
    plan.check().unwrap();
    assert_eq!(plan.schedule.conditions.len(), 4);
    assert_eq!(
        plan.schedule.warmup,
        Condition::Forward {
            direction: Direction::LanToWan,
            gro: Gro::On
        }
    );
    assert!(plan.settings.benches.is_empty());
    assert!(plan
        .workload
        .describe()
        .starts_with("iperf3 from endpoint lan"));

    let mut cached = request(topology::Name::Loopback);
    cached.cache_model = true;
    let err = plan_of(&cached).err().unwrap().to_string();
    assert!(
        err.contains("the loopback topology forwards nothing"),
        "{err}"
    );
    let mut none = request(topology::Name::Loopback);
    none.tbench_clients = Some(0);
    assert!(plan_of(&none).is_err());
}

/// The mesh: iperf3 with its options from the LAN endpoint to the far
/// one, and the reference arm without batman-adv last.
#[test]
fn the_mesh_runs_iperf3_lan_to_far_with_its_options_and_a_reference_arm() {
    let mut mesh = request(topology::Name::Mesh);
    mesh.iperf = crate::results::lab::IperfOptions {
        parallel: 8,
        mss: Some(536),
        udp_mbit: None,
    };
    let plan = plan_of(&mesh).unwrap();
    plan.check().unwrap();
    assert_eq!(
        plan.workload.describe(),
        "iperf3 -P8 -M 536 from endpoint lan to endpoint far through the router (-R for FAR to LAN), GRO switched per run"
    );
    assert_eq!(plan.settings.iperf3, mesh.iperf);
    assert_eq!(
        plan.arm_names().last().map(String::as_str),
        Some("baseline~mesh-bridged")
    );
    assert!(plan_of(&request(topology::Name::NatRouter))
        .unwrap()
        .reference
        .is_none());
}
