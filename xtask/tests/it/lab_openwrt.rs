//! `lab --openwrt PATH` end to end: the brcm47xx lab kernel built as
//! OpenWrt builds its malta/le target (the fixture's config and patch
//! series, brcm47xx's KCFLAGS, the lab's fragments on top), booted with a
//! guest that loads firewall4's ruleset, 2 runs of 2 s each way; then the
//! masquerade's translation in the guest's conntrack table, and the lab
//! kernel's OpenWrt record in its `result.json`. Before that, the
//! firewall4 ruleset itself is loaded by the host's nft (Debian's, the
//! guest's version) into a private namespace.
//!
//! Needs root (namespaces, taps), QEMU, iperf3, ethtool, nft, Debian's
//! archive (the guest's packages, once), Debian's 6.12 source and the
//! OpenWrt fixture (through the gate: a failure under CI). The kernel
//! build is OpenWrt's whole malta config: see docs/incoming/openwrt-lab.md
//! for what it costs.

use crate::common::gate;
use crate::common::lab_build;
use crate::common::openwrt_fixture;

use std::process::Command;

use openwrt_fixture::Fixture;
use xshell::Shell;
use xtask::inputs::targets;
use xtask::lab::firewall4;
use xtask::lab::session::{Image, QemuTestbed};
use xtask::lab::topology::{nat_router, Ruleset};
use xtask::lab::{self, kernel, rootfs, GroChoice, LabRequest};
use xtask::results::lab::{Condition, Direction, Gro, LabMetric, LabRecord, MachineInfo, Status};
use xtask::results::BuildResult;
use xtask::util::layout::Layout;

const TARGET: &str = "brcm47xx";

fn ip(args: &[&str]) -> std::process::Output {
    Command::new("ip").args(args).output().expect("running ip")
}

#[test]
fn firewall4_ruleset_loads_with_debians_nft() {
    // One lab at a time in this process (common::leftovers).
    let _lab = crate::common::leftovers::one_at_a_time();
    let needs = gate::Needs::new()
        .root("a network namespace")
        .program("nft", "nftables");
    if !needs.met() {
        return;
    }
    let ns = format!("xlfw4-{}", std::process::id());
    assert!(ip(&["netns", "add", &ns]).status.success(), "needs root");
    let run = || -> String {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("fw4.nft");
        let topology = nat_router::topology();
        std::fs::write(&file, firewall4::ruleset(&topology.guests[0]).unwrap()).unwrap();
        let add = ip(&[
            "-n", &ns, "link", "add", "lan", "type", "veth", "peer", "name", "wan",
        ]);
        assert!(
            add.status.success(),
            "{}",
            String::from_utf8_lossy(&add.stderr)
        );
        let load = Command::new("ip")
            .args(["netns", "exec", &ns, "nft", "-f"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            load.status.success(),
            "nft -f: {}",
            String::from_utf8_lossy(&load.stderr)
        );
        let list = Command::new("ip")
            .args(["netns", "exec", &ns, "nft", "list", "ruleset"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&list.stdout).into_owned()
    };
    let listed = std::panic::catch_unwind(run);
    ip(&["netns", "del", &ns]);
    let listed = listed.unwrap();
    for want in [
        "table inet fw4 {",
        "type nat hook postrouting priority srcnat; policy accept;",
        "oifname \"wan\" jump srcnat_wan",
        "meta nfproto ipv4 masquerade comment \"!fw4: Masquerade IPv4 wan traffic\"",
        "jump accept_to_wan comment \"!fw4: Accept lan to wan forwarding\"",
        "tcp option maxseg size set rt mtu",
    ] {
        assert!(listed.contains(want), "{want:?} not in:\n{listed}");
    }
}

#[test]
#[ignore = "manual: builds a whole OpenWrt malta kernel (10–25 minutes here), too long for CI's 90 minutes beside the other real builds; run with --ignored"]
fn openwrt_malta_lab_kernel_forwards_through_firewall4() {
    // One lab at a time in this process (common::leftovers).
    let _lab = crate::common::leftovers::one_at_a_time();
    let layout = Layout::from_manifest_dir();
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    let target = targets::select(&all, &[TARGET.to_string()])
        .unwrap()
        .remove(0);
    let spec = kernel::spec_of(&target).unwrap();
    let needs = gate::Needs::new()
        .slow("builds an OpenWrt malta kernel and forwards through it in QEMU")
        .root("taps and network namespaces")
        .check(lab::check_host_tools(spec));
    if !needs.met() || openwrt_fixture::debian_tarball("6.12").is_none() {
        return;
    }
    let Some(fx) = Fixture::unpack() else { return };

    let sh = Shell::new().unwrap();
    let request = LabRequest::qemu(TARGET).with(|r| {
        r.variants = vec!["baseline".to_string()];
        r.runs = 2;
        r.duration_seconds = 2;
        r.gro = Some(GroChoice::On);
        r.control = false;
        r.build = lab_build::options();
        r.openwrt = Some(fx.root.clone());
    });
    let started = std::time::Instant::now();
    let dir = lab::run(&sh, &layout, &request)
        .unwrap()
        .expect("a lab directory");
    eprintln!(
        "lab --openwrt took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    // OpenWrt mode's runs and kernels, where `size-report --openwrt` looks.
    let openwrt = layout.openwrt_mode();
    assert!(
        dir.starts_with(openwrt.work_dir().join("lab")),
        "{}",
        dir.display()
    );

    let record = LabRecord::read(&dir).unwrap();
    assert_eq!(record.status, Status::Complete);
    let MachineInfo::Qemu { initramfs, .. } = &record.machine else {
        panic!("not a QEMU lab: {:?}", record.machine);
    };
    assert_eq!(
        initramfs.ruleset.as_deref(),
        Some(Ruleset::Firewall4.describe())
    );
    for direction in Direction::BOTH {
        let on = Condition::Forward {
            direction,
            gro: Gro::On,
        };
        let mbit = record.samples("baseline", on, LabMetric::Throughput.name());
        assert_eq!(mbit.len(), 2, "{direction:?}: {mbit:?}");
        assert!(mbit.iter().all(|&m| m > 0.1), "{direction:?}: {mbit:?}");
    }
    let router_wan = nat_router::GUEST_WAN_IP.to_string();
    for run in &record.runs {
        let g = run.guest.as_ref().expect("a QEMU run reads the guest");
        assert_eq!(g.server_saw_peer.as_deref(), Some(router_wan.as_str()));
    }

    // The lab kernel's OpenWrt record: malta/le's config and series,
    // brcm47xx's KCFLAGS, what the lab added.
    let results = openwrt.results_dir("brcm47xx-lab", "baseline");
    let result = BuildResult::read(&results).unwrap();
    let o = result.openwrt.as_ref().expect("an OpenWrt record");
    assert_eq!(o.target, "malta/le");
    assert_eq!(
        o.config_files,
        [
            "target/linux/generic/config-6.12",
            "target/linux/malta/config-6.12",
            "target/linux/malta/le/config-default"
        ]
    );
    let lab = o.lab.as_ref().expect("a lab record");
    assert_eq!(lab.router_target, "bcm47xx/mips74k");
    assert!(
        o.kcflags.contains(&"-fno-caller-saves".to_string()),
        "{:?}",
        o.kcflags
    );
    assert!(
        result
            .kbuild_cflags
            .compile_command
            .contains(" -fno-caller-saves"),
        "the router's KCFLAGS reach the compiler: {}",
        result.kbuild_cflags.compile_command
    );
    let initrd = lab
        .added
        .iter()
        .find(|a| a.symbol == "BLK_DEV_INITRD")
        .expect("the lab adds initrd support");
    assert_eq!(initrd.openwrt.as_deref(), Some("n"));
    assert_eq!(initrd.lab.as_deref(), Some("y"));
    assert_eq!(
        initrd.set_by.as_deref(),
        Some("kconfig/lab-openwrt.config:9")
    );
    assert!(!lab.left_out.is_empty());

    // The masquerade's translation under firewall4's ruleset.
    let base = rootfs::prepare(&layout, spec).unwrap();
    let mut topology = nat_router::topology();
    lab::qemu_lab::openwrt_ruleset(&mut topology, spec);
    assert_eq!(topology.guests[0].ruleset, Some(Ruleset::Firewall4));
    let scratch = tempfile::tempdir().unwrap();
    let vmlinux = results.join("vmlinux");
    let image = Image {
        kernel: &vmlinux,
        dtb: None,
        initramfs: &base,
    };
    let mut bed = QemuTestbed::boot(spec, &topology, image, (scratch.path(), "nat"), None).unwrap();
    bed.iperf(
        ("lan", "wan"),
        Direction::LanToWan,
        1,
        (scratch.path(), "nat"),
    )
    .unwrap();
    let router = bed.guest("router").unwrap();
    let rules = router.check("nft list table inet fw4").unwrap();
    assert!(
        rules.contains("chain srcnat_wan"),
        "the guest runs firewall4's table:\n{rules}"
    );
    let table = router.conntrack().unwrap();
    let translated = table.lines().any(|l| {
        l.contains(&format!(
            "src={} dst={}",
            nat_router::WAN_HOST_IP,
            nat_router::GUEST_WAN_IP
        ))
    });
    assert!(translated, "no masqueraded connection in:\n{table}");
}
