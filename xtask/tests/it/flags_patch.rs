//! The committed 201-extra_optimization.patch of every kernel series is what
//! `cargo xtask flags set baseline` generates against that kernel's real
//! Makefile, and GNU patch applies it there.

use crate::common::gate;

use xshell::{cmd, Shell};
use xtask::inputs::{kernel_source, variants};
use xtask::patches::extra_optimization;
use xtask::util::layout::Layout;

#[test]
fn committed_flag_patches_are_generated_and_apply_with_gnu_patch() {
    let layout = Layout::from_manifest_dir();
    let sh = Shell::new().unwrap();
    let all = variants::load(&layout.variants_file(), &layout.patches_dir()).unwrap();
    let baseline = variants::select(&all, &["baseline".into()])
        .unwrap()
        .remove(0);
    let mut checked = 0;
    for (kver, dir) in extra_optimization::pending_dirs(&layout.patches_dir()).unwrap() {
        let tarball = kernel_source::default_tarball(&kver);
        let how = format!("apt-get install linux-source-{kver}");
        if !gate::Needs::new().file(&tarball, &how).met() {
            continue;
        }
        let makefile = kernel_source::top_makefile_for_series(&sh, &kver, &[]).unwrap();
        let committed = std::fs::read_to_string(dir.join(extra_optimization::PATCH_NAME)).unwrap();
        let generated = extra_optimization::patch_text(
            extra_optimization::patch_header(&committed),
            &makefile,
            &baseline,
        )
        .unwrap();
        assert_eq!(
            committed, generated,
            "{kver}: run `cargo xtask flags set baseline`"
        );

        let tree = tempfile::tempdir().unwrap();
        std::fs::write(tree.path().join("Makefile"), &makefile).unwrap();
        let patch_file = dir.join(extra_optimization::PATCH_NAME);
        let _cd = sh.push_dir(tree.path());
        let out = cmd!(sh, "patch -p1 --batch --fuzz=0 -i {patch_file}")
            .read()
            .unwrap();
        assert_eq!(out.trim(), "patching file Makefile", "{kver}: {out}");
        let patched = std::fs::read_to_string(tree.path().join("Makefile")).unwrap();
        assert_eq!(
            patched,
            extra_optimization::rewrite_makefile(&makefile, &baseline).unwrap()
        );
        checked += 1;
    }
    // Every series was checked or skipped through the gate, which fails
    // under CI; an empty patches/ would check nothing.
    assert!(checked + gate::skipped_so_far() > 0, "no kernel series");
}
