//! The kernel patch stack as OpenWrt keeps it.
//!
//! * [`engine`]: parse and apply patches with GNU patch 2.7 semantics.
//! * [`diff`]: write unified diffs in OpenWrt's quilt form.
//! * [`series`]: the series in OpenWrt's order (generic backport, pending,
//!   hack, then the target's patches, then the variant's).
//! * [`extra_optimization`]: generate `201-extra_optimization.patch` for a
//!   variant's flags.
//! * [`patched_source`]: a patched copy of the pristine source, cached per
//!   series.
//! * [`stack`]: push/pop/refresh/status over an editable work tree.
//! * [`rebase`]: move the series to a new kernel, classifying each patch.
//! * [`openwrt_sync`]: copy patches between `patches/` and an OpenWrt checkout.
//! * [`openwrt_series`]: OpenWrt mode: an OpenWrt checkout's series classified
//!   and applied on the workbench's kernel source.
//! * [`bench`](mod@bench): push against GNU patch and quilt.

pub mod commands;
pub mod diff;
pub mod engine;
pub mod extra_optimization;
pub mod openwrt_bump;
pub mod openwrt_series;
pub mod openwrt_sync;
pub mod patched_source;
pub mod rebase;
pub mod series;
pub mod stack;
