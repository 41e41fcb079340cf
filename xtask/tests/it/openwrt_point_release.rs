//! (c) The point-release gap: OpenWrt's 6.12 series for ramips/mt7621
//! (made for 6.12.40) on Debian's 6.12 source (6.12.117). Every patch gets
//! a class from the rebase classifier on a hard-linked copy of the
//! pristine tree with OpenWrt's overlays (as the OpenWrt backend prepares
//! it, cached); then, on a fresh copy, every patch that is neither
//! upstream nor a conflict applies in order.

use crate::common::openwrt_fixture;

use openwrt_fixture::Fixture;
use xshell::Shell;
use xtask::inputs::kernel_source::{self, SourceInput};
use xtask::inputs::openwrt::{Checkout, OpenwrtTarget};
use xtask::patches::openwrt_series::{self, OpenwrtSeries, OPENWRT_APPLY};
use xtask::patches::rebase::Class;
use xtask::util::layout::Layout;

#[test]
fn mt7621_series_is_classified_and_the_kept_patches_apply_to_debian_6_12() {
    let Some(tarball) = openwrt_fixture::debian_tarball("6.12") else {
        return;
    };
    let Some(fx) = Fixture::unpack() else { return };
    let sh = Shell::new().unwrap();
    let layout = Layout::from_manifest_dir();
    let pristine = kernel_source::pristine_tree(&sh, &layout, &SourceInput::Tarball(tarball))
        .expect("unpacking Debian's 6.12 under target/xtask/pristine/");
    let checkout = Checkout::open(&fx.root).unwrap();
    let target = OpenwrtTarget::resolve(&checkout, "ramips/mt7621").unwrap();
    let series = OpenwrtSeries::load(&checkout, &target, "6.12").unwrap();
    assert!(!series.overlays.is_empty());

    // Classified once per source and series, cached under target/xtask/src/.
    let prepared = openwrt_series::prepare_cached(&sh, &layout, &pristine, &series).unwrap();
    let again = openwrt_series::prepare_cached(&sh, &layout, &pristine, &series).unwrap();
    assert_eq!(again.key, prepared.key);
    assert_eq!(
        again.classification.patches,
        prepared.classification.patches
    );
    let classes = prepared.classification;
    assert_eq!(classes.patches.len(), series.entries.len());
    for (p, e) in classes.patches.iter().zip(&series.entries) {
        assert_eq!(p.name, e.name, "classification out of series order");
    }
    assert_eq!(
        prepared.applied.len(),
        classes
            .patches
            .iter()
            .filter(|p| classes.is_kept(&p.name))
            .count()
    );
    let counts = classes.counts();
    eprintln!(
        "ramips/mt7621 on Linux {}: {} patches: {}",
        pristine.version,
        classes.patches.len(),
        classes.summary()
    );
    for class in [Class::Upstream, Class::Conflict] {
        for p in classes.of_class(class) {
            eprintln!("  {:<8} {} {}", class.as_str(), p.name, p.note);
        }
    }
    assert_eq!(counts.values().sum::<usize>(), series.entries.len());
    assert!(
        counts[&Class::Clean] > series.entries.len() / 2,
        "{}",
        classes.summary()
    );

    std::fs::create_dir_all(layout.work_dir()).unwrap();
    let work = tempfile::tempdir_in(layout.work_dir()).unwrap();
    let fresh = work.path().join("apply");
    openwrt_series::prepare_tree(&sh, &pristine.dir, &fresh, &series.overlays).unwrap();
    let applied = openwrt_series::apply_kept(&fresh, &series, &classes, &OPENWRT_APPLY).unwrap();
    assert_eq!(
        applied,
        counts[&Class::Clean] + counts[&Class::Offset] + counts[&Class::Fuzz]
    );
    // The pristine tree is untouched (overlays and patches broke the links).
    assert_eq!(
        kernel_source::makefile_version(&pristine.dir).unwrap(),
        pristine.version
    );
    let overlay = xtask::inputs::openwrt::series::overlay_files(&series.overlays).unwrap();
    for rel in overlay.keys() {
        assert!(
            fresh.join(rel).exists(),
            "overlay file {} missing",
            rel.display()
        );
        if let Ok(pristine_meta) = std::fs::metadata(pristine.dir.join(rel)) {
            use std::os::unix::fs::MetadataExt;
            let fresh_meta = std::fs::metadata(fresh.join(rel)).unwrap();
            assert_ne!(
                pristine_meta.ino(),
                fresh_meta.ino(),
                "{} still linked",
                rel.display()
            );
        }
    }
}
