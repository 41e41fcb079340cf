//! The QEMU router lab end to end, as CI runs it: build the ramips-mt7621
//! lab kernel (Malta, little-endian, a 34K with one CPU; the one Malta lab
//! kernel CI builds) with the baseline flags, boot it
//! between two network namespaces, and measure 2 runs of 2 s each way,
//! GRO on and off, through its nftables masquerade (GRO merges on the
//! e1000 NICs: fewer IP datagrams than frames, and not with GRO off); then
//! boot it once more and read the masquerade's translation in the guest's
//! conntrack table. Further boots check the guest's batman-adv with
//! batctl and a 2 s tbench, and that the pcnet NIC (`--nic pcnet`) merges
//! nothing.
//!
//! Needs root (namespaces, taps), QEMU, iperf3, ethtool and Debian's
//! archive (for the guest's packages, once). A missing tool fails the test
//! under CI with the package to install; elsewhere the gate
//! (`common/gate.rs`) skips it and says so. About 10–15 minutes on 2
//! cores from scratch, most of it the kernel build; a minute or two when
//! the lab kernel is already built.

use crate::common::gate;
use crate::common::lab_build;

use std::time::Instant;

use crate::common::guest_checks;

use xshell::Shell;
use xtask::inputs::targets;
use xtask::lab::backend::Testbed;
use xtask::lab::guest::SamplePoint;
use xtask::lab::session::{Image, QemuTestbed};
use xtask::lab::topology::nat_router;
use xtask::lab::{self, kernel, rootfs, LabRequest};
use xtask::results::lab::{Condition, Direction, Gro, LabMetric, LabRecord, Status};
use xtask::util::layout::Layout;

/// The Malta lab kernel every lab test of CI boots (one build).
const TARGET: &str = "ramips-mt7621";

use crate::common::leftovers;
use leftovers::{no_lab_leftovers, one_at_a_time};

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
        .slow("builds the Malta lab kernel and boots it in QEMU")
        .root("taps and network namespaces")
        .check(lab::check_host_tools(spec));
    if !needs.met() {
        return;
    }

    let sh = Shell::new().unwrap();
    let started = Instant::now();
    let request = LabRequest::qemu(TARGET).with(|r| {
        r.variants = vec!["baseline".to_string()];
        r.runs = 2;
        r.duration_seconds = 2;
        r.control = false;
        r.build = lab_build::options();
    });
    let dir = lab::run(&sh, &layout, &request)
        .unwrap()
        .expect("a lab directory");
    eprintln!("lab took {:.0} s", started.elapsed().as_secs_f64());
    no_lab_leftovers();

    let record = LabRecord::read(&dir).unwrap();
    assert_eq!(record.status, Status::Complete);
    assert_eq!(record.lab_target, "ramips-mt7621-lab");
    assert_eq!(record.boots.len(), 2);
    for boot in &record.boots {
        assert!(dir.join(&boot.console_log).is_file());
        assert!(boot.boot_seconds > 0.0);
        assert!(
            boot.qemu_argv
                .windows(2)
                .any(|w| w[0] == "-device" && w[1].starts_with("e1000,")),
            "not the e1000 NIC: {:?}",
            boot.qemu_argv
        );
    }
    for direction in Direction::BOTH {
        let on = Condition::Forward {
            direction,
            gro: Gro::On,
        };
        let mbit = record.samples("baseline", on, LabMetric::Throughput.name());
        let ns = record.samples("baseline", on, LabMetric::CpuPerPacket.name());
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
        // The NICs' interrupts are counted (their /proc/interrupts lines).
        assert!(
            g.guest_work.packets_per_interrupt.is_some(),
            "{:?}",
            g.guest_work
        );
    }
    // GRO on the e1000 NICs merges: the guest's IP layer receives fewer
    // datagrams (InReceives, /proc/net/snmp) than its NICs receive frames
    // (rx_packets) with GRO on; with GRO off each frame is one datagram.
    for direction in Direction::BOTH {
        let merged = |gro: Gro| -> Vec<f64> {
            record
                .runs
                .iter()
                .filter(|r| !r.warmup && r.condition == Condition::Forward { direction, gro })
                .map(|r| {
                    let w = &r.guest.as_ref().unwrap().guest_work;
                    w.frames_per_ip_datagram
                        .unwrap_or_else(|| panic!("no IP datagrams counted: {w:?}"))
                })
                .collect()
        };
        let (on, off) = (merged(Gro::On), merged(Gro::Off));
        eprintln!("{direction:?}: frames per IP datagram, GRO on {on:?}, off {off:?}");
        assert_eq!((on.len(), off.len()), (2, 2));
        assert!(
            off.iter().all(|&f| (0.9..1.05).contains(&f)),
            "GRO off merged: {off:?}"
        );
        let most_off = off.iter().cloned().fold(f64::MIN, f64::max);
        assert!(
            on.iter().all(|&f| f > most_off),
            "GRO on merged no more than GRO off: on {on:?}, off {off:?}"
        );
    }
    // The lab kernel is recorded like any build.
    let results = layout.results_dir("ramips-mt7621-lab", "baseline");
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

/// The ramips-mt7621 lab's baseline kernel (built when missing), its `[lab]`
/// table and the guest's initramfs; `None` when the gate says a tool is
/// missing (outside CI).
fn malta_kernel() -> Option<(lab::LabSpec, std::path::PathBuf, rootfs::Initramfs)> {
    let layout = Layout::from_manifest_dir();
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    let target = targets::select(&all, &[TARGET.to_string()])
        .unwrap()
        .remove(0);
    let spec = kernel::spec_of(&target).unwrap().clone();
    let needs = gate::Needs::new()
        .slow("builds the Malta lab kernel and boots it in QEMU")
        .root("taps and network namespaces")
        .check(lab::check_host_tools(&spec));
    if !needs.met() {
        return None;
    }
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
    Some((spec, kernels[0].image.clone(), initramfs))
}

/// Boots the nat-router topology on `spec`'s machine with `kernel`.
fn boot(
    spec: &lab::LabSpec,
    kernel: &std::path::Path,
    initramfs: &rootfs::Initramfs,
    dir: &std::path::Path,
) -> QemuTestbed {
    let image = Image {
        kernel,
        dtb: None,
        initramfs,
    };
    QemuTestbed::boot(spec, &nat_router::topology(), image, (dir, "t"), None).unwrap()
}

#[test]
fn the_guest_runs_batman_adv_with_batctl_and_tbench() {
    let _serial = one_at_a_time();
    let Some((spec, image, initramfs)) = malta_kernel() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let mut bed = boot(&spec, &image, &initramfs, scratch.path());
    let guest = bed.guest("router").unwrap();
    let version = guest_checks::batctl_version(guest);
    eprintln!("{version}");
    // Debian's batctl, not the static guest's stand-in.
    assert!(!version.contains("xtask-lab-subset"), "{version}");
    let table = guest_checks::batman_pair(guest);
    eprintln!("{table}");
    let (mb_per_s, line) = guest_checks::tbench(guest, 2);
    eprintln!("{line}");
    assert!(mb_per_s > 0.0, "{line}");
    drop(bed);
    no_lab_leftovers();
}

#[test]
fn gro_on_the_pcnet_nic_merges_nothing() {
    let _serial = one_at_a_time();
    let Some((spec, image, initramfs)) = malta_kernel() else {
        return;
    };
    let pcnet = spec
        .with_nic(
            Some("pcnet"),
            std::path::Path::new("targets/ramips-mt7621.toml"),
        )
        .unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let mut bed = boot(&pcnet, &image, &initramfs, scratch.path());
    assert!(bed.guests()[0]
        .qemu_argv
        .iter()
        .any(|a| a.starts_with("pcnet,netdev=lan")));
    bed.set_gro(Gro::On).unwrap();
    let before = bed.sample(SamplePoint::Before).unwrap();
    bed.iperf(
        ("lan", "wan"),
        Direction::LanToWan,
        2,
        (scratch.path(), "pcnet"),
    )
    .unwrap();
    let after = bed.sample(SamplePoint::After).unwrap();
    let work = xtask::lab::sample::GuestWork::between(&before, &after);
    eprintln!("pcnet, GRO on: {work:?}");
    assert!(work.packets > 100, "{work:?}");
    // pcnet32 calls netif_receive_skb(): every frame enters IP on its own.
    let f = work.frames_per_ip_datagram.expect("IP datagrams counted");
    assert!((0.9..1.05).contains(&f), "{work:?}");
    assert!(work.packets_per_interrupt.is_some(), "{work:?}");
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
    let needs = gate::Needs::new()
        .slow("builds the Malta guest's initramfs and boots QEMU")
        .check(lab::check_host_tools(spec));
    if !needs.met() {
        return;
    }
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
