//! The size family: what a build's bytes are, compared between the base
//! and a variant ([`family`]). Every number is in bytes, one sample per
//! side, so every change is exact ([`super::model::Change`]).

use super::model::{Change, Family, HexRow, Metric, UnitLabel};
use crate::results::BuildResult;

/// Name of the family of build sizes.
pub const FAMILY: &str = "size";
/// [`Metric::kind`] of an artifact's file size.
pub const ARTIFACT_KIND: &str = "artifact";
/// [`Metric::kind`] of a vmlinux section total.
pub const SECTION_KIND: &str = "section";

/// The build sizes of `base` and `variant` (bytes, one sample per
/// side), and the artifacts only one of them has as (file name,
/// variant that has it).
///
/// Metrics: each artifact both builds have ([`ARTIFACT_KIND`], in the
/// recorded target's `artifacts` order, then any others by name), then
/// the vmlinux sections `text`, `data`, `bss` and `dec`
/// ([`SECTION_KIND`], as binutils `size` counts them; `dec` with its
/// hex row).
pub fn family(base: &BuildResult, variant: &BuildResult) -> (Family, Vec<(String, String)>) {
    let mut family = Family::new(FAMILY, "bytes", UnitLabel::Implied);
    let mut names: Vec<String> = Vec::new();
    let ordered = base
        .target
        .artifacts
        .iter()
        .chain(&variant.target.artifacts);
    let present = base.artifacts.keys().chain(variant.artifacts.keys());
    for n in ordered
        .filter(|n| base.artifacts.contains_key(*n) || variant.artifacts.contains_key(*n))
        .chain(present)
    {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    let mut unpaired = Vec::new();
    for name in names {
        match (base.artifacts.get(&name), variant.artifacts.get(&name)) {
            (Some(b), Some(v)) => family.metrics.push(Metric::whole(
                ARTIFACT_KIND,
                &name,
                &name,
                &format!("{name} size"),
                Change {
                    before: b.size,
                    after: v.size,
                },
            )),
            (Some(_), None) => unpaired.push((name, base.variant.name.clone())),
            (None, Some(_)) => unpaired.push((name, variant.variant.name.clone())),
            (None, None) => {}
        }
    }
    let (b, v) = (&base.vmlinux_sections, &variant.vmlinux_sections);
    for (item, before, after) in [
        ("text", b.text, v.text),
        ("data", b.data, v.data),
        ("bss", b.bss, v.bss),
        ("dec", b.dec(), v.dec()),
    ] {
        let label = format!("vmlinux {item}");
        let mut metric =
            Metric::whole(SECTION_KIND, item, &label, &label, Change { before, after });
        if item == "dec" {
            metric.hex = Some(HexRow {
                item: "hex".to_string(),
                label: "vmlinux hex".to_string(),
            });
        }
        family.metrics.push(metric);
    }
    (family, unpaired)
}
