//! An OpenWrt target's CPU: `CPU_TYPE` and `CPU_SUBTYPE` as its board
//! Makefile and subtarget `target.mk` set them, and the compiler flags
//! OpenWrt derives from them.
//!
//! include/target.mk includes the subtarget's `target.mk` after the board
//! Makefile's own assignments, so a subtarget's `CPU_TYPE:=` wins. Its
//! `DEFAULT_CFLAGS` (the default `CONFIG_TARGET_OPTIMIZATION`) ends with
//! `$(CPU_CFLAGS_$(CPU_TYPE)) $(CPU_CFLAGS_$(CPU_SUBTYPE))`, e.g.
//! `CPU_CFLAGS_24kc = -mips32r2 -mtune=24kc`. On ARM, where include/target.mk
//! defines none of them, OpenWrt builds its cross compiler for the CPU
//! instead (toolchain/gcc/common.mk: `--with-cpu=$(CPU_TYPE)`, and
//! `--with-fpu=$(CPU_SUBTYPE)` unless soft-float): the flag that stands for
//! that is `-mcpu=<CPU_TYPE>`.
//!
//! These reach OpenWrt's userspace, not its kernel: include/kernel.mk passes
//! the kernel only KCFLAGS ([`super::flags`]), the kernel's Makefiles give
//! `-march` from its config's CPU (and OpenWrt's `308-mips32r2_tune.patch`
//! `-mtune=34kc` for every MIPS32r2), and GCC drops a `--with-cpu` default
//! when `-march` is given. So the lab records them ([`CpuType`]) and does
//! not add them to a lab kernel's flags.

use anyhow::{Context, Result};

use super::{make_assignment, Checkout, OpenwrtTarget};

/// include/target.mk, relative to the checkout.
const TARGET_MK: &str = "include/target.mk";

/// An OpenWrt target's CPU and the flags OpenWrt derives from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuType {
    /// `CPU_TYPE` (`24kc`, `74kc`, `cortex-a9`); `None` when neither the
    /// board nor the subtarget sets it.
    pub cpu_type: Option<String>,
    /// `CPU_SUBTYPE` (`neon-vfpv4`), if any.
    pub cpu_subtype: Option<String>,
    /// Where they were set: `target/linux/ath79/Makefile:6`.
    pub from: String,
    /// The flags OpenWrt derives from them (`-mips32r2 -mtune=24kc`,
    /// `-mcpu=cortex-a9`).
    pub flags: Vec<String>,
    /// Where those come from: `include/target.mk:237 (CPU_CFLAGS_24kc)`,
    /// or the toolchain's `--with-cpu`.
    pub flags_from: String,
}

/// The CPU of `target` in `checkout` (see the module docs).
///
/// Errors: a board Makefile or include/target.mk that cannot be read.
pub fn cpu_type(checkout: &Checkout, target: &OpenwrtTarget) -> Result<CpuType> {
    let mut files = vec![checkout.board_dir(&target.board).join("Makefile")];
    files.extend(target.subtarget_dir(checkout).map(|d| d.join("target.mk")));
    let mut cpu_type = None;
    let mut cpu_subtype = None;
    let mut from = Vec::new();
    for file in &files {
        let text = match super::read_checkout_file(checkout.root(), file) {
            Ok(text) => text,
            Err(e) if crate::util::fs::is_not_found(&e) => continue,
            Err(e) => return Err(e),
        };
        let rel = file
            .strip_prefix(checkout.root())
            .unwrap_or(file)
            .display()
            .to_string();
        for (i, line) in text.lines().enumerate() {
            match make_assignment(line) {
                Some(("CPU_TYPE", v)) => {
                    cpu_type = Some(v.to_string());
                    from.push(format!("{rel}:{}", i + 1));
                }
                Some(("CPU_SUBTYPE", v)) => {
                    cpu_subtype = Some(v.to_string());
                    from.push(format!("{rel}:{}", i + 1));
                }
                _ => {}
            }
        }
    }
    let target_mk = checkout.root().join(TARGET_MK);
    let defs = super::read_checkout_file(checkout.root(), &target_mk)
        .context("an OpenWrt checkout has it")?;
    let lookup = |name: &str| -> Option<(Vec<String>, String)> {
        let key = format!("CPU_CFLAGS_{name}");
        defs.lines()
            .enumerate()
            .find_map(|(i, line)| match make_assignment(line) {
                Some((k, v)) if k == key => Some((
                    v.split_whitespace().map(str::to_string).collect(),
                    format!("{TARGET_MK}:{} ({key})", i + 1),
                )),
                _ => None,
            })
    };
    let mut flags = Vec::new();
    let mut flags_from = Vec::new();
    for name in cpu_type.iter().chain(&cpu_subtype) {
        if let Some((f, origin)) = lookup(name) {
            flags.extend(f);
            flags_from.push(origin);
        }
    }
    let arm = checkout
        .board_arch(&target.board)?
        .is_some_and(|a| a.starts_with("arm"));
    if flags.is_empty() && arm {
        if let Some(t) = &cpu_type {
            flags.push(format!("-mcpu={t}"));
            flags_from.push(format!(
                "OpenWrt's ARM toolchain default (toolchain/gcc/common.mk: --with-cpu={t}); {TARGET_MK} defines no CPU_CFLAGS_{t}"
            ));
        }
    }
    Ok(CpuType {
        cpu_type,
        cpu_subtype,
        from: from.join(", "),
        flags,
        flags_from: flags_from.join(", "),
    })
}
