//! Every variant's experiment patches apply (dry run, as the build applies
//! them: -p1, no fuzz) to the real pristine Linux 6.12 tree that
//! `cargo xtask test` unpacked, after the series they follow.

use crate::common::gate;

use xtask::inputs::variants;
use xtask::patches::engine::{check_patch, parse_patch, ApplyOptions};
use xtask::util::layout::Layout;

#[test]
fn experiment_patches_apply_to_the_real_kernel() {
    let layout = Layout::from_manifest_dir();
    let pristine = std::fs::read_dir(layout.pristine_dir())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("linux-source-6.12"))
        .find(|p| p.join("Makefile").is_file());
    let Some(tree) = pristine else {
        let what = format!(
            "no unpacked Linux 6.12 under {} (`cargo xtask test` builds first)",
            layout.pristine_dir().display()
        );
        // Always unmet: a failure under CI, a counted skip elsewhere.
        let _ = gate::Needs::new().missing(what).met();
        return;
    };
    let all = variants::load(&layout.variants_file(), &layout.patches_dir()).unwrap();
    let mut checked = 0;
    for variant in &all {
        for file in &variant.patches {
            let patch = parse_patch(&std::fs::read(file).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let options = ApplyOptions { strip: 1, fuzz: 0 };
            check_patch(&tree, &patch, &options)
                .unwrap_or_else(|e| panic!("{} (variant {}): {e}", file.display(), variant.name));
            checked += 1;
        }
    }
    assert!(checked > 0, "no variant has experiment patches to check");
}
