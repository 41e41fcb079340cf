//! `lab --openwrt PATH` end to end, as CI runs it: the brcm47xx lab kernel
//! built as OpenWrt builds its malta/le target (the fixture's config and
//! patch series, brcm47xx's KCFLAGS, the lab's fragments on top), booted
//! with a guest that loads firewall4's ruleset, 2 runs of 2 s each way;
//! then the masquerade's translation in the guest's conntrack table, and
//! the lab kernel's OpenWrt record in its `result.json`. Before that, the
//! firewall4 ruleset itself is loaded by the host's nft (Debian's, the
//! guest's version) into a private namespace.
//!
//! Needs root (namespaces, taps), QEMU, iperf3, ethtool, nft, Debian's
//! archive (the guest's packages, once), Debian's 6.12 source and the
//! OpenWrt fixture. A missing tool fails the test with the package to
//! install. The kernel build is OpenWrt's whole malta config (about twice
//! the objects of the workbench's own lab kernel): see
//! docs/incoming/openwrt-lab.md for what it costs.

mod openwrt_fixture;

use std::process::Command;

use openwrt_fixture::Fixture;
use xshell::Shell;
use xtask::build::BuildOptions;
use xtask::inputs::targets;
use xtask::lab::firewall4::{self, Ruleset};
use xtask::lab::record::{Condition, Direction, LabRecord, THROUGHPUT};
use xtask::lab::session::Guest;
use xtask::lab::{self, guest, kernel, rootfs, GroChoice, LabRequest};
use xtask::results::BuildResult;
use xtask::util::layout::Layout;

const TARGET: &str = "brcm47xx";

fn ip(args: &[&str]) -> std::process::Output {
    Command::new("ip").args(args).output().expect("running ip")
}

#[test]
fn firewall4_ruleset_loads_with_debians_nft() {
    assert!(
        xtask::build::toolchain::find_in_path("nft").is_some(),
        "the test needs nft: apt-get install nftables"
    );
    let ns = format!("xlfw4-{}", std::process::id());
    assert!(ip(&["netns", "add", &ns]).status.success(), "needs root");
    let run = || -> String {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("fw4.nft");
        std::fs::write(&file, firewall4::ruleset()).unwrap();
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
fn openwrt_malta_lab_kernel_forwards_through_firewall4() {
    let Some(_) = openwrt_fixture::debian_tarball("6.12") else {
        return;
    };
    let Some(fx) = Fixture::unpack() else { return };
    let layout = Layout::from_manifest_dir();
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    let target = targets::select(&all, &[TARGET.to_string()])
        .unwrap()
        .remove(0);
    let spec = kernel::spec_of(&target).unwrap();
    lab::check_host_tools(spec).unwrap();

    let sh = Shell::new().unwrap();
    let request = LabRequest {
        target: TARGET.to_string(),
        variants: vec!["baseline".to_string()],
        runs: 2,
        duration_seconds: 2,
        gro: GroChoice::On,
        direction: lab::DirectionChoice::Both,
        control: false,
        build_only: false,
        build: BuildOptions::with_jobs(std::thread::available_parallelism().map_or(2, |n| n.get())),
        kernel_src: None,
        machine: lab::Machine::Qemu,
        cache_model: false,
        openwrt: Some(fx.root.clone()),
    };
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
    assert_eq!(record.status, "complete");
    let ruleset = record.initramfs.as_ref().and_then(|i| i.ruleset.clone());
    assert_eq!(ruleset.as_deref(), Some(Ruleset::Firewall4.describe()));
    for direction in Direction::BOTH {
        let on = Condition::Forward {
            direction,
            gro: true,
        };
        let mbit = record.samples("baseline", on, THROUGHPUT);
        assert_eq!(mbit.len(), 2, "{direction:?}: {mbit:?}");
        assert!(mbit.iter().all(|&m| m > 0.1), "{direction:?}: {mbit:?}");
    }
    for run in &record.runs {
        let g = run.guest.as_ref().expect("a QEMU run reads the guest");
        assert_eq!(g.server_saw_peer.as_deref(), Some(guest::GUEST_WAN_IP));
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
    let initramfs = rootfs::prepare_with(&layout, spec, Ruleset::Firewall4).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let mut guest = Guest::boot(
        spec,
        (&results.join("vmlinux"), None),
        &initramfs.path,
        &scratch.path().join("console.log"),
        &scratch.path().join("qemu.log"),
    )
    .unwrap();
    guest
        .iperf(Direction::LanToWan, 1, scratch.path(), "nat")
        .unwrap();
    let table = guest.conntrack().unwrap();
    assert!(
        table.lines().any(|l| l.contains(&format!(
            "src={} dst={}",
            guest::WAN_HOST_IP,
            guest::GUEST_WAN_IP
        ))),
        "no masqueraded connection in:\n{table}"
    );
}
