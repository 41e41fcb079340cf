//! A lab kernel built in OpenWrt mode (`lab --openwrt PATH`) in the
//! report: what is OpenWrt's (the QEMU machine's target config and patch
//! series, the router's KCFLAGS) and what the lab added (symbols, and the
//! router board's patches it leaves out), from `result.json`'s
//! `openwrt.lab` record ([`crate::results::openwrt::OpenwrtLabRecord`]).

use crate::results::openwrt::{OpenwrtLabRecord, OpenwrtRecord};

/// The lines under a lab kernel's heading, each starting with `- `:
/// config, patches, KCFLAGS and CPU, what the lab added; none for a build
/// without a lab record.
pub fn lines(o: &OpenwrtRecord) -> Vec<String> {
    let Some(lab) = &o.lab else {
        return Vec::new();
    };
    let count = |class: &str| o.patch_counts.get(class).copied().unwrap_or(0);
    let applied = count("clean") + count("offset") + count("fuzz");
    let mut out = vec![
        format!(
            "- config: OpenWrt's {} ({})",
            o.target,
            if o.config_files.is_empty() {
                "files not recorded".to_string()
            } else {
                o.config_files.join(", ")
            }
        ),
        format!(
            "- patches: OpenWrt's {} series, {applied} applied, {} dropped (upstream), {} left out (conflict); {}",
            o.target,
            count("upstream"),
            count("conflict"),
            left_out(lab)
        ),
        format!(
            "- KCFLAGS: {}'s, {} ({})",
            lab.router_target,
            if o.kcflags.is_empty() {
                "none".to_string()
            } else {
                o.kcflags.join(" ")
            },
            lab.kcflags_from
        ),
    ];
    if !lab.cpu.cpu_type.is_empty() {
        out.push(format!(
            "- CPU: {}'s CPU_TYPE {}{} ({}) gives {} ({}) to OpenWrt's userspace and toolchain; OpenWrt's kernel build passes none of it (include/kernel.mk), so neither does the lab",
            lab.router_target,
            lab.cpu.cpu_type,
            if lab.cpu.cpu_subtype.is_empty() {
                String::new()
            } else {
                format!("+{}", lab.cpu.cpu_subtype)
            },
            lab.cpu.from,
            if lab.cpu.flags.is_empty() {
                "no flags".to_string()
            } else {
                lab.cpu.flags.join(" ")
            },
            lab.cpu.flags_from
        ));
    }
    out.push(format!("- {}", added(lab)));
    out
}

/// `the lab added 40 symbols (kconfig/lab-common.config, …): 17 set by its
/// fragments, BLK_DEV_INITRD=y (OpenWrt: n), …; 23 follow from them: A, B`.
pub fn added(lab: &OpenwrtLabRecord) -> String {
    let value = |v: &Option<String>| v.clone().unwrap_or_else(|| "unset".to_string());
    let direct: Vec<String> = lab
        .added
        .iter()
        .filter(|a| a.set_by.is_some())
        .map(|a| {
            format!(
                "{}={} (OpenWrt: {})",
                a.symbol,
                value(&a.lab),
                value(&a.openwrt)
            )
        })
        .collect();
    let follow: Vec<&str> = lab
        .added
        .iter()
        .filter(|a| a.set_by.is_none())
        .map(|a| a.symbol.as_str())
        .collect();
    let files: Vec<&str> = lab.fragments.iter().map(|f| f.file.as_str()).collect();
    let mut s = format!(
        "the lab added {} symbol{} to OpenWrt's config ({}): {} set by its fragments",
        lab.added.len(),
        if lab.added.len() == 1 { "" } else { "s" },
        files.join(", "),
        direct.len()
    );
    if !direct.is_empty() {
        s.push_str(&format!(", {}", direct.join(", ")));
    }
    if !follow.is_empty() {
        s.push_str(&format!(
            "; {} follow from them: {}",
            follow.len(),
            follow.join(", ")
        ));
    }
    s
}

/// `left out on purpose: ath79's 71 board patches (platform/…) and files/:
/// its SoC's drivers…`, or what the record says when there were none.
fn left_out(lab: &OpenwrtLabRecord) -> String {
    let Some(first) = lab.left_out.first() else {
        return "nothing left out on purpose".to_string();
    };
    let patches = lab
        .left_out
        .iter()
        .filter(|p| p.name.starts_with("platform/"))
        .count();
    if patches == 0 {
        return format!("left out on purpose: {} ({})", first.name, first.reason);
    }
    let overlays = lab.left_out.len() - patches;
    format!(
        "left out on purpose: {patches} board patch{} of {}{} ({})",
        if patches == 1 { "" } else { "es" },
        lab.router_target,
        if overlays > 0 {
            " and its files/ overlays"
        } else {
            ""
        },
        first.reason
    )
}

/// One sentence on a lab run's kernels for the runtime section's notes:
/// `the lab kernels are OpenWrt's malta/be (…) with ath79/generic's KCFLAGS
/// …; the lab added …`.
pub fn lab_note(o: &OpenwrtRecord) -> Option<String> {
    let lab = o.lab.as_ref()?;
    Some(format!(
        "the lab kernels are OpenWrt's {} kernel (its config files and patch series, on Linux {} series) with {}'s KCFLAGS {}; {}; {}",
        o.target,
        o.kernel,
        lab.router_target,
        if o.kcflags.is_empty() {
            "(none)".to_string()
        } else {
            o.kcflags.join(" ")
        },
        added(lab),
        left_out(lab)
    ))
}

/// Notes for a lab run whose kernels were built in OpenWrt mode: its base
/// arm's kernel record ([`lab_note`], read from the `result.json` the run
/// names) and the ruleset its guest loaded. None for other runs, or when
/// the kernel's result cannot be read.
pub fn run_notes(record: &crate::results::lab::LabRecord) -> Vec<String> {
    let mut notes = Vec::new();
    let base = record
        .arms
        .iter()
        .find(|a| !a.control && a.name == record.settings.base)
        .and_then(|a| a.kernel.as_ref());
    let result = base.and_then(|k| crate::results::BuildResult::read(&k.results_dir).ok());
    if let Some(note) = result
        .as_ref()
        .and_then(|r| r.openwrt.as_ref())
        .and_then(lab_note)
    {
        notes.push(note);
        let initramfs = match &record.machine {
            crate::results::lab::MachineInfo::Qemu { initramfs, .. } => Some(initramfs),
            _ => None,
        };
        if let Some(r) = initramfs.and_then(|i| i.ruleset.as_ref()) {
            notes.push(format!("the guest's masquerade ruleset: {r}"));
        }
    }
    notes
}
