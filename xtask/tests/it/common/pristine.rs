//! The unpacked Debian Linux source the tests that write their own patches
//! diff against (`crate::common::pristine`).

use std::path::PathBuf;

use xtask::util::layout::Layout;

/// The unpacked Linux 6.12 (Debian's `linux-source-6.12`) under the
/// shared pristine directory; panics, saying how to get it, when
/// `cargo xtask test` (which unpacks it) has not run.
pub fn linux_6_12(layout: &Layout) -> PathBuf {
    for entry in walkdir::WalkDir::new(layout.pristine_dir())
        .min_depth(2)
        .max_depth(2)
    {
        let dir = entry.unwrap().into_path();
        let makefile = std::fs::read_to_string(dir.join("Makefile")).unwrap_or_default();
        if makefile.lines().any(|l| l == "PATCHLEVEL = 12") && dir.join("kernel/panic.c").is_file()
        {
            return dir;
        }
    }
    panic!(
        "no unpacked Linux 6.12 under {}; run `cargo xtask test`, which unpacks it",
        layout.pristine_dir().display()
    );
}
