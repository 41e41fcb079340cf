//! How the lab tests build their lab kernels: `crate::common::lab_build`.

use xtask::kernel_build::ccache::Ccache;
use xtask::kernel_build::BuildOptions;

/// `cargo xtask build`'s options with every core and without ccache
/// (`--no-ccache`). A test run builds each lab kernel once, from a cache
/// that cannot hold its objects (a clean clone's ccache is empty, and the
/// tiny ARM builds share no object with a MIPS router kernel), and a
/// ccache miss costs about a third more than the compiler alone (kernel/
/// fork.c of arm-tiny: 0.74 s plain, 1.0 s through ccache with
/// `CCACHE_RECACHE=1`, medians of 6). The build key does not depend on
/// ccache (`e2e_patch_only.rs`), so a lab kernel built either way serves
/// the other.
pub fn options() -> BuildOptions {
    BuildOptions {
        ccache: Ccache::Off,
        ..BuildOptions::with_jobs(std::thread::available_parallelism().map_or(2, |n| n.get()))
    }
}
