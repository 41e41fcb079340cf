//! The link map of a finished kernel build, for `size-report --by
//! file|dir` ([`crate::measure::linkmap`]): the kernel's own `vmlinux.map`
//! when the config has `CONFIG_VMLINUX_MAP=y`, else the final link of
//! scripts/link-vmlinux.sh run again with `-Map`, which the kernel's make
//! is not (no object is compiled, no file of the build tree is written).
//!
//! link-vmlinux.sh (Linux 6.12) links vmlinux as
//! `$LD $KBUILD_LDFLAGS $LDFLAGS_vmlinux --script=arch/$SRCARCH/kernel/vmlinux.lds
//! -o vmlinux --whole-archive vmlinux.a [.vmlinux.export.o]
//! init/version-timestamp.o --no-whole-archive --start-group
//! $KBUILD_VMLINUX_LIBS --end-group [kallsyms object]` in the object tree.
//! The three variables come from `.vmlinux.cmd` (make recorded the
//! script's arguments there), the libraries from `.vmlinux.o.cmd`, the
//! options from `include/config/auto.conf`; the kallsyms object is the last
//! pass's (`.tmp_vmlinux3.kallsyms.o`, else `…2…`). The relinked file must
//! have vmlinux's allocated sections, name for name and size for size, or
//! it is refused (then the next candidate is tried). `sorttable` edits
//! vmlinux after the link, in place, so bytes may differ; sizes do not.
//! Kernels linked from `vmlinux.o` (`CONFIG_LTO_CLANG`,
//! `CONFIG_X86_KERNEL_IBT`) are refused: their map names one object.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::measure::linkmap;
use crate::measure::sections::{alloc_sections, AllocSection};
use crate::results::attribution::{AttributionRecord, SCHEMA};
use crate::util::fs::{read_limited, FileLimit};
use crate::util::process::run_captured;

/// `CONFIG_VMLINUX_MAP`'s map, `ld -Map`'s name in records.
pub const KERNEL_MAP: &str = "CONFIG_VMLINUX_MAP";
/// A relinked map's name in records.
pub const RELINKED: &str = "ld -Map (the final link run again)";
/// How long one relink may take: a router vmlinux links in seconds.
pub const LD_TIMEOUT: Duration = Duration::from_secs(300);

/// The map text of `objtree`'s vmlinux and how it was made ([`KERNEL_MAP`]
/// or [`RELINKED`]); see the module docs.
///
/// Errors name the missing file or the failing link, and say the build
/// tree is needed (rebuild the job).
pub fn map_text(objtree: &Path) -> Result<(String, &'static str)> {
    let vmlinux = objtree.join("vmlinux");
    let own = objtree.join("vmlinux.map");
    let newer = |a: &Path, b: &Path| -> bool {
        let m = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        matches!((m(a), m(b)), (Some(x), Some(y)) if x >= y)
    };
    if own.is_file() && newer(&own, &vmlinux) {
        let text = read_limited(
            &own,
            FileLimit::log("the kernel's link map"),
            "rebuild the job",
        )?;
        return Ok((text, KERNEL_MAP));
    }
    let want = alloc_sections(&vmlinux)?;
    let link = FinalLink::read(objtree)?;
    let scratch = tempfile::tempdir().context("creating a scratch directory for ld")?;
    let mut tried = Vec::new();
    for kallsyms in &link.kallsyms {
        let out = scratch.path().join("vmlinux");
        let map = scratch.path().join("vmlinux.map");
        let args = link.args(kallsyms.as_deref(), &out, &map);
        let ld = &link.ld;
        // ld reads vmlinux.a's members by paths relative to the object tree.
        let mut command = Command::new(ld);
        command.args(&args).current_dir(objtree);
        let run = run_captured(
            command,
            &format!("{ld} (the final link again, with a map)"),
            "is the target's cross binutils installed? (`cargo xtask setup`)",
            LD_TIMEOUT,
        )
        .with_context(|| format!("running {ld} in {}", objtree.display()))?;
        if !run.status.success() {
            tried.push(format!(
                "{}: {}",
                kallsyms.as_deref().unwrap_or("no kallsyms object"),
                run.stderr.trim()
            ));
            continue;
        }
        let got = alloc_sections(&out)?;
        if same_sections(&got, &want) {
            let text = read_limited(&map, FileLimit::log("the link map ld wrote"), "")?;
            return Ok((text, RELINKED));
        }
        tried.push(format!(
            "{}: the relinked vmlinux's sections differ from {}",
            kallsyms.as_deref().unwrap_or("no kallsyms object"),
            vmlinux.display()
        ));
    }
    bail!(
        "could not link {} again with a map ({}); rebuild the job (its build tree is needed)",
        vmlinux.display(),
        tried.join("; ")
    )
}

fn same_sections(a: &[AllocSection], b: &[AllocSection]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.name == y.name && x.size == y.size)
}

/// link-vmlinux.sh's final `ld` command, read from the object tree.
#[derive(Debug, Clone)]
struct FinalLink {
    ld: String,
    flags: Vec<String>,
    script: String,
    objects: Vec<String>,
    libs: Vec<String>,
    /// Candidates for the kallsyms object, in the order tried (`None`:
    /// a kernel without kallsyms).
    kallsyms: Vec<Option<String>>,
}

impl FinalLink {
    fn read(objtree: &Path) -> Result<FinalLink> {
        let read = |name: &str| -> Result<String> {
            let p = objtree.join(name);
            read_limited(
                &p,
                FileLimit::input("a file of the kernel's object tree"),
                "written by the kernel's make for vmlinux; rebuild the job",
            )
        };
        let cmd = read(".vmlinux.cmd")?;
        let line = cmd
            .lines()
            .find(|l| l.contains("link-vmlinux.sh"))
            .with_context(|| format!("{}: no link-vmlinux.sh command", objtree.display()))?;
        let quoted: Vec<&str> = line.split('"').skip(1).step_by(2).collect();
        let [ld, kbuild_ldflags, ldflags_vmlinux, ..] = quoted[..] else {
            bail!(
                "{}/.vmlinux.cmd: expected link-vmlinux.sh \"LD\" \"KBUILD_LDFLAGS\" \
                 \"LDFLAGS_vmlinux\", found `{line}`",
                objtree.display()
            );
        };
        let config = read("include/config/auto.conf")?;
        let enabled = |symbol: &str| config.lines().any(|l| l == format!("{symbol}=y"));
        if enabled("CONFIG_LTO_CLANG") || enabled("CONFIG_X86_KERNEL_IBT") {
            bail!(
                "{}: vmlinux is linked from vmlinux.o (LTO or IBT), whose map names no object file",
                objtree.display()
            );
        }
        let vmlinux_o = read(".vmlinux.o.cmd").unwrap_or_default();
        let libs: Vec<String> = vmlinux_o
            .split_whitespace()
            .skip_while(|w| *w != "--start-group")
            .skip(1)
            .take_while(|w| *w != "--end-group")
            .map(str::to_string)
            .collect();
        let mut objects = vec!["vmlinux.a".to_string()];
        if enabled("CONFIG_MODULES") {
            objects.push(".vmlinux.export.o".to_string());
        }
        objects.push("init/version-timestamp.o".to_string());
        let script = lds(objtree)?;
        let kallsyms = if enabled("CONFIG_KALLSYMS") {
            let found: Vec<Option<String>> = [3, 2]
                .iter()
                .map(|n| format!(".tmp_vmlinux{n}.kallsyms.o"))
                .filter(|f| objtree.join(f).is_file())
                .map(Some)
                .collect();
            if found.is_empty() {
                bail!(
                    "{}: CONFIG_KALLSYMS is set but no .tmp_vmlinux2.kallsyms.o or \
                     .tmp_vmlinux3.kallsyms.o is left; rebuild the job",
                    objtree.display()
                );
            }
            found
        } else {
            vec![None]
        };
        Ok(FinalLink {
            ld: ld.to_string(),
            flags: kbuild_ldflags
                .split_whitespace()
                .chain(ldflags_vmlinux.split_whitespace())
                .map(str::to_string)
                .collect(),
            script,
            objects,
            libs,
            kallsyms,
        })
    }

    fn args(&self, kallsyms: Option<&str>, out: &Path, map: &Path) -> Vec<String> {
        let mut a = self.flags.clone();
        a.push(format!("--script={}", self.script));
        a.push(format!("-Map={}", map.display()));
        a.extend(["-o".to_string(), out.display().to_string()]);
        a.push("--whole-archive".into());
        a.extend(self.objects.iter().cloned());
        a.push("--no-whole-archive".into());
        a.push("--start-group".into());
        a.extend(self.libs.iter().cloned());
        a.push("--end-group".into());
        a.extend(kallsyms.map(str::to_string));
        a
    }
}

/// `arch/<SRCARCH>/kernel/vmlinux.lds`, relative to `objtree`: the one
/// architecture directory that has it.
fn lds(objtree: &Path) -> Result<String> {
    let arch = objtree.join("arch");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&arch)
        .with_context(|| format!("reading {}", arch.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("kernel/vmlinux.lds"))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    match &found[..] {
        [one] => Ok(one
            .strip_prefix(objtree)
            .unwrap_or(one)
            .display()
            .to_string()),
        [] => bail!(
            "{}: no arch/*/kernel/vmlinux.lds; rebuild the job",
            objtree.display()
        ),
        _ => bail!(
            "{}: more than one arch/*/kernel/vmlinux.lds ({} found)",
            objtree.display(),
            found.len()
        ),
    }
}

/// The attribution of `objtree`'s vmlinux ([`map_text`], then
/// [`linkmap::attribute`] against the sections of `vmlinux`, the copy in
/// the results), for a vmlinux of sha256 `vmlinux_sha256`.
pub fn attribution(
    objtree: &Path,
    vmlinux: &Path,
    vmlinux_sha256: &str,
) -> Result<AttributionRecord> {
    let (text, how) = map_text(objtree)?;
    let map =
        linkmap::parse(&text).with_context(|| format!("the link map of {}", objtree.display()))?;
    let attribution = linkmap::attribute(&map, &alloc_sections(vmlinux)?)
        .with_context(|| format!("attributing {}", vmlinux.display()))?;
    Ok(AttributionRecord {
        schema: SCHEMA,
        vmlinux_sha256: vmlinux_sha256.to_string(),
        map: how.to_string(),
        sections: attribution.sections,
    })
}
