//! What an OpenWrt-mode build (`build --openwrt PATH`) records beyond a
//! default build, in `result.json`'s `openwrt` field: the OpenWrt target,
//! its KCFLAGS, every OpenWrt patch left out on this source and why, and
//! what `make olddefconfig` did to OpenWrt's kernel config.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Written next to `result.json` by an OpenWrt-mode build: every OpenWrt
/// patch with its class on this source, so the dropped (`upstream`) and
/// left-out (`conflict`) patches of a build are on record.
pub const CLASSIFICATION_FILE: &str = "openwrt-patches.json";

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
    /// The config files merged, in order, relative to the checkout
    /// (`target/linux/generic/config-6.12`, …); empty in records of older
    /// workbenches.
    #[serde(default)]
    pub config_files: Vec<String>,
    /// A lab kernel's (`lab --openwrt PATH`): what is OpenWrt's and what
    /// the lab added; `None` for a router build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<OpenwrtLabRecord>,
}

/// What a lab kernel built in OpenWrt mode (`lab --openwrt PATH`) took from
/// OpenWrt and what the lab added. The config and patch series are those
/// of the QEMU machine's OpenWrt target (`target` and `config_files` of the
/// [`OpenwrtRecord`]); the KCFLAGS are the router target's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenwrtLabRecord {
    /// The router's OpenWrt target (`ath79/generic`), whose KCFLAGS the lab
    /// kernel has.
    pub router_target: String,
    /// Where the router's KCFLAGS came from: `EXTRA_OPTIMIZATION from …,
    /// KERNEL_CFLAGS from …`.
    pub kcflags_from: String,
    /// The router's CPU as OpenWrt describes it, and the flags it derives
    /// from it, which OpenWrt's kernel build does not pass (nor does the lab).
    pub cpu: CpuRecord,
    /// The lab's fragments merged onto OpenWrt's config, in order, with sha256.
    pub fragments: Vec<FragmentRecord>,
    /// Every symbol whose final value differs from what `make olddefconfig`
    /// makes of OpenWrt's config (and the variant's lines) alone, by name.
    pub added: Vec<LabSymbol>,
    /// OpenWrt patches the lab kernel leaves out on purpose (beyond the
    /// series' `dropped`), with why.
    pub left_out: Vec<LeftOutPatch>,
}

/// The router's `CPU_TYPE` as recorded (`inputs::openwrt::cpu::CpuType`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuRecord {
    /// `CPU_TYPE` (`24kc`), empty when unset.
    pub cpu_type: String,
    /// `CPU_SUBTYPE`, empty when unset.
    pub cpu_subtype: String,
    /// Where they were set (`target/linux/ath79/Makefile:6`).
    pub from: String,
    /// The flags OpenWrt derives from them (`-mips32r2 -mtune=24kc`).
    pub flags: Vec<String>,
    /// Where those come from (`include/target.mk:237 (CPU_CFLAGS_24kc)`).
    pub flags_from: String,
}

/// One fragment file of the lab.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FragmentRecord {
    /// Its path relative to `targets/` (`kconfig/lab-openwrt.config`).
    pub file: String,
    /// sha256 of its bytes.
    pub sha256: String,
}

/// A symbol the lab's fragments changed. Values as in `.config` (`y`, `m`,
/// `2`), `n` for "is not set", `None` for absent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabSymbol {
    /// Name without `CONFIG_`.
    pub symbol: String,
    /// Its value in OpenWrt's config after `make olddefconfig`, without the lab.
    pub openwrt: Option<String>,
    /// Its value in the lab kernel's `.config`.
    pub lab: Option<String>,
    /// The fragment line that sets it (`kconfig/lab-openwrt.config:9`);
    /// `None` when it changed as a consequence of others (a `select`, a
    /// default, a dependency).
    pub set_by: Option<String>,
}

/// An OpenWrt patch the lab kernel leaves out on purpose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOutPatch {
    /// Quilt name (`platform/…`) or file in the checkout.
    pub name: String,
    /// Why.
    pub reason: String,
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
