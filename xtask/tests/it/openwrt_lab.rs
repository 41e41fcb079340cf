//! `lab --openwrt PATH` against the OpenWrt fixture, before anything
//! builds: which OpenWrt target each router's lab kernel is (the QEMU
//! machine's, from its `[lab] openwrt`), whose config files and series it
//! gets, the router's KCFLAGS (as include/kernel.mk passes them), the
//! router's CPU as include/target.mk derives its flags (judged by GNU make
//! on the fixture's own include/target.mk), the router board's patches
//! and overlays it leaves out, and the fragments that are the lab's.

use crate::common::openwrt_fixture;

use std::path::Path;

use openwrt_fixture::Fixture;
use xshell::{cmd, Shell};
use xtask::inputs::openwrt::{cpu, flags, kconfig, series, Checkout, OpenwrtTarget};
use xtask::inputs::targets;
use xtask::kernel_build::openwrt_lab::OpenwrtLab;
use xtask::lab::qemu_lab;
use xtask::lab::topology::{loopback, nat_router, Ruleset};
use xtask::util::layout::Layout;

/// What GNU make makes of include/target.mk's CPU flags for `cpu_type`
/// (`$(CPU_CFLAGS_$(CPU_TYPE))` with `DUMP=1`, as OpenWrt's target
/// metadata dump evaluates it) on `arch`.
fn make_cpu_flags(sh: &Shell, root: &Path, arch: &str, cpu_type: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mk = dir.path().join("cpu.mk");
    std::fs::write(
        &mk,
        "include $(TOPDIR)/include/target.mk\n$(info XL[$(strip $(CPU_CFLAGS_$(CPU_TYPE)))])\n",
    )
    .unwrap();
    let (top, include) = (root.to_path_buf(), root.join("include"));
    let out = cmd!(
        sh,
        "make -s -f {mk} TOPDIR={top} INCLUDE_DIR={include} DUMP=1 ARCH={arch} CPU_TYPE={cpu_type}"
    )
    .quiet()
    .ignore_status()
    .ignore_stderr()
    .read()
    .unwrap();
    let line = out.lines().find(|l| l.starts_with("XL[")).unwrap();
    line.trim_start_matches("XL[")
        .trim_end_matches(']')
        .to_string()
}

#[test]
fn each_lab_kernel_is_the_machines_openwrt_target_with_the_routers_kcflags() {
    let Some(fx) = Fixture::unpack() else { return };
    let sh = Shell::new().unwrap();
    let layout = Layout::from_manifest_dir();
    let checkout = Checkout::open(&fx.root).unwrap();
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    for (name, machine, arch) in [
        ("brcm47xx", "malta/le", "mipsel"),
        ("ramips-mt7621", "malta/le", "mipsel"),
        ("ath79", "malta/be", "mips"),
        ("bcm53xx", "armsr/armv7", "arm"),
    ] {
        let router = all.iter().find(|t| t.name == name).unwrap();
        let lab = OpenwrtLab::of(router, &format!("{name}-lab"), &layout.targets_dir()).unwrap();
        assert_eq!(lab.machine, machine);
        let (selection, router_target) = lab.select(&checkout, "6.12", "6.12.117").unwrap();
        assert_eq!(selection.target.to_string(), machine);
        assert_eq!(
            router_target,
            OpenwrtTarget::resolve(&checkout, &router.openwrt).unwrap()
        );

        // The machine's own config files, in include/target.mk's order.
        let files = kconfig::config_files(&checkout, &selection.target, "6.12");
        let (board, sub) = machine.split_once('/').unwrap();
        let expected: Vec<std::path::PathBuf> = [
            fx.root.join("target/linux/generic/config-6.12"),
            fx.root.join(format!("target/linux/{board}/config-6.12")),
        ]
        .into_iter()
        .chain(
            ["config-6.12", "config-default"]
                .iter()
                .map(|f| fx.root.join(format!("target/linux/{board}/{sub}/{f}")))
                .find(|f| f.is_file()),
        )
        .collect();
        assert_eq!(files, expected, "{name}");

        // The router's KCFLAGS, not the machine's.
        let router_flags = flags::kernel_flags(&checkout, &router_target).unwrap();
        let machine_flags = flags::kernel_flags(&checkout, &selection.target).unwrap();
        let r = lab
            .resolve(&checkout, &selection, &router_target, &router_flags)
            .unwrap();
        assert!(
            r.record
                .kcflags_from
                .starts_with(&format!("{router_target}: ")),
            "{}",
            r.record.kcflags_from
        );
        if name == "bcm53xx" {
            assert!(router_flags
                .kcflags
                .contains(&"-falign-functions=32".to_string()));
            assert!(!machine_flags
                .kcflags
                .contains(&"-falign-functions=32".to_string()));
        }

        // The router's CPU, with include/target.mk's flags as GNU make
        // evaluates them; on ARM, where it has none, the toolchain's.
        let c = cpu::cpu_type(&checkout, &router_target).unwrap();
        assert_eq!(r.record.cpu.cpu_type, c.cpu_type.clone().unwrap());
        let by_make = make_cpu_flags(&sh, &fx.root, arch, c.cpu_type.as_deref().unwrap());
        match name {
            "bcm53xx" => {
                assert_eq!(by_make, "", "include/target.mk has no CPU_CFLAGS_cortex-a9");
                assert_eq!(c.flags, ["-mcpu=cortex-a9"]);
                assert!(
                    c.flags_from.contains("--with-cpu=cortex-a9"),
                    "{}",
                    c.flags_from
                );
            }
            _ => {
                assert_eq!(c.flags.join(" "), by_make, "{name}");
                assert!(
                    c.flags_from.starts_with("include/target.mk:"),
                    "{}",
                    c.flags_from
                );
            }
        }

        // The router board's own patches and overlays are left out, each
        // with why; bcm53xx has none for 6.12 in this checkout.
        let platform: Vec<String> = series::series(&checkout, &router_target.board, "6.12")
            .unwrap()
            .into_iter()
            .filter(|e| e.group == series::Group::Platform)
            .map(|e| e.name)
            .collect();
        let left: Vec<&str> = r.record.left_out.iter().map(|l| l.name.as_str()).collect();
        if platform.is_empty() {
            assert_eq!(
                left.len(),
                1 + usize::from(
                    fx.root
                        .join(format!("target/linux/{}/files", router_target.board))
                        .is_dir()
                ),
                "{name}: {left:?}"
            );
            assert!(
                r.record.left_out[0].reason.contains("not in this checkout"),
                "{:?}",
                r.record.left_out[0]
            );
        } else {
            for p in &platform {
                assert!(left.contains(&p.as_str()), "{name}: {p} not left out");
            }
        }
        assert!(r.record.left_out.iter().all(|l| !l.reason.is_empty()));

        // The lab's settings come from its fragments, named by file and line.
        assert!(!r.settings.is_empty());
        for s in &r.settings {
            let (file, line) = s.origin.rsplit_once(':').unwrap();
            assert!(
                router
                    .lab
                    .as_ref()
                    .unwrap()
                    .openwrt_fragments
                    .iter()
                    .any(|f| f == file),
                "{}",
                s.origin
            );
            assert!(line.parse::<usize>().is_ok(), "{}", s.origin);
        }
        assert!(r
            .settings
            .iter()
            .any(|s| s.symbol == "CONFIG_BLK_DEV_INITRD" && s.value == "y"));

        // `[lab] max_cpus` holds in OpenWrt mode too: the machine's config
        // files (later ones override, as include/target.mk merges them) and
        // then the lab's settings build SMP with NR_CPUS at least max_cpus.
        let mut last = std::collections::BTreeMap::new();
        for f in &files {
            for line in std::fs::read_to_string(f).unwrap().lines() {
                if let Some((k, v)) = line.split_once('=') {
                    last.insert(k.to_string(), v.to_string());
                } else if let Some(k) = line
                    .strip_prefix("# ")
                    .and_then(|l| l.strip_suffix(" is not set"))
                {
                    last.insert(k.to_string(), "n".to_string());
                }
            }
        }
        for s in &r.settings {
            last.insert(s.symbol.clone(), s.value.clone());
        }
        let max_cpus = router.lab.as_ref().unwrap().max_cpus;
        let boots = match last.get("CONFIG_SMP").map(String::as_str) {
            Some("y") => last["CONFIG_NR_CPUS"].parse::<u32>().unwrap(),
            _ => 1,
        };
        assert!(
            max_cpus <= boots,
            "{name}: [lab] max_cpus = {max_cpus} but OpenWrt's {machine} kernel with the lab's fragments boots {boots}"
        );

        // The guest loads firewall4's ruleset, except ath79's static guest.
        let spec = router.lab.as_ref().unwrap();
        let mut topology = nat_router::topology();
        qemu_lab::openwrt_ruleset(&mut topology, spec);
        topology.check().unwrap();
        let loaded = topology.guest("router").unwrap().ruleset;
        let expected = if name == "ath79" {
            Ruleset::NatRouter
        } else {
            Ruleset::Firewall4
        };
        assert_eq!(loaded, Some(expected), "{name}");

        // The loopback topology loads no ruleset, with --openwrt or not.
        let mut lo = loopback::topology();
        qemu_lab::openwrt_ruleset(&mut lo, spec);
        assert_eq!(lo, loopback::topology(), "{name}");
        assert_eq!(lo.guest(loopback::GUEST).unwrap().ruleset, None);
    }
}

#[test]
fn a_target_without_an_openwrt_machine_is_told_what_to_add() {
    let layout = Layout::from_manifest_dir();
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    let mut router = all.iter().find(|t| t.name == "brcm47xx").unwrap().clone();
    router.lab.as_mut().unwrap().openwrt = None;
    let err = OpenwrtLab::of(&router, "brcm47xx-lab", &layout.targets_dir())
        .unwrap_err()
        .to_string();
    assert!(err.contains("no openwrt = \"<target/subtarget>\""), "{err}");
    assert!(err.contains("malta/le, malta/be, armsr/armv7"), "{err}");
}
