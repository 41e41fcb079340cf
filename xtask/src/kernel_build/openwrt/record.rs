//! What an OpenWrt-mode build records beside its result: the OpenWrt
//! side of `result.json` and the patches' classes
//! ([`super::CLASSIFICATION_FILE`]).

use std::path::Path;

use anyhow::{Context, Result};

use super::resolved::Resolved;
use crate::patches::rebase::Class;
use crate::results::openwrt::{
    DroppedPatch, KconfigChanges, LabSymbol, OpenwrtLabRecord, OpenwrtRecord,
};

/// What result.json records of the OpenWrt side of a build; `added`:
/// a lab kernel's symbols the lab changed ([`crate::kernel_build::openwrt_lab::added`]).
pub(super) fn record(
    checkout: &Path,
    r: &Resolved,
    kconfig: KconfigChanges,
    added: Vec<LabSymbol>,
) -> OpenwrtRecord {
    let c = &r.openwrt.classification;
    OpenwrtRecord {
        checkout: checkout.display().to_string(),
        target: r.selection.target.to_string(),
        kernel: r.selection.kernel.clone(),
        kcflags: r.kcflags.kcflags.clone(),
        patch_counts: c
            .counts()
            .into_iter()
            .map(|(k, v)| (k.as_str().to_string(), v))
            .collect(),
        dropped: c
            .patches
            .iter()
            .filter(|p| matches!(p.class, Class::Upstream | Class::Conflict))
            .map(|p| DroppedPatch {
                name: p.name.clone(),
                class: p.class.as_str().to_string(),
                note: if p.class == Class::Upstream && p.note.is_empty() {
                    "applies in reverse: the source has it already".to_string()
                } else {
                    p.note.clone()
                },
            })
            .collect(),
        kconfig,
        config_files: r
            .config_files
            .iter()
            .map(|f| f.strip_prefix(checkout).unwrap_or(f).display().to_string())
            .collect(),
        lab: r.lab.as_ref().map(|l| OpenwrtLabRecord {
            added,
            ..l.record.clone()
        }),
    }
}

pub(super) fn write_classification(r: &Resolved, file: &Path) -> Result<()> {
    let counts: std::collections::BTreeMap<&str, usize> = r
        .openwrt
        .classification
        .counts()
        .into_iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let json = serde_json::json!({
        "openwrt_target": r.selection.target.to_string(),
        "kernel": r.selection.kernel,
        "source_version": r.pristine.version,
        "kcflags": r.kcflags.kcflags,
        "counts": counts,
        "patches": r.openwrt.classification.patches,
    });
    let text = serde_json::to_string_pretty(&json).context("serialising the classes")?;
    crate::util::fs::write_atomic(file, text.as_bytes())
}
