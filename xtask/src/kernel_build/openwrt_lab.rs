//! OpenWrt mode's lab kernels (`cargo xtask lab --openwrt PATH`): each
//! variant's kernel built as OpenWrt builds it for a QEMU machine of the
//! router's ISA, with the router's compiler flags.
//!
//! * Config and patches: OpenWrt's own target for the machine (`[lab]
//!   openwrt` of the router's target file: `malta/le`, `malta/be`,
//!   `armsr/armv7`): generic, board and subtarget `config-<kver>` as
//!   include/target.mk merges them, generic and board patch series as
//!   include/quilt.mk applies them ([`super::openwrt::OpenwrtBackend`]).
//! * KCFLAGS: the router target's (`ath79/generic`, `bcm53xx/generic`:
//!   `-fno-caller-saves`, `-falign-functions=32`), as include/kernel.mk
//!   passes them. The router's `CPU_TYPE` and the flags OpenWrt derives
//!   from it are recorded ([`crate::inputs::openwrt::cpu`]): OpenWrt's
//!   kernel build does not pass them, and neither does the lab.
//! * The lab's additions: `[lab] openwrt_fragments` on top of OpenWrt's
//!   config (the machine's NIC and console, initrd support, the ruleset's
//!   netfilter built in), then the variant's kconfig lines. Every symbol
//!   whose final value differs from what `make olddefconfig` makes of
//!   OpenWrt's config alone is recorded ([`added`]), with the fragment
//!   line that sets it.
//! * Left out on purpose: the router board's own patches and `files/`
//!   (its SoC's drivers and device trees; the lab boots the machine's
//!   kernel), each recorded with why.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::inputs::kconfig::{self as fragments, Setting};
use crate::inputs::openwrt::{
    cpu, flags, select_for, series, Checkout, OpenwrtTarget, Selection, Wanted,
};
use crate::inputs::targets::Target;
use crate::results::openwrt::{
    CpuRecord, FragmentRecord, LabSymbol, LeftOutPatch, OpenwrtLabRecord,
};
use crate::results::PatchRecord;
use crate::util::hash::sha256_bytes;

/// The lab kernel of one router target in OpenWrt mode.
#[derive(Debug, Clone)]
pub struct OpenwrtLab {
    /// The lab target's name (`ath79-lab`): the jobs this backend builds.
    pub lab_target: String,
    /// The router's target file.
    pub router: Target,
    /// `[lab] openwrt`: the machine's OpenWrt target (`malta/be`).
    pub machine: String,
    /// `[lab] openwrt_fragments`, relative to `targets/`.
    pub fragments: Vec<String>,
    /// `targets/`.
    pub targets_dir: PathBuf,
}

/// What one job of the lab resolves to, beside OpenWrt's selection.
#[derive(Debug, Clone)]
pub struct LabResolved {
    /// The router's OpenWrt target.
    pub router: OpenwrtTarget,
    /// The lab's settings, in order, origins relative to `targets/`.
    pub settings: Vec<Setting>,
    /// The record, its `added` still empty (the build fills it).
    pub record: OpenwrtLabRecord,
}

impl OpenwrtLab {
    /// The lab of `router` (whose lab target is `lab_target`), from its
    /// `[lab]` table; an error names the table's missing `openwrt` key.
    pub fn of(router: &Target, lab_target: &str, targets_dir: &Path) -> Result<OpenwrtLab> {
        let spec = router
            .lab
            .as_ref()
            .with_context(|| format!("{} has no [lab] table", router.file.display()))?;
        let Some(machine) = &spec.openwrt else {
            bail!(
                "{}: [lab] has no openwrt = \"<target/subtarget>\": no OpenWrt target of QEMU's {} to build {}'s lab kernel from; add one (malta/le, malta/be, armsr/armv7) with its openwrt_fragments",
                router.file.display(),
                spec.machine,
                router.name
            );
        };
        Ok(OpenwrtLab {
            lab_target: lab_target.to_string(),
            router: router.clone(),
            machine: machine.clone(),
            fragments: spec.openwrt_fragments.clone(),
            targets_dir: targets_dir.to_path_buf(),
        })
    }

    /// The machine's selection for the source's series, and the router's
    /// OpenWrt target (only resolved: it need not build that series).
    pub fn select(
        &self,
        checkout: &Checkout,
        series: &str,
        version: &str,
    ) -> Result<(Selection, OpenwrtTarget)> {
        let selection = select_for(
            checkout,
            &self.targets_dir,
            &self.machine,
            Wanted::Source { series, version },
        )
        .with_context(|| {
            format!(
                "{}'s lab kernel is OpenWrt's {} ([lab] openwrt in {})",
                self.router.name,
                self.machine,
                self.router.file.display()
            )
        })?;
        let router = OpenwrtTarget::resolve(checkout, &self.router.openwrt).with_context(|| {
            format!(
                "{} says openwrt = {:?}",
                self.router.file.display(),
                self.router.openwrt
            )
        })?;
        Ok((selection, router))
    }

    /// Everything of the lab's side of one job (see the module docs).
    pub fn resolve(
        &self,
        checkout: &Checkout,
        selection: &Selection,
        router: &OpenwrtTarget,
        kcflags: &flags::KernelFlags,
    ) -> Result<LabResolved> {
        let files: Vec<PathBuf> = self
            .fragments
            .iter()
            .map(|f| self.targets_dir.join(f))
            .collect();
        let mut settings = fragments::read_fragments(&files, &[], "")?;
        let prefix = format!("{}/", self.targets_dir.display());
        for s in &mut settings {
            s.origin = s.origin.trim_start_matches(&prefix).to_string();
        }
        let mut records = Vec::new();
        for (name, file) in self.fragments.iter().zip(&files) {
            let bytes =
                std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
            records.push(FragmentRecord {
                file: name.clone(),
                sha256: sha256_bytes(&bytes),
            });
        }
        let c = cpu::cpu_type(checkout, router)?;
        let record = OpenwrtLabRecord {
            router_target: router.to_string(),
            kcflags_from: format!(
                "{router}: EXTRA_OPTIMIZATION from {}, KERNEL_CFLAGS from {}",
                kcflags.extra_optimization.origin, kcflags.kernel_cflags.origin
            ),
            cpu: CpuRecord {
                cpu_type: c.cpu_type.unwrap_or_default(),
                cpu_subtype: c.cpu_subtype.unwrap_or_default(),
                from: c.from,
                flags: c.flags,
                flags_from: c.flags_from,
            },
            fragments: records,
            added: Vec::new(),
            left_out: left_out(checkout, router, &selection.target, &selection.kernel)?,
        };
        Ok(LabResolved {
            router: router.clone(),
            settings,
            record,
        })
    }
}

impl LabResolved {
    /// Recorded with the job's series (so that it is part of the build key
    /// and of `result.json`): `openwrt-lab:<router>` with the sha256 of
    /// the lab's settings, one per line.
    pub fn patch_record(&self) -> PatchRecord {
        let lines: String = self
            .settings
            .iter()
            .map(|s| format!("{}\n", s.config_line()))
            .collect();
        PatchRecord {
            name: format!("openwrt-lab:{}", self.router),
            sha256: sha256_bytes(lines.as_bytes()),
        }
    }
}

/// The router board's patches and `files/` overlays for `kver`, which the
/// lab kernel (OpenWrt's `machine`) does not carry, each with why; when
/// the board has no `patches-<kver>`, one entry saying so.
fn left_out(
    checkout: &Checkout,
    router: &OpenwrtTarget,
    machine: &OpenwrtTarget,
    kver: &str,
) -> Result<Vec<LeftOutPatch>> {
    if router.board == machine.board {
        return Ok(Vec::new());
    }
    let why = format!(
        "{}'s own (its SoC's drivers, device trees and fixes): the lab kernel is OpenWrt's {machine}, for QEMU's machine",
        router.board
    );
    let mut out: Vec<LeftOutPatch> = series::series(checkout, &router.board, kver)?
        .into_iter()
        .filter(|e| e.group == series::Group::Platform)
        .map(|e| LeftOutPatch {
            name: e.name,
            reason: why.clone(),
        })
        .collect();
    let rel = |p: &Path| {
        p.strip_prefix(checkout.root())
            .unwrap_or(p)
            .display()
            .to_string()
    };
    if out.is_empty() {
        let dir = checkout
            .board_dir(&router.board)
            .join(format!("patches-{kver}"));
        out.push(LeftOutPatch {
            name: rel(&dir),
            reason: format!(
                "not in this checkout ({} builds an older kernel; `cargo xtask patches rebase --openwrt` bumps it): nothing of the board's to leave out",
                router.board
            ),
        });
    }
    let board = checkout.board_dir(&router.board);
    for dir in [board.join("files"), board.join(format!("files-{kver}"))] {
        if dir.is_dir() {
            out.push(LeftOutPatch {
                name: format!("{}/ (overlay)", rel(&dir)),
                reason: why.clone(),
            });
        }
    }
    Ok(out)
}

/// Every symbol whose value in `lab` (the lab kernel's final `.config`)
/// differs from `openwrt` (the final `.config` of OpenWrt's config and the
/// variant's lines alone), with the line of `settings` that sets it.
pub fn added(openwrt: &str, lab: &str, settings: &[Setting]) -> Vec<LabSymbol> {
    let (before, after) = (
        super::openwrt_kconfig::values(openwrt),
        super::openwrt_kconfig::values(lab),
    );
    let mut names: Vec<&String> = before.keys().chain(after.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|n| {
            let (b, a) = (before.get(*n), after.get(*n));
            // Absent and "is not set" are the same to kconfig.
            let norm = |v: Option<&String>| v.filter(|v| *v != "n").cloned();
            norm(b) != norm(a)
        })
        .map(|n| LabSymbol {
            symbol: n.clone(),
            openwrt: before.get(n).cloned(),
            lab: after.get(n).cloned(),
            set_by: settings
                .iter()
                .find(|s| s.symbol.strip_prefix("CONFIG_") == Some(n.as_str()))
                .map(|s| s.origin.clone()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_symbols_are_the_final_differences() {
        let settings = vec![Setting {
            symbol: "CONFIG_NF_TABLES".into(),
            value: "y".into(),
            origin: "kconfig/lab-openwrt.config:16".into(),
        }];
        let openwrt = "CONFIG_A=y\n# CONFIG_NF_TABLES is not set\nCONFIG_NR_CPUS=4\n";
        let lab = "CONFIG_A=y\nCONFIG_NF_TABLES=y\nCONFIG_NFT_COUNTER=y\nCONFIG_NR_CPUS=4\n# CONFIG_X is not set\n";
        let a = added(openwrt, lab, &settings);
        let names: Vec<&str> = a.iter().map(|s| s.symbol.as_str()).collect();
        assert_eq!(names, ["NFT_COUNTER", "NF_TABLES"]);
        assert_eq!(a[1].openwrt.as_deref(), Some("n"));
        assert_eq!(a[1].lab.as_deref(), Some("y"));
        assert_eq!(
            a[1].set_by.as_deref(),
            Some("kconfig/lab-openwrt.config:16")
        );
        assert_eq!(a[0].set_by, None);
    }
}
