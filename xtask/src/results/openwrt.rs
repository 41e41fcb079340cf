//! What an OpenWrt-mode build (`build --openwrt PATH`) records beyond a
//! default build, in `result.json`'s `openwrt` field: the OpenWrt target,
//! its KCFLAGS, every OpenWrt patch left out on this source and why, and
//! what `make olddefconfig` did to OpenWrt's kernel config.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The OpenWrt side of one build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenwrtRecord {
    /// The checkout, as given to `--openwrt`.
    pub checkout: String,
    /// OpenWrt's `target/subtarget` (`ramips/mt7621`).
    pub target: String,
    /// The kernel series of its config and patches (`6.12`).
    pub kernel: String,
    /// KCFLAGS as include/kernel.mk passes them (`-fno-caller-saves`, …).
    pub kcflags: Vec<String>,
    /// OpenWrt patches per class on this source (`clean`, `offset`, `fuzz`,
    /// `upstream`, `conflict`), every class present.
    pub patch_counts: BTreeMap<String, usize>,
    /// The patches not applied: `upstream` (the source has them already)
    /// and `conflict` (neither applies nor reverse-applies), in series order.
    pub dropped: Vec<DroppedPatch>,
    /// What `make olddefconfig` did to OpenWrt's config.
    pub kconfig: KconfigChanges,
}

/// One OpenWrt patch left out of the build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedPatch {
    /// Quilt name (`generic-hack/…`, `platform/…`).
    pub name: String,
    /// `upstream` or `conflict`.
    pub class: String,
    /// GNU patch's words for it (failed hunks, missing files), or why it is
    /// upstream.
    pub note: String,
}

/// OpenWrt's `.config` (with the variant's lines) against the one `make
/// olddefconfig` wrote. Symbols are names without `CONFIG_`; values as in
/// `.config` (`y`, `m`, `"text"`, `0x10`), `n` for `# … is not set`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KconfigChanges {
    /// Symbols set in the input that no `Kconfig*` file of the patched
    /// source defines (OpenWrt patches the source does not carry, options
    /// removed upstream): olddefconfig drops them.
    pub unknown: Vec<String>,
    /// Symbols the source defines, set (not `n`) in the input, that
    /// olddefconfig left out of `.config` (their dependencies are not
    /// met), with the input's value.
    pub unmet: Vec<ChangedSymbol>,
    /// Symbols whose value olddefconfig changed.
    pub changed: Vec<ChangedSymbol>,
}

/// One symbol's value before and after `make olddefconfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedSymbol {
    /// Name without `CONFIG_`.
    pub symbol: String,
    /// The value OpenWrt's config asked for.
    pub wanted: String,
    /// The value in the final `.config` (`None`: absent).
    pub got: Option<String>,
}
