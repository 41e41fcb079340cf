//! The static guest of targets Debian 12 has no port of (ath79: big-endian
//! MIPS): its initramfs is built from Debian's sources with the cross
//! compiler and holds static big-endian MIPS programs (checked here against
//! binutils' `readelf` and `file`), tbench's loadfile among them; the lab's
//! nftables loader puts into the kernel exactly what `nft -f` of the
//! ruleset puts there; the lab's batctl answers `-v` and refuses what it
//! does not do; and the ath79 lab kernel boots it, forwards through its
//! masquerade, toggles GRO, meshes two batman-adv interfaces and runs
//! tbench.
//!
//! Needs the cross compiler and its static C library
//! (`gcc-mips-linux-gnu`, `libc6-dev-mips-cross`), `binutils-mips-linux-gnu`,
//! `file`, Debian's archive (the source packages, once), and for the
//! loader and boot tests root, `nft`, QEMU and iperf3, and dbench's
//! `client.txt` from the host's dbench package. A missing tool fails
//! the test under CI naming its package; elsewhere the gate
//! (`common/gate.rs`) skips it and says so. The first build of the
//! userspace takes a few minutes (busybox at `-j1`). The boot test builds
//! the ath79 lab kernel when it is not built yet (10–25 minutes on 2
//! cores: a router kernel, too big for CI's 90 minutes beside the Malta
//! lab's), so it is manual: `cargo test --test it lab_static_guest:: --
//! --ignored`; CI boots the Malta lab (`lab_malta.rs`) and builds and
//! checks this guest.

use crate::common::gate;
use crate::common::guest_checks;
use crate::common::lab_build;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use xshell::Shell;
use xtask::inputs::{targets, variants};
use xtask::lab::backend::{Gro, Testbed};
use xtask::lab::session::{Image, QemuTestbed};
use xtask::lab::static_guest::build;
use xtask::lab::topology::nat_router;
use xtask::lab::{self, guest, kernel, rootfs};
use xtask::results::lab::Direction;
use xtask::util::hash::sha256_file;
use xtask::util::layout::Layout;

const TARGET: &str = "ath79";

fn ath79() -> (Layout, targets::Target) {
    let layout = Layout::from_manifest_dir();
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    let target = targets::select(&all, &[TARGET.to_string()])
        .unwrap()
        .remove(0);
    (layout, target)
}

/// The regular files of a `newc` archive (the kernel's initramfs format,
/// Documentation/driver-api/early-userspace/buffer-format.rst): name → data.
fn cpio_files(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let hex = |at: usize| {
        u32::from_str_radix(std::str::from_utf8(&bytes[at..at + 8]).unwrap(), 16).unwrap() as usize
    };
    let align = |n: usize| (n + 3) & !3;
    let mut files = BTreeMap::new();
    let mut at = 0;
    loop {
        assert_eq!(&bytes[at..at + 6], b"070701", "newc magic at {at}");
        let mode = hex(at + 14);
        let size = hex(at + 54);
        let name_len = hex(at + 94);
        let name = std::str::from_utf8(&bytes[at + 110..at + 110 + name_len - 1]).unwrap();
        if name == "TRAILER!!!" {
            return files;
        }
        let data = align(at + 110 + name_len);
        if mode & 0o170000 == 0o100000 {
            files.insert(name.to_string(), bytes[data..data + size].to_vec());
        }
        at = align(data + size);
    }
}

#[test]
fn the_ath79_initramfs_holds_static_big_endian_mips_programs() {
    let (layout, target) = ath79();
    let spec = kernel::spec_of(&target).unwrap();
    let g = spec
        .static_guest
        .as_ref()
        .expect("ath79 has [lab.static_guest]");
    let needs = gate::Needs::new()
        .slow("builds the ath79 guest's programs from Debian's sources")
        .program("mips-linux-gnu-readelf", "binutils-mips-linux-gnu")
        .program("mips-linux-gnu-gcc", "gcc-mips-linux-gnu")
        .program("file", "file")
        // tbench's loadfile to compare with: `cargo xtask setup` installs
        // Debian's dbench on the host.
        .program("tbench", "dbench");
    if !needs.met() {
        return;
    }
    let initramfs = rootfs::prepare(&layout, spec).unwrap();
    assert_eq!(initramfs.arch, "mips");
    let files = cpio_files(&std::fs::read(&initramfs.path).unwrap());
    for script in ["init", "etc/xl-router.nft", "bin/xl-sample"] {
        assert!(files.contains_key(script), "{script} missing");
    }
    assert_eq!(files["init"], guest::init_script().into_bytes());
    let scratch = tempfile::tempdir().unwrap();
    let paths: Vec<&str> = initramfs.built.iter().map(|b| b.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "bin/busybox",
            "sbin/ethtool",
            "usr/sbin/nft",
            "usr/bin/tbench",
            "usr/bin/tbench_srv",
            "usr/sbin/batctl"
        ]
    );
    // tbench's loadfile where tbench looks for it, byte for byte Debian's
    // (the host's dbench package).
    let loadfile = files
        .get("usr/share/dbench/client.txt")
        .expect("tbench's loadfile in the archive");
    assert!(
        loadfile == &std::fs::read("/usr/share/dbench/client.txt").unwrap(),
        "the guest's client.txt differs from Debian's dbench package's"
    );
    for built in &initramfs.built {
        let bytes = files
            .get(&built.path)
            .unwrap_or_else(|| panic!("{} not in the archive", built.path));
        let copy = scratch.path().join(built.path.replace('/', "_"));
        std::fs::write(&copy, bytes).unwrap();
        assert_eq!(sha256_file(&copy).unwrap(), built.sha256, "{}", built.path);
        let readelf = Command::new(format!("{}readelf", g.cross_compile))
            .args(["-h", "-l"])
            .arg(&copy)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&readelf.stdout);
        assert!(readelf.status.success(), "{text}");
        for want in [
            "Class:                             ELF32",
            "Data:                              2's complement, big endian",
            "Machine:                           MIPS R3000",
            "Type:                              EXEC",
        ] {
            assert!(
                text.contains(want),
                "{}: no {want:?} in\n{text}",
                built.path
            );
        }
        assert!(
            !text.contains("INTERP") && !text.contains("DYNAMIC"),
            "{}: not static:\n{text}",
            built.path
        );
        let file = Command::new("file").arg("-b").arg(&copy).output().unwrap();
        let file = String::from_utf8_lossy(&file.stdout);
        assert!(
            file.contains("32-bit MSB executable, MIPS") && file.contains("statically linked"),
            "{}: {file}",
            built.path
        );
    }
    let busybox = &initramfs.built[0];
    assert!(
        busybox.source.starts_with("busybox 1:1.35.0-"),
        "{busybox:?}"
    );
    let tbench = &initramfs.built[3];
    assert!(tbench.source.starts_with("dbench 4.0-"), "{tbench:?}");
    assert!(tbench.source.contains("popt 1.19"), "{tbench:?}");
    for source in ["busybox_", "popt_", "dbench_"] {
        assert!(
            initramfs
                .packages
                .iter()
                .any(|p| p.file.starts_with(source) && p.file.ends_with(".dsc")),
            "no {source}*.dsc in {:?}",
            initramfs.packages
        );
    }
    // dbench is its upstream tarball, checked against the .dsc: Debian's
    // changes are not on the mirror, so they are not in the record either.
    assert!(initramfs
        .packages
        .iter()
        .any(|p| p.file == "dbench_4.0.orig.tar.gz"));
    assert!(!initramfs
        .packages
        .iter()
        .any(|p| p.file.starts_with("dbench_") && p.file.contains(".debian.")));
    assert!(!initramfs.toolchain.is_empty());
    // Cached: the same archive without building.
    let again = rootfs::prepare(&layout, spec).unwrap();
    assert_eq!(again, initramfs);
}

/// `ip netns exec NAME args…`, its stdout; panics with stderr on failure.
fn in_netns(name: &str, args: &[&str]) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", name])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Network namespaces deleted when dropped, whether the test passes or not.
struct Netns(Vec<String>);

impl Drop for Netns {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

#[test]
fn the_loader_puts_into_the_kernel_what_nft_puts_there() {
    // One lab at a time in this process (common::leftovers).
    let _lab = crate::common::leftovers::one_at_a_time();
    let needs = gate::Needs::new()
        .root("network namespaces")
        .program("nft", "nftables")
        .program("cc", "gcc");
    if !needs.met() {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let loader = scratch.path().join("nft-loader");
    let ruleset = guest::ruleset();
    build::nft_loader("cc", &ruleset, scratch.path(), scratch.path(), &loader).unwrap();
    let file = scratch.path().join("xl-router.nft");
    std::fs::write(&file, &ruleset).unwrap();
    let pid = std::process::id();
    let names = [format!("xlnft{pid}a"), format!("xlnft{pid}b")];
    let _gone = Netns(names.to_vec());
    for n in &names {
        assert!(Command::new("ip")
            .args(["netns", "add", n])
            .status()
            .unwrap()
            .success());
    }
    let file = file.to_str().unwrap();
    let listings: Vec<String> = [loader.to_str().unwrap(), "nft"]
        .iter()
        .zip(&names)
        .map(|(program, ns)| {
            // Twice: the batch's flush makes a reload replace the rules.
            in_netns(ns, &[program, "-f", file]);
            in_netns(ns, &[program, "-f", file]);
            in_netns(ns, &["nft", "--debug=netlink", "list", "ruleset"])
        })
        .collect();
    // A different ruleset is refused, not half loaded.
    let other = scratch.path().join("other.nft");
    std::fs::write(&other, ruleset.replace("policy drop", "policy accept")).unwrap();
    let refused = Command::new("ip")
        .args(["netns", "exec", &names[0]])
        .arg(&loader)
        .arg("-f")
        .arg(&other)
        .output()
        .unwrap();
    let after = in_netns(&names[0], &["nft", "--debug=netlink", "list", "ruleset"]);
    assert!(listings[1].contains("[ masq ]"), "{}", listings[1]);
    assert_eq!(
        listings[0], listings[1],
        "the loader's rules differ from nft's"
    );
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not the ruleset"));
    assert_eq!(after, listings[0]);
}

#[test]
fn the_lab_s_batctl_speaks_batman_adv_s_netlink_or_says_it_is_missing() {
    if !gate::Needs::new().program("cc", "gcc").met() {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let source = scratch.path().join("batctl.c");
    std::fs::write(&source, build::BATCTL_SOURCE).unwrap();
    let batctl = scratch.path().join("batctl");
    let cc = Command::new("cc")
        .args(build::NFT_CFLAGS)
        .arg(&source)
        .arg("-o")
        .arg(&batctl)
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let run = |args: &[&str]| Command::new(&batctl).args(args).output().unwrap();
    let version = run(&["-v"]);
    let text = String::from_utf8_lossy(&version.stdout);
    assert!(version.status.success());
    assert!(
        text.starts_with("batctl xtask-lab-subset [batman-adv: "),
        "{text}"
    );
    // What it does not do is refused before anything is sent.
    let add = run(&["meshif", "bat0", "if", "add", "eth1"]);
    assert!(!add.status.success());
    assert!(String::from_utf8_lossy(&add.stderr).contains("ip link set DEV master bat0"));
    // This machine's kernel lists its routing algorithms, or has no
    // batman-adv (a kernel without CONFIG_BATMAN_ADV), and it says which.
    let ra = run(&["ra"]);
    let (out, err) = (
        String::from_utf8_lossy(&ra.stdout),
        String::from_utf8_lossy(&ra.stderr),
    );
    if ra.status.success() {
        assert!(out.contains(" * BATMAN_IV"), "{out}");
    } else {
        assert!(
            err.contains("no generic netlink family \"batadv\""),
            "{err}"
        );
    }
}

#[test]
#[ignore = "manual: builds the ath79 lab kernel (10–25 minutes); run with --ignored"]
fn the_ath79_lab_kernel_boots_the_static_guest_and_masquerades() {
    // One lab at a time in this process (common::leftovers).
    let _lab = crate::common::leftovers::one_at_a_time();
    let (layout, target) = ath79();
    let spec = kernel::spec_of(&target).unwrap();
    let needs = gate::Needs::new()
        .slow("builds the ath79 lab kernel and boots it in QEMU")
        .root("taps and network namespaces")
        .check(lab::check_host_tools(spec));
    if !needs.met() {
        return;
    }
    let initramfs = rootfs::prepare(&layout, spec).unwrap();
    let all = variants::load(&layout.variants_file(), &layout.patches_dir()).unwrap();
    let baseline = variants::select(&all, &["baseline".to_string()]).unwrap();
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
    let scratch = tempfile::tempdir().unwrap();
    let image = Image {
        kernel: &kernels[0].image,
        dtb: None,
        initramfs: &initramfs,
    };
    let mut bed = QemuTestbed::boot(
        spec,
        &nat_router::topology(),
        image,
        (scratch.path(), "t"),
        None,
    )
    .unwrap();
    // GRO off and on again: ethtool's ioctl path works on e1000.
    bed.set_gro(Gro::Off).unwrap();
    let features = bed
        .guest("router")
        .unwrap()
        .check("ethtool -k lan")
        .unwrap();
    assert!(
        features.contains("generic-receive-offload: off"),
        "{features}"
    );
    bed.set_gro(Gro::On).unwrap();
    bed.iperf(
        ("lan", "wan"),
        Direction::LanToWan,
        1,
        (scratch.path(), "nat"),
    )
    .unwrap();
    let table = bed.guest("router").unwrap().conntrack().unwrap();
    assert!(
        table.contains(&format!(
            "src={} dst={}",
            nat_router::WAN_HOST_IP,
            nat_router::GUEST_WAN_IP
        )),
        "no masqueraded connection in:\n{table}"
    );
    // The lab's batctl and dbench's tbench, built static, work on the
    // big-endian kernel: a two-node mesh inside the guest, a 2 s tbench.
    let guest = bed.guest("router").unwrap();
    let version = guest_checks::batctl_version(guest);
    assert!(version.contains("xtask-lab-subset"), "{version}");
    eprintln!("{}", guest_checks::batman_pair(guest));
    let (mb_per_s, line) = guest_checks::tbench(guest, 2);
    eprintln!("{line}");
    assert!(mb_per_s > 0.0, "{line}");
    drop(bed);
    assert!(Path::new(&kernels[0].image).is_file());
}
