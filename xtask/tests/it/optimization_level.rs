//! Every target file, and the lab kernel made from it, builds at the
//! optimization level OpenWrt builds its subtarget with (else its sizes are not the sizes OpenWrt
//! ships): derived
//! from the OpenWrt snapshot as OpenWrt derives it (the generic and board
//! `config-<kver>` files, the subtarget's FEATURES, and
//! config/Config-kernel.in's default for the choice, through
//! [`optimization::default_level`] and [`kconfig::kernel_dot_config`]),
//! and compared with the level the target's kconfig fragments set.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::common::openwrt_fixture::Fixture;
use xtask::inputs::kconfig::read_fragments;
use xtask::inputs::openwrt::optimization::{self, Level};
use xtask::inputs::openwrt::{kconfig, Checkout, OpenwrtTarget};
use xtask::inputs::targets::{self, Target};
use xtask::inputs::variants;
use xtask::lab::kernel::lab_target;
use xtask::util::layout::Layout;

/// The level the kernel `.config` OpenWrt writes for `target` chooses: its
/// config files merged, then Config-kernel.in's default (what `make
/// defconfig` puts in an unconfigured checkout's `.config`).
fn openwrt_level(checkout: &Checkout, target: &OpenwrtTarget) -> (Level, String) {
    let kver = checkout.kernel_versions(&target.board).unwrap().default;
    let files = kconfig::config_files(checkout, target, &kver);
    assert!(!files.is_empty(), "{target}: no config-{kver}");
    let default = optimization::default_level(checkout, target)
        .unwrap()
        .expect("the snapshot's Config-kernel.in has the choice");
    let config = kconfig::kernel_dot_config(checkout, &files, Some(default.level)).unwrap();
    let level = optimization::level_in_kernel_config(&String::from_utf8(config).unwrap())
        .unwrap_or_else(|| panic!("{target}: the kernel .config chooses no level"));
    (level, default.why)
}

/// The level a list of fragments (and a variant's lines) sets: each must
/// set it explicitly, not leave it to the `make` base (tinyconfig chooses
/// `-Os`, allnoconfig `-O2`).
fn fragments_level(what: &str, fragments: &[PathBuf], extra: &[String]) -> Level {
    let settings = read_fragments(fragments, extra, what).unwrap();
    let value = |symbol: &str| {
        settings
            .iter()
            .find(|s| s.symbol == format!("CONFIG_{symbol}"))
            .map(|s| s.value.clone())
    };
    match (
        value("CC_OPTIMIZE_FOR_PERFORMANCE").as_deref(),
        value("CC_OPTIMIZE_FOR_SIZE").as_deref(),
    ) {
        (Some("y"), Some("n")) => Level::O2,
        (Some("n"), Some("y")) => Level::Os,
        other => panic!(
            "{what}: its fragments must choose one level, both symbols set (y and n); they set {other:?}"
        ),
    }
}

/// The OpenWrt target a workbench target stands for. A profile named after
/// a subtarget OpenWrt does not have (arm-tiny's `bcm53xx/tiny`) takes the
/// board's subtargets, which must agree.
fn openwrt_targets(checkout: &Checkout, target: &Target) -> Vec<OpenwrtTarget> {
    if let Ok(t) = OpenwrtTarget::resolve(checkout, &target.openwrt) {
        return vec![t];
    }
    let board = target.openwrt.split('/').next().unwrap();
    let board = OpenwrtTarget::resolve(checkout, &format!("{board}/generic"))
        .unwrap()
        .board;
    checkout
        .subtargets(&board)
        .unwrap()
        .into_iter()
        .map(|s| OpenwrtTarget {
            board: board.clone(),
            subtarget: Some(s),
        })
        .collect()
}

#[test]
fn every_target_and_lab_kernel_builds_at_openwrt_s_level() {
    let Some(fx) = Fixture::unpack() else { return };
    let checkout = Checkout::open(&fx.root).unwrap();
    // The rule itself, on the snapshot: small-flash subtargets are -Os,
    // the rest -O2.
    for (spelling, want) in [
        ("ath79/tiny", Level::Os),
        ("ramips/mt76x8", Level::Os),
        ("bcm47xx/legacy", Level::Os),
        ("ath79/generic", Level::O2),
        ("ramips/mt7620", Level::O2),
    ] {
        let t = OpenwrtTarget::resolve(&checkout, spelling).unwrap();
        let (level, why) = openwrt_level(&checkout, &t);
        assert_eq!(level, want, "{spelling}: {why}");
    }
    let layout = Layout::from_manifest_dir();
    let mut checked = Vec::new();
    for target in targets::load_all(&layout.targets_dir()).unwrap() {
        let levels: BTreeSet<(String, String)> = openwrt_targets(&checkout, &target)
            .iter()
            .map(|t| {
                let (level, why) = openwrt_level(&checkout, t);
                (level.to_string(), format!("{t}: {why}"))
            })
            .collect();
        let wanted: BTreeSet<&String> = levels.iter().map(|(l, _)| l).collect();
        assert_eq!(wanted.len(), 1, "{}: {levels:?}", target.name);
        let want = wanted.into_iter().next().unwrap().clone();
        let own = fragments_level(
            &target.file.display().to_string(),
            &target.fragment_paths(),
            &[],
        );
        assert_eq!(
            own.to_string(),
            want,
            "{}: its fragments build {own}, OpenWrt builds {want} ({levels:?})",
            target.name
        );
        let text = std::fs::read_to_string(&target.file).unwrap();
        assert!(
            text.contains("small_flash")
                && text.contains(&format!(
                    "kconfig/{}.config",
                    match own {
                        Level::O2 => "o2",
                        Level::Os => "os",
                    }
                )),
            "{}: the comment beside the fragments names the rule (small_flash) and the fragment",
            target.name
        );
        if let Some(spec) = &target.lab {
            let lab = lab_target(&target).unwrap();
            let level = fragments_level(&lab.name, &lab.fragment_paths(), &[]);
            assert_eq!(level, own, "{}: its lab kernel builds {level}", target.name);
            // OpenWrt mode's lab kernels take the router's level from its
            // OpenWrt target; their own fragments must not set one.
            let dir = layout.targets_dir();
            let openwrt: Vec<PathBuf> =
                spec.openwrt_fragments.iter().map(|f| dir.join(f)).collect();
            let settings = read_fragments(&openwrt, &[], "openwrt_fragments").unwrap();
            assert!(
                !settings
                    .iter()
                    .any(|s| s.symbol.starts_with("CONFIG_CC_OPTIMIZE_FOR_")),
                "{}: [lab] openwrt_fragments set the level",
                target.name
            );
        }
        checked.push(format!("{} {own}", target.name));
    }
    assert_eq!(
        checked,
        [
            "arm-tiny -O2",
            "ath79 -O2",
            "ath79-tiny -Os",
            "bcm53xx -O2",
            "brcm47xx -O2",
            "ramips-mt7621 -O2",
            "ramips-mt76x8 -Os",
        ]
    );
}

/// `-Os` stays available on purpose: the `-os` variants switch any target
/// to it (and nothing else: their flags are their `-O2` twins').
#[test]
fn the_os_variants_choose_os() {
    let layout = Layout::from_manifest_dir();
    let all = variants::load(&layout.variants_file(), &layout.patches_dir()).unwrap();
    let bcm53xx = Target::load(&layout.targets_dir().join("bcm53xx.toml")).unwrap();
    let mut seen = 0;
    for v in all.iter().filter(|v| v.name.ends_with("-os")) {
        let twin = all
            .iter()
            .find(|t| t.name == v.name.trim_end_matches("-os"))
            .unwrap();
        assert_eq!((&v.os_flags, &v.o2_flags), (&twin.os_flags, &twin.o2_flags));
        let level = fragments_level(&v.name, &bcm53xx.fragment_paths(), &v.kconfig);
        assert_eq!(level, Level::Os, "{}", v.name);
        seen += 1;
    }
    assert_eq!(seen, 2);
}
