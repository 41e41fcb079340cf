//! The QEMU router lab end to end, as CI runs it: build the brcm47xx lab
//! kernel (Malta, little-endian, 74K) with the baseline flags, boot it
//! between two network namespaces, and measure 2 runs of 2 s each way
//! through its nftables masquerade; then boot it once more and read the
//! masquerade's translation in the guest's conntrack table.
//!
//! Needs root (namespaces, taps), QEMU, iperf3, ethtool and Debian's
//! archive (for the guest's packages, once). A missing tool fails the test
//! under CI with the package to install; elsewhere the gate
//! (`common/gate.rs`) skips it and says so. About 10–15 minutes on 2
//! cores from scratch, most of it the kernel build; a minute or two when
//! the lab kernel is already built.

#[path = "common/gate.rs"]
mod gate;

use std::time::Instant;

use xshell::Shell;
use xtask::build::BuildOptions;
use xtask::inputs::targets;
use xtask::lab::record::{
    Condition, Direction, Gro, LabRecord, Status, CPU_PER_PACKET, THROUGHPUT,
};
use xtask::lab::session::{Image, QemuTestbed};
use xtask::lab::topology::nat_router;
use xtask::lab::{self, kernel, rootfs, GroChoice, LabRequest};
use xtask::util::layout::Layout;

const TARGET: &str = "brcm47xx";

/// The tests of this file share the process id the lab names its
/// namespaces after; one at a time, so each can check nothing is left.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn no_lab_leftovers() {
    let pid = std::process::id();
    let netns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    let netns = String::from_utf8_lossy(&netns.stdout);
    assert!(
        !netns.contains(&format!("xlab-{pid}-")),
        "namespaces left: {netns}"
    );
    for link in std::fs::read_dir("/sys/class/net").unwrap() {
        let name = link.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with(&format!("xl{pid}_")), "tap {name} left");
    }
}

#[test]
fn malta_router_forwards_through_masquerade() {
    let _serial = one_at_a_time();
    let layout = Layout::from_manifest_dir();
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    let target = targets::select(&all, &[TARGET.to_string()])
        .unwrap()
        .remove(0);
    let spec = kernel::spec_of(&target).unwrap();
    let needs = gate::Needs::new()
        .root("taps and network namespaces")
        .check(lab::check_host_tools(spec));
    if !needs.met() {
        return;
    }

    let sh = Shell::new().unwrap();
    let started = Instant::now();
    let request = LabRequest {
        target: TARGET.to_string(),
        variants: vec!["baseline".to_string()],
        runs: 2,
        duration_seconds: 2,
        gro: GroChoice::On,
        direction: xtask::lab::DirectionChoice::Both,
        control: false,
        build_only: false,
        build: BuildOptions::with_jobs(std::thread::available_parallelism().map_or(2, |n| n.get())),
        kernel_src: None,
        machine: lab::Machine::Qemu,
        cache_model: false,
        openwrt: None,
    };
    let dir = lab::run(&sh, &layout, &request)
        .unwrap()
        .expect("a lab directory");
    eprintln!("lab took {:.0} s", started.elapsed().as_secs_f64());
    no_lab_leftovers();

    let record = LabRecord::read(&dir).unwrap();
    assert_eq!(record.status, Status::Complete);
    assert_eq!(record.lab_target, "brcm47xx-lab");
    assert_eq!(record.boots.len(), 2);
    for boot in &record.boots {
        assert!(dir.join(&boot.console_log).is_file());
        assert!(boot.boot_seconds > 0.0);
    }
    for direction in Direction::BOTH {
        let on = Condition::Forward {
            direction,
            gro: Gro::On,
        };
        let mbit = record.samples("baseline", on, THROUGHPUT);
        let ns = record.samples("baseline", on, CPU_PER_PACKET);
        assert_eq!(mbit.len(), 2, "{direction:?}: {mbit:?}");
        assert_eq!(ns.len(), 2, "{direction:?}: {ns:?}");
        assert!(
            mbit.iter().all(|&m| m > 0.1),
            "{direction:?}: {mbit:?} Mbit/s"
        );
        // A forwarded packet costs the emulated CPU microseconds, not less
        // than 1 µs nor more than 10 ms.
        assert!(
            ns.iter().all(|&n| (1e3..1e7).contains(&n)),
            "{direction:?}: {ns:?} ns/packet"
        );
    }
    for run in &record.runs {
        let g = run.guest.as_ref().expect("a QEMU run reads the guest");
        let router_wan = nat_router::GUEST_WAN_IP.to_string();
        assert_eq!(g.server_saw_peer.as_deref(), Some(router_wan.as_str()));
        assert!(g.guest_work.packets > 100, "{:?}", g.guest_work);
    }
    // The lab kernel is recorded like any build.
    let results = layout.results_dir("brcm47xx-lab", "baseline");
    assert!(results.join("result.json").is_file());

    // The masquerade's translation, as the guest's conntrack shows it.
    let initramfs = rootfs::prepare(&layout, spec).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let vmlinux = results.join("vmlinux");
    let image = Image {
        kernel: &vmlinux,
        dtb: None,
        initramfs: &initramfs,
    };
    let mut bed = QemuTestbed::boot(
        spec,
        &nat_router::topology(),
        image,
        (scratch.path(), "nat"),
        None,
    )
    .unwrap();
    bed.iperf(
        ("lan", "wan"),
        Direction::LanToWan,
        1,
        (scratch.path(), "nat"),
    )
    .unwrap();
    let table = bed.guest("router").unwrap().conntrack().unwrap();
    let translated = table.lines().any(|l| {
        l.contains(&format!(
            "src={} dst={}",
            nat_router::LAN_HOST_IP,
            nat_router::WAN_HOST_IP
        )) && l.contains(&format!(
            "src={} dst={}",
            nat_router::WAN_HOST_IP,
            nat_router::GUEST_WAN_IP
        ))
    });
    assert!(translated, "no masqueraded connection in:\n{table}");
    drop(bed);
    no_lab_leftovers();
}

#[test]
fn a_kernel_that_does_not_boot_is_a_clear_error() {
    let _serial = one_at_a_time();
    let layout = Layout::from_manifest_dir();
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    let target = targets::select(&all, &[TARGET.to_string()])
        .unwrap()
        .remove(0);
    let spec = kernel::spec_of(&target).unwrap();
    lab::check_host_tools(spec).unwrap();
    let initramfs = rootfs::prepare(&layout, spec).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let bogus = scratch.path().join("vmlinux");
    std::fs::write(&bogus, b"not a kernel").unwrap();
    let started = Instant::now();
    let image = Image {
        kernel: &bogus,
        dtb: None,
        initramfs: &initramfs,
    };
    let err = QemuTestbed::boot(
        spec,
        &nat_router::topology(),
        image,
        (scratch.path(), "bogus"),
        None,
    )
    .err()
    .expect("a bogus kernel must not boot");
    let msg = format!("{err:#}");
    eprintln!("the error, as users see it:\n{msg}");
    assert!(msg.contains("QEMU exited"), "{msg}");
    assert!(msg.contains("QEMU's own output"), "{msg}");
    assert!(
        started.elapsed().as_secs() < 30,
        "took {:?}",
        started.elapsed()
    );
    no_lab_leftovers();
}
