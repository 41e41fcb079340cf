//! `patches rebase --openwrt`: bcm47xx of the OpenWrt fixture (Linux 6.6
//! only) bumped to Debian's 6.12 source, as scripts/kernel_bump.sh and
//! `make target/linux/refresh` would. Checked with GNU patch: the new
//! `patches-6.12` applies after OpenWrt's generic 6.12 series with no
//! fuzz and no offset (every patch the bump kept, except the conflicts it
//! lists); the configs are copies; nothing else in the checkout changed;
//! a second bump is refused.

use crate::common::openwrt_fixture;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use openwrt_fixture::Fixture;
use xshell::{cmd, Shell};
use xtask::inputs::kernel_source::{self, SourceInput};
use xtask::inputs::openwrt::{series, Checkout, OpenwrtTarget};
use xtask::patches::openwrt_bump::{self, BumpRequest};
use xtask::patches::openwrt_series::{self, OpenwrtSeries, OPENWRT_APPLY};
use xtask::patches::rebase::Class;
use xtask::util::fs::{copy_tree, CopyKind};
use xtask::util::layout::Layout;
use xtask::util::lock::Wait;

/// Every file of `root` with its bytes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().strip_prefix(root).unwrap().to_path_buf(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn bcm47xx_bumped_to_6_12_applies_without_fuzz_after_generic_6_12() {
    let Some(tarball) = openwrt_fixture::debian_tarball("6.12") else {
        return;
    };
    let Some(fx) = Fixture::unpack() else { return };
    let sh = Shell::new().unwrap();
    let layout = Layout::from_manifest_dir();
    let board = fx.root.join("target/linux/bcm47xx");
    let before = snapshot(&fx.root);
    let request = BumpRequest {
        openwrt: fx.root.clone(),
        target: "brcm47xx".into(),
        from: Some("6.6".into()),
        to: "6.12".into(),
        kernel_src: None,
        fuzz: 2,
        wait: Wait::Yes,
    };
    let bumped = openwrt_bump::run(&sh, &layout, &request).unwrap();

    // Every 6.6 patch has a class; the new directory has all but the upstream ones.
    let old: Vec<String> = std::fs::read_dir(board.join("patches-6.6"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(bumped.state.results.len(), old.len());
    let mut kept: Vec<String> = bumped
        .state
        .results
        .iter()
        .filter(|r| r.class != Class::Upstream)
        .map(|r| r.name.trim_start_matches("patches-6.12/").to_string())
        .collect();
    kept.sort();
    let mut new: Vec<String> = std::fs::read_dir(&bumped.patches_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    new.sort();
    assert_eq!(new, kept);
    assert!(
        bumped
            .state
            .results
            .iter()
            .any(|r| matches!(r.class, Class::Offset | Class::Fuzz) && r.refreshed),
        "the fixture's bcm47xx has patches that need a refresh on 6.12"
    );

    // kernel_bump.sh's copies, and nothing else changed.
    let after = snapshot(&fx.root);
    let rel = |p: &Path| p.strip_prefix(&fx.root).unwrap().to_path_buf();
    let config = rel(&board.join("config-6.12"));
    assert_eq!(after[&config], before[&rel(&board.join("config-6.6"))]);
    let makefile = rel(&board.join("Makefile"));
    for (path, bytes) in &after {
        if path == &makefile || path == &config || path.starts_with(rel(&bumped.patches_dir)) {
            continue;
        }
        assert_eq!(before.get(path), Some(bytes), "{} changed", path.display());
    }
    assert_eq!(before.len() + 1 + new.len(), after.len());
    let checkout = Checkout::open(&fx.root).unwrap();
    let versions = checkout.kernel_versions("bcm47xx").unwrap();
    assert_eq!(versions.default, "6.6");
    assert_eq!(versions.testing.as_deref(), Some("6.12"));

    // GNU patch: the generic 6.12 series (what OpenWrt mode keeps of it),
    // then the new patches-6.12 with -F0, in OpenWrt's order.
    let pristine = kernel_source::pristine_tree(&sh, &layout, &SourceInput::Tarball(tarball))
        .expect("unpacking Debian's 6.12");
    let target = OpenwrtTarget::resolve(&checkout, "bcm47xx/mips74k").unwrap();
    let series = OpenwrtSeries::load(&checkout, &target, "6.12").unwrap();
    let tree = fx.dir().join("linux");
    copy_tree(&sh, &pristine.dir, &tree, CopyKind::Full).unwrap();
    series::copy_overlays(&series.overlays, &tree).unwrap();
    let scratch = fx.dir().join("classify");
    openwrt_series::prepare_tree(&sh, &pristine.dir, &scratch, &series.overlays).unwrap();
    let classes = openwrt_series::classify_series(&scratch, &series, &OPENWRT_APPLY).unwrap();
    let conflicts: Vec<&str> = bumped
        .state
        .results
        .iter()
        .filter(|r| r.class == Class::Conflict)
        .map(|r| r.name.trim_start_matches("patches-6.12/"))
        .collect();
    let mut platform = 0;
    for entry in &series.entries {
        if !classes.is_kept(&entry.name) {
            continue;
        }
        let file = &entry.file;
        let is_platform = entry.group == series::Group::Platform;
        let fuzz = if is_platform { "0" } else { "2" };
        let out = cmd!(sh, "patch -p1 -F{fuzz} -N -d {tree} -i {file}")
            .quiet()
            .ignore_status()
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}: {said}", file.display());
        if is_platform {
            platform += 1;
            let name = file.file_name().unwrap().to_string_lossy();
            assert!(!conflicts.contains(&name.as_ref()));
            assert!(
                !said.contains("offset") && !said.contains("fuzz"),
                "{name} was not refreshed: {said}"
            );
        }
    }
    assert_eq!(
        platform,
        bumped
            .state
            .results
            .iter()
            .filter(|r| !matches!(r.class, Class::Upstream | Class::Conflict))
            .count(),
        "every kept platform patch applies on the bumped checkout"
    );

    // Once bumped, a second bump is refused and changes nothing.
    let err = openwrt_bump::run(&sh, &layout, &request).unwrap_err();
    assert!(
        format!("{err:#}").contains("already builds Linux 6.12"),
        "{err:#}"
    );
    assert_eq!(snapshot(&fx.root), after);
}

/// bcm53xx's two 6.7 backports that 6.12 already has are
/// upstream, though both still apply forwards on 6.12.117:
/// `030-v6.7-0005` with fuzz (its added port nodes are there, with 0006's
/// fixed-link inside them on the Netgear R8000) and `030-v6.7-0006` at an
/// offset once 0005 is applied (it also applies in reverse). GNU patch
/// shows what keeping 0005 did: it adds `port@7` a second time.
#[test]
fn bcm53xx_backports_already_in_6_12_are_upstream() {
    let Some(tarball) = openwrt_fixture::debian_tarball("6.12") else {
        return;
    };
    let Some(fx) = Fixture::unpack() else { return };
    let sh = Shell::new().unwrap();
    let layout = Layout::from_manifest_dir();
    let board = fx.root.join("target/linux/bcm53xx");
    let request = BumpRequest {
        openwrt: fx.root.clone(),
        target: "bcm53xx".into(),
        from: Some("6.6".into()),
        to: "6.12".into(),
        kernel_src: None,
        fuzz: 2,
        wait: Wait::Yes,
    };
    let bumped = openwrt_bump::run(&sh, &layout, &request).unwrap();
    for prefix in ["030-v6.7-0005-", "030-v6.7-0006-"] {
        let r = bumped
            .state
            .results
            .iter()
            .find(|r| r.name.starts_with(&format!("patches-6.12/{prefix}")))
            .unwrap();
        assert_eq!(r.class, Class::Upstream, "{}: {}", r.name, r.note);
        assert!(
            r.removed && r.note.contains("already in the new kernel"),
            "{}",
            r.note
        );
        assert!(!bumped
            .patches_dir
            .join(r.name.trim_start_matches("patches-6.12/"))
            .exists());
    }

    // What keeping 0005 would do: GNU patch applies it to the R8000's dts,
    // which then has two port@7 nodes.
    let pristine = kernel_source::pristine_tree(&sh, &layout, &SourceInput::Tarball(tarball))
        .expect("unpacking Debian's 6.12");
    let dts = "arch/arm/boot/dts/broadcom/bcm4709-netgear-r8000.dts";
    let tree = fx.dir().join("r8000");
    std::fs::create_dir_all(tree.join(dts).parent().unwrap()).unwrap();
    std::fs::copy(pristine.dir.join(dts), tree.join(dts)).unwrap();
    let only_r8000 = fx.dir().join("0005-r8000.patch");
    let text = std::fs::read_to_string(
        std::fs::read_dir(board.join("patches-6.6"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains("030-v6.7-0005-"))
            .unwrap(),
    )
    .unwrap();
    let start = text.find(&format!("--- a/{dts}")).unwrap();
    let end = text[start + 4..]
        .find("\n--- a/")
        .map_or(text.len(), |e| start + 4 + e + 1);
    std::fs::write(&only_r8000, &text[start..end]).unwrap();
    let out = cmd!(sh, "patch -p1 -N -d {tree} -i {only_r8000}")
        .quiet()
        .read()
        .unwrap();
    assert!(out.contains("with fuzz"), "{out}");
    let patched = std::fs::read_to_string(tree.join(dts)).unwrap();
    assert_eq!(patched.matches("port@7 {").count(), 2, "{patched}");
}
