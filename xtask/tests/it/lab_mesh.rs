//! The batman-adv mesh (`--topology mesh`) end to end on the ramips-mt7621
//! lab kernel (Malta, e1000 NICs, batman-adv built in; the one Malta lab
//! kernel CI builds): two QEMU routers whose
//! mesh ports meet on a bridge in a namespace of their own, `bat0` over
//! them, `br-lan` = `lan` + `bat0` in each. One boot checks that frames
//! cross `bat0` (each router reaches both endpoints, r1's originator table
//! names r2's mesh port, iperf3 runs from the LAN endpoint to the far
//! one); a lab of 2 rounds of 2 s with iperf3 `-P 4 --set-mss 536`
//! measures the mesh and its reference arm (the routers bridged without
//! batman-adv) and renders the report's per-run table.
//!
//! Needs root (namespaces, taps), QEMU, iperf3, ethtool and Debian's
//! archive (for the guest's packages, once); the gate (`common/gate.rs`)
//! fails the tests under CI when one is missing and skips them elsewhere.
//! A few minutes on 2 cores once the lab kernel is built (each boot of the
//! mesh is two QEMU guests).

use crate::common::gate;
use crate::common::lab_build;

use xshell::Shell;
use xtask::inputs::targets;
use xtask::lab::session::{Image, QemuTestbed};
use xtask::lab::topology::mesh::{self, Mesh};
use xtask::lab::topology::Name;
use xtask::lab::{self, kernel, rootfs, GroChoice, LabRequest};
use xtask::results::lab::IperfOptions;
use xtask::results::lab::{Condition, Direction, Gro, LabMetric, LabRecord, Status};
use xtask::util::layout::Layout;

/// The Malta lab kernel every lab test of CI boots (one build).
const TARGET: &str = "ramips-mt7621";

use crate::common::leftovers;
use leftovers::{no_lab_leftovers, one_at_a_time};

/// The target's `[lab]` table and the gate's verdict.
fn lab_spec(layout: &Layout) -> Option<(targets::Target, lab::LabSpec)> {
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    let target = targets::select(&all, &[TARGET.to_string()])
        .unwrap()
        .remove(0);
    let spec = kernel::spec_of(&target).unwrap().clone();
    let needs = gate::Needs::new()
        .slow("builds the mesh's lab kernel and boots three routers in QEMU")
        .root("taps and network namespaces")
        .check(lab::check_host_tools(&spec));
    needs.met().then_some((target, spec))
}

#[test]
fn frames_cross_bat0_and_batctl_names_the_other_router() {
    let _serial = one_at_a_time();
    let layout = Layout::from_manifest_dir();
    let Some((target, spec)) = lab_spec(&layout) else {
        return;
    };
    let variants =
        xtask::inputs::variants::load(&layout.variants_file(), &layout.patches_dir()).unwrap();
    let baseline = xtask::inputs::variants::select(&variants, &["baseline".to_string()]).unwrap();
    let kernels = kernel::build_with(
        &Shell::new().unwrap(),
        &layout,
        &target,
        &baseline,
        lab_build::options(),
        None,
        &kernel::Recipe::Profiles,
    )
    .unwrap();
    let initramfs = rootfs::prepare(&layout, &spec).unwrap();
    let topology = mesh::topology(mesh::ROUTERS, Mesh::Batman);
    let r2_mesh_mac = topology
        .guest("r2")
        .unwrap()
        .nics
        .iter()
        .find(|n| n.name == "mesh1")
        .unwrap()
        .mac
        .to_string();
    let scratch = tempfile::tempdir().unwrap();
    let image = Image {
        kernel: &kernels[0].image,
        dtb: None,
        initramfs: &initramfs,
    };
    // boot() returns once every router has pinged both endpoints across
    // the mesh (QemuTestbed's mesh wait).
    let mut bed =
        QemuTestbed::boot(&spec, &topology, image, (scratch.path(), "mesh"), None).unwrap();
    let originators = bed.guest("r1").unwrap().check("batctl o").unwrap();
    eprintln!("{originators}");
    let named = originators
        .lines()
        .any(|l| l.contains(&r2_mesh_mac) && l.contains("mesh1"));
    assert!(
        named,
        "r1's originator table does not name r2 ({r2_mesh_mac}):\n{originators}"
    );
    let bat0 = |bed: &mut QemuTestbed| -> u64 {
        let out = bed
            .guest("r1")
            .unwrap()
            .check("cat /sys/class/net/bat0/statistics/tx_packets")
            .unwrap();
        out.trim().parse().unwrap()
    };
    let before = bat0(&mut bed);
    let out = bed
        .iperf(
            ("lan", mesh::FAR),
            Direction::LanToWan,
            2,
            (scratch.path(), "mesh"),
        )
        .unwrap();
    let sent = bat0(&mut bed) - before;
    let received = out.client["end"]["sum_received"]["bytes"]
        .as_u64()
        .unwrap_or_default();
    assert!(received > 0, "no bytes received:\n{}", out.client);
    // The LAN endpoint's TCP stream went into r1's bat0, not around it.
    assert!(sent > 100, "r1's bat0 sent {sent} packets during iperf3");
    drop(bed);
    no_lab_leftovers();
}

#[test]
fn the_mesh_lab_measures_both_arms_and_renders_the_table() {
    let _serial = one_at_a_time();
    let layout = Layout::from_manifest_dir();
    if lab_spec(&layout).is_none() {
        return;
    }
    let iperf = IperfOptions {
        parallel: 4,
        mss: Some(536),
        udp_mbit: None,
    };
    let request = LabRequest::qemu(TARGET).on_topology(Name::Mesh).with(|r| {
        r.variants = vec!["baseline".to_string()];
        r.runs = 2;
        r.duration_seconds = 2;
        r.gro = Some(GroChoice::On);
        r.direction = Some(xtask::lab::DirectionChoice::LanToWan);
        r.control = false;
        r.build = lab_build::options();
        r.iperf = iperf;
    });
    let dir = lab::run(&Shell::new().unwrap(), &layout, &request)
        .unwrap()
        .expect("a lab directory");
    no_lab_leftovers();
    let record = LabRecord::read(&dir).unwrap();
    assert_eq!(record.status, Status::Complete);
    assert_eq!(record.topology, Some(Name::Mesh));
    assert_eq!(record.settings.iperf3, iperf);
    let arms: Vec<&str> = record.arms.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(arms, ["baseline", "baseline~mesh-bridged"]);
    let on = Condition::Forward {
        direction: Direction::LanToWan,
        gro: Gro::On,
    };
    for arm in &arms {
        let mbit = record.samples(arm, on, LabMetric::Throughput.name());
        assert_eq!(mbit.len(), 2, "{arm}: {mbit:?}");
        assert!(mbit.iter().all(|&m| m > 0.1), "{arm}: {mbit:?} Mbit/s");
    }
    let report =
        xtask::report::lab::LabReport::new(dir.clone(), record, &["baseline".to_string()]).unwrap();
    let table = xtask::report::lab::mesh::text(&report, Default::default());
    eprintln!("{table}");
    for line in [
        "batman-adv mesh, Throughput, LAN to WAN, GRO on (Mbit/s):",
        "run | without patch | without batman-adv",
        "(without patch = baseline, without batman-adv = baseline~mesh-bridged)",
    ] {
        assert!(table.contains(line), "{line:?} not in\n{table}");
    }
    assert!(table.lines().any(|l| l.starts_with("avg |")), "{table}");
}
