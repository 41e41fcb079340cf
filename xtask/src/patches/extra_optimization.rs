//! `201-extra_optimization.patch`: OpenWrt's patch that sets the kernel's
//! optimisation flags, generated for a variant against a kernel's real
//! top-level Makefile so that its hunk header is always right.
//!
//! OpenWrt's patch (`target/linux/generic/pending-<kver>/`) changes the two
//! lines of the Makefile's optimisation block:
//!
//! ```text
//! ifdef CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE
//! KBUILD_CFLAGS += -O2 -fno-reorder-blocks -fno-tree-ch $(EXTRA_OPTIMIZATION)
//! …
//! else ifdef CONFIG_CC_OPTIMIZE_FOR_SIZE
//! KBUILD_CFLAGS += -Os -fno-reorder-blocks -fno-tree-ch $(EXTRA_OPTIMIZATION)
//! ```

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use xshell::Shell;

use crate::inputs::cflags;
use crate::inputs::kernel_source;
use crate::inputs::variants::{self, Variant};
use crate::patches::diff;
use crate::util::layout::Layout;

/// The patch's file name in every `patches/generic/pending-<kver>/`.
pub const PATCH_NAME: &str = "201-extra_optimization.patch";

/// Header used when a pending directory has no such patch yet.
pub const DEFAULT_HEADER: &str = "From: Felix Fietkau <nbd@nbd.name>
Subject: kernel: add extra optimization flags

OpenWrt builds the kernel with extra optimisation flags, chosen per
variant by `cargo xtask flags set`; the target may add its own through
$(EXTRA_OPTIMIZATION).

Signed-off-by: Felix Fietkau <nbd@nbd.name>
---
";

/// The Makefile with the variant's flags on the `-O2` and `-Os` lines.
///
/// Errors when a flag is not one plain compiler option
/// ([`cflags::validate`]: nothing reaches the Makefile that make or the
/// shell would interpret), or when the optimisation block (`ifdef CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE`
/// followed by `KBUILD_CFLAGS += -O2`, `else ifdef CONFIG_CC_OPTIMIZE_FOR_SIZE`
/// followed by `KBUILD_CFLAGS += -Os`) is not found, naming what is missing.
pub fn rewrite_makefile(makefile: &str, variant: &Variant) -> Result<String> {
    for (branch, flags) in [("os", &variant.os_flags), ("o2", &variant.o2_flags)] {
        cflags::validate(flags).with_context(|| {
            format!(
                "variant {:?}: refusing to write its {branch} flags into {PATCH_NAME}",
                variant.name
            )
        })?;
    }
    let mut out = String::with_capacity(makefile.len() + 128);
    let mut branch: Option<&str> = None;
    let mut done = (false, false);
    for line in makefile.split_inclusive('\n') {
        let trimmed = line.trim_end();
        match trimmed {
            "ifdef CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE" => branch = Some("-O2"),
            "else ifdef CONFIG_CC_OPTIMIZE_FOR_SIZE" => branch = Some("-Os"),
            "endif" => branch = None,
            _ => {}
        }
        let is_flags_line = |opt: &str| {
            trimmed
                .strip_prefix("KBUILD_CFLAGS")
                .and_then(|r| r.trim_start().strip_prefix("+="))
                .is_some_and(|r| r.trim() == opt)
        };
        match branch {
            Some("-O2") if !done.0 && is_flags_line("-O2") => {
                out.push_str(&format!(
                    "KBUILD_CFLAGS += {} $(EXTRA_OPTIMIZATION)\n",
                    variant.o2_flags
                ));
                done.0 = true;
            }
            Some("-Os") if !done.1 && is_flags_line("-Os") => {
                out.push_str(&format!(
                    "KBUILD_CFLAGS += {} $(EXTRA_OPTIMIZATION)\n",
                    variant.os_flags
                ));
                done.1 = true;
            }
            _ => out.push_str(line),
        }
    }
    match done {
        (true, true) => Ok(out),
        (false, _) => {
            bail!("no `KBUILD_CFLAGS += -O2` line under `ifdef CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE`")
        }
        (_, false) => {
            bail!("no `KBUILD_CFLAGS += -Os` line under `else ifdef CONFIG_CC_OPTIMIZE_FOR_SIZE`")
        }
    }
}

/// The header of an existing patch: every byte before its first
/// `--- ` line that is followed by a `+++ ` line (From, Subject,
/// description, Signed-off-by, `---`, diffstat).
pub fn patch_header(patch: &str) -> &str {
    let mut offset = 0;
    let mut lines = patch.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("--- ") && lines.peek().is_some_and(|n| n.starts_with("+++ ")) {
            return &patch[..offset];
        }
        offset += line.len();
    }
    patch
}

/// The complete patch text: `header` verbatim, then the diff of the
/// Makefile in OpenWrt's quilt form (see [`diff::file_diff`]).
pub fn patch_text(header: &str, makefile: &str, variant: &Variant) -> Result<String> {
    let new = rewrite_makefile(makefile, variant)?;
    Ok(format!(
        "{header}{}",
        diff::file_diff("Makefile", makefile, &new)
    ))
}

/// `cargo xtask flags set VARIANT`: rewrites every series'
/// `201-extra_optimization.patch` with `variant`'s flags ([`set_flags`]),
/// printing what changed.
pub fn set_command(
    sh: &Shell,
    layout: &Layout,
    variant: &str,
    kernel_src: &[PathBuf],
) -> Result<()> {
    for (file, changed) in set_flags(sh, layout, variant, kernel_src)? {
        let status = if changed { "rewritten" } else { "unchanged" };
        println!("{}: {status}", file.display());
    }
    Ok(())
}

/// Checks the flags a `201-extra_optimization.patch` adds (its
/// `+KBUILD_CFLAGS += … $(EXTRA_OPTIMIZATION)` lines) with
/// [`cflags::validate`], for a patch written by hand or imported rather
/// than generated. `file` names the patch in errors, with the line.
pub fn check_patch_flags(file: &Path, text: &str) -> Result<()> {
    for (number, line) in text.split('\n').enumerate() {
        let Some(rest) = line.strip_prefix("+KBUILD_CFLAGS") else {
            continue;
        };
        let Some(flags) = rest.trim_start().strip_prefix("+=") else {
            continue;
        };
        let flags = flags.trim_end_matches('\r').trim_end();
        let flags = flags.strip_suffix("$(EXTRA_OPTIMIZATION)").unwrap_or(flags);
        cflags::validate(flags).with_context(|| {
            format!(
                "{}:{}: refusing a flag this patch adds to KBUILD_CFLAGS; \
                 regenerate it with `cargo xtask flags set VARIANT`",
                file.display(),
                number + 1
            )
        })?;
    }
    Ok(())
}

pub use crate::inputs::kernel_source::pending_dirs;

/// The variant's patch for one `pending-<kver>/` directory, generated but
/// not written yet.
#[derive(Debug, Clone)]
pub struct PatchUpdate {
    /// `patches/generic/pending-<kver>/201-extra_optimization.patch`.
    pub file: PathBuf,
    /// The new text (the existing header kept).
    pub text: String,
    /// Whether `text` differs from the file's bytes (or the file is missing).
    pub changed: bool,
    /// The file's text before, `None` when it did not exist.
    pub old: Option<String>,
}

/// Generates the variant's patch for `dir`, keeping an existing header;
/// nothing is written.
pub fn generate_patch(dir: &Path, makefile: &str, variant: &Variant) -> Result<PatchUpdate> {
    let file = dir.join(PATCH_NAME);
    let old = match std::fs::read_to_string(&file) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
    };
    let header = old.as_deref().map(patch_header).unwrap_or(DEFAULT_HEADER);
    let text = patch_text(header, makefile, variant)
        .with_context(|| format!("generating {}", file.display()))?;
    let changed = old.as_deref() != Some(text.as_str());
    Ok(PatchUpdate {
        file,
        text,
        changed,
        old,
    })
}

/// Writes the variant's patch into `dir`, keeping an existing header; the
/// file is replaced atomically and left alone when its bytes are unchanged.
/// Returns whether it changed.
pub fn write_patch(dir: &Path, makefile: &str, variant: &Variant) -> Result<bool> {
    let update = generate_patch(dir, makefile, variant)?;
    if update.changed {
        crate::util::fs::write_atomic(&update.file, update.text.as_bytes())?;
    }
    Ok(update.changed)
}

/// `cargo xtask flags set VARIANT`: rewrites the patch in every
/// `patches/generic/pending-<kver>/` of `layout` with the variant's flags,
/// each against its series' top-level Makefile (from `kernel_src`, tarballs
/// or trees, else Debian's tarball). Returns each patch file and whether it
/// changed.
///
/// All-or-nothing: variants.toml is loaded (which validates every flag,
/// naming the file and line) and every patch is generated before the first
/// is written, so a hostile flag, a missing kernel source or a Makefile
/// without the optimisation block leaves every patch as it was; then the
/// changed patches are written as [`write_all_or_nothing`] does, so a
/// directory that cannot be written (read-only, full) leaves them all as
/// they were too, and the error says which were and were not written.
pub fn set_flags(
    sh: &Shell,
    layout: &Layout,
    variant: &str,
    kernel_src: &[PathBuf],
) -> Result<Vec<(PathBuf, bool)>> {
    let all = variants::load(&layout.variants_file(), &layout.patches_dir())?;
    let variant = variants::select(&all, &[variant.to_string()])?.remove(0);
    let mut updates = Vec::new();
    for (kver, dir) in pending_dirs(&layout.patches_dir())? {
        let makefile = kernel_source::top_makefile_for_series(sh, &kver, kernel_src)?;
        updates.push(generate_patch(&dir, &makefile, &variant)?);
    }
    write_all_or_nothing(&updates)?;
    Ok(updates.into_iter().map(|u| (u.file, u.changed)).collect())
}

/// Writes every changed update or none: each new text goes to a temporary
/// file beside its patch first ([`crate::util::fs::stage_file`]), and only
/// when all are staged are they renamed into place. A rename that still
/// fails puts the patches renamed before it back to their old text.
///
/// Errors name the patch that could not be written and why, and say that
/// nothing was written, listing the patches left as they were (or, if
/// restoring failed, which patch now has the new text).
pub fn write_all_or_nothing(updates: &[PatchUpdate]) -> Result<()> {
    let changed: Vec<&PatchUpdate> = updates.iter().filter(|u| u.changed).collect();
    let list = |u: &[&PatchUpdate]| {
        u.iter()
            .map(|u| u.file.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut staged = Vec::new();
    for update in &changed {
        match crate::util::fs::stage_file(&update.file, update.text.as_bytes()) {
            Ok(tmp) => staged.push(tmp),
            Err(e) => bail!(
                "{e:#}; nothing was written: {} left as {} were",
                list(&changed),
                if changed.len() == 1 { "it" } else { "they" }
            ),
        }
    }
    for (n, (update, tmp)) in changed.iter().zip(staged).enumerate() {
        if let Err(e) = tmp.persist(&update.file) {
            let mut kept = Vec::new();
            for done in &changed[..n] {
                let back = match &done.old {
                    Some(old) => crate::util::fs::write_atomic(&done.file, old.as_bytes()),
                    None => std::fs::remove_file(&done.file).map_err(anyhow::Error::from),
                };
                if back.is_err() {
                    kept.push(*done);
                }
            }
            let written = if kept.is_empty() {
                format!("nothing was written: {} left as they were", list(&changed))
            } else {
                format!(
                    "{} could not be put back and now have the new flags; {} did not",
                    list(&kept),
                    list(&changed[n..])
                )
            };
            bail!(
                "renaming a temporary file to {}: {}; {written}",
                update.file.display(),
                e.error
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(os: &str, o2: &str) -> Variant {
        Variant {
            name: "v".into(),
            description: String::new(),
            os_flags: os.into(),
            o2_flags: o2.into(),
            patches: vec![],
            kconfig: vec![],
        }
    }

    const MAKEFILE: &str = "KBUILD_CFLAGS\t+= -fno-delete-null-pointer-checks\n\nifdef CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE\nKBUILD_CFLAGS += -O2\nKBUILD_RUSTFLAGS += -Copt-level=2\nelse ifdef CONFIG_CC_OPTIMIZE_FOR_SIZE\nKBUILD_CFLAGS += -Os\nKBUILD_RUSTFLAGS += -Copt-level=s\nendif\n";

    #[test]
    fn rewrites_both_branches_and_keeps_the_header() {
        let v = variant("-Os -fno-tree-ch", "-O2 -fno-tree-ch");
        let text = patch_text("From: x\nSubject: y\n---\n", MAKEFILE, &v).unwrap();
        expect_test::expect![[r#"
            From: x
            Subject: y
            ---
            --- a/Makefile
            +++ b/Makefile
            @@ -1,9 +1,9 @@
             KBUILD_CFLAGS	+= -fno-delete-null-pointer-checks
             
             ifdef CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE
            -KBUILD_CFLAGS += -O2
            +KBUILD_CFLAGS += -O2 -fno-tree-ch $(EXTRA_OPTIMIZATION)
             KBUILD_RUSTFLAGS += -Copt-level=2
             else ifdef CONFIG_CC_OPTIMIZE_FOR_SIZE
            -KBUILD_CFLAGS += -Os
            +KBUILD_CFLAGS += -Os -fno-tree-ch $(EXTRA_OPTIMIZATION)
             KBUILD_RUSTFLAGS += -Copt-level=s
             endif
        "#]]
        .assert_eq(&text);
        assert_eq!(patch_header(&text), "From: x\nSubject: y\n---\n");
    }

    #[test]
    fn missing_block_is_an_error_naming_the_line() {
        let v = variant("-Os", "-O2");
        let err = rewrite_makefile("KBUILD_CFLAGS += -O2\n", &v).unwrap_err();
        assert!(
            err.to_string()
                .contains("CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE"),
            "{err}"
        );
    }
}
