//! Cross compilers and host tools: are they there, which version, and do
//! they accept a variant's flags. Everything is checked before any build
//! starts, so a typo fails in a second rather than after an hour.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use xshell::{cmd, Shell};

use crate::inputs::cflags;
use crate::inputs::targets::Target;

/// A cross compiler found on `PATH`.
#[derive(Debug, Clone)]
pub struct Compiler {
    /// `<prefix>gcc`.
    pub command: String,
    /// First line of `--version`, e.g. `mips-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0`.
    pub version: String,
}

/// Finds `program` on `PATH`.
pub fn find_in_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The target's cross compiler and its version.
///
/// A missing compiler is an error giving the exact Debian package to install.
pub fn compiler(sh: &Shell, target: &Target) -> Result<Compiler> {
    let command = target.cc();
    if find_in_path(&command).is_none() {
        bail!(
            "{command} (target {}) is not installed: run `apt-get install {}` (or `cargo xtask setup`)",
            target.name,
            target.compiler_package
        );
    }
    let version = cmd!(sh, "{command} --version")
        .quiet()
        .read()
        .with_context(|| format!("running {command} --version"))?;
    Ok(Compiler {
        version: version.lines().next().unwrap_or_default().to_string(),
        command,
    })
}

/// Where a variant's flags are fixed, for [`check_flags`]' messages.
pub const VARIANT_FLAGS_FIX: &str = "Fix them in patches/variants.toml (the variant's os/o2 keys).";

/// Checks that `compiler` accepts every flag in `flags`, compiling an empty
/// C file with `-Werror` (as kbuild's `cc-option` probes flags). The
/// compiler runs only with flags that pass [`cflags::validate`] (every
/// caller's flags should have passed it already; a flag that does not is
/// refused here without starting anything, as the probe would run what it
/// names), in an empty temporary directory (a relative path a flag names
/// is read or written there). `fix` says where the flags come from and how
/// to fix them, for the messages.
///
/// Errors list each rejected flag with the compiler's own message (which
/// often suggests the right spelling), then `fix`.
pub fn check_flags(sh: &Shell, compiler: &Compiler, flags: &[&str], fix: &str) -> Result<()> {
    let cc = &compiler.command;
    for flag in flags {
        if let Err(e) = cflags::validate(flag) {
            bail!("not starting {cc} with flag {flag:?}: {e}. {fix}");
        }
    }
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let (src, obj) = (dir.path().join("probe.c"), dir.path().join("probe.o"));
    std::fs::write(&src, "int xtask_probe;\n").context("writing the probe source")?;
    // The compiler runs in the probe's own empty directory: a relative path
    // a flag names (`-MFx`, `-B-x/`) is there, never in the user's
    // current directory.
    let _in_scratch = sh.push_dir(dir.path());
    let probe = |flags: &[&str]| {
        cmd!(sh, "{cc} -Werror {flags...} -c {src} -o {obj}")
            .quiet()
            .ignore_status()
            .output()
            .with_context(|| format!("running {cc}"))
    };
    if probe(flags)?.status.success() {
        return Ok(());
    }
    let mut rejected = Vec::new();
    for flag in flags {
        let out = probe(&[flag])?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let reason = stderr
                .lines()
                .find(|l| l.contains("error"))
                .unwrap_or("rejected")
                .trim()
                .to_string();
            rejected.push(format!("  {flag}: {reason}"));
        }
    }
    if rejected.is_empty() {
        bail!("{cc} rejects the flags together but accepts each alone: {flags:?}");
    }
    bail!(
        "{} does not accept these flags:\n{}\n{fix}",
        compiler.version,
        rejected.join("\n")
    )
}

/// A host tool the kernel build needs, and the Debian package that has it.
pub const HOST_TOOLS: &[(&str, &str)] = &[
    ("gcc", "gcc"),
    ("make", "make"),
    ("flex", "flex"),
    ("bison", "bison"),
    ("bc", "bc"),
    ("tar", "tar"),
    ("xz", "xz-utils"),
    ("perl", "perl"),
];

/// Checks the host tools the build needs (plus `mkimage` when a target makes
/// a uImage); errors list every missing tool with its package.
pub fn check_host_tools(targets: &[Target]) -> Result<()> {
    let mut tools: Vec<(&str, &str)> = HOST_TOOLS.to_vec();
    if targets.iter().any(|t| {
        t.artifacts
            .contains(&crate::inputs::targets::Artifact::UImage)
    }) {
        tools.push(("mkimage", "u-boot-tools"));
    }
    let missing: Vec<(&str, &str)> = tools
        .into_iter()
        .filter(|(tool, _)| find_in_path(tool).is_none())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = missing.iter().map(|(t, _)| *t).collect();
    let mut packages: Vec<&str> = missing.iter().map(|(_, p)| *p).collect();
    packages.dedup();
    bail!(
        "missing host tools: {}; run `apt-get install {}` (or `cargo xtask setup`)",
        names.join(", "),
        packages.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_compiler_rejects_a_typo_and_names_it() {
        if !crate::util::test_gate::programs(&[("gcc", "gcc")]) {
            return;
        }
        let sh = Shell::new().unwrap();
        let gcc = Compiler {
            command: "gcc".into(),
            version: "host gcc".into(),
        };
        check_flags(
            &sh,
            &gcc,
            &["-Os", "-fno-reorder-blocks"],
            VARIANT_FLAGS_FIX,
        )
        .unwrap();
        let err = check_flags(
            &sh,
            &gcc,
            &["-Os", "-fno-reorder-block", "-fno-tree-ch"],
            VARIANT_FLAGS_FIX,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("-fno-reorder-block:"), "{err}");
        assert!(!err.contains("-fno-tree-ch:"), "{err}");
        assert!(err.contains("gcc"), "{err}");
        assert!(err.contains("patches/variants.toml"), "{err}");
    }

    /// The probe starts the compiler only with flags that pass the flag
    /// check: a flag that does not (an option hidden in another's value)
    /// is refused before anything runs, whoever calls.
    #[test]
    fn the_probe_never_starts_the_compiler_with_an_unchecked_flag() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let cc = dir.path().join("cc");
        std::fs::write(&cc, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
        std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
        let compiler = Compiler {
            command: cc.display().to_string(),
            version: "a compiler that leaves a marker".into(),
        };
        let sh = Shell::new().unwrap();
        for flag in ["-fcompare-debug=-Bevil/", "-fcompare-debug=-fplugin=x.so"] {
            let err = check_flags(&sh, &compiler, &["-O2", flag], "fix it there")
                .unwrap_err()
                .to_string();
            assert!(err.contains(flag) && err.contains("fix it there"), "{err}");
            assert!(!marker.exists(), "{flag}: the compiler ran");
        }
        check_flags(&sh, &compiler, &["-O2"], "").unwrap();
        assert!(
            marker.exists(),
            "the stand-in compiler runs for checked flags"
        );
        // It runs in a scratch directory of its own, not the caller's
        // (a relative `-MFvictim.txt` wrote into the user's directory).
        let cwd = dir.path().join("cwd");
        std::fs::write(&cc, format!("#!/bin/sh\npwd > '{}'\n", cwd.display())).unwrap();
        check_flags(&sh, &compiler, &["-O2", "-MD", "-MFvictim.txt"], "").unwrap();
        let ran_in = std::fs::read_to_string(&cwd).unwrap();
        let ran_in = Path::new(ran_in.trim());
        assert_ne!(ran_in, sh.current_dir());
        assert!(
            !ran_in.exists(),
            "{}: not the probe's own directory",
            ran_in.display()
        );
    }
}
