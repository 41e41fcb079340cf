//! `cargo xtask bench …`: every benchmark of the workbench, in one place.
//! Each times one stage against its reference and prints the ratio or the
//! goals in one run (speed goals are benchmarks, not timed tests):
//!
//! * [`build`] (`bench build`): the build pipeline against raw `make`,
//!   ccache cold and warm, a patch-only variant, distcc.
//! * [`lab`] (`bench lab`): the QEMU router lab's boot and per-run
//!   overhead, and the cache model's slowdown.
//! * [`patches`] (`bench patches`): the patch engine against a GNU `patch`
//!   loop and `quilt push -a`.
//! * [`symbols`] (`bench symbols`): `size-report --symbols` against the
//!   kernel's `scripts/bloat-o-meter`.
//!
//! `bench verdicts`, the lab verdict's calibration, is the report's
//! (`report::lab::calibrate`), which the report itself runs.

pub mod build;
pub mod lab;
pub mod patches;
pub mod symbols;
