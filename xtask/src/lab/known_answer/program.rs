//! `xl-known` (`lab/known-answer/xl-known.c`) built for a target's guest
//! with the target's own cross compiler (Debian's `gcc-<triplet>`, the one
//! its kernel builds with), freestanding and static, and the lab's
//! initramfs with it added as `/bin/xl-known`: a second `newc` archive
//! after the lab's, which the kernel unpacks over the first (Linux's
//! initramfs takes concatenated archives), so the lab's own archive and
//! its cache stay as they are.
//!
//! Both are cached in `target/xtask/lab/known-answer/<key>/`, the key the
//! sha256 of the C source, the compiler's version line, the flags and the
//! lab initramfs's sha256.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use crate::inputs::targets::Target;
use crate::lab::cpio;
use crate::lab::process::run_appending_to_log;
use crate::lab::rootfs::Initramfs;
use crate::lab::static_guest::elf;
use crate::util::fs::{remove_stale_staging, write_atomic, StagingDir};
use crate::util::layout::Layout;

/// The program's C source.
pub const SOURCE: &str = include_str!("../../../../lab/known-answer/xl-known.c");
/// Where it is in the guest.
pub const GUEST_PATH: &str = "/bin/xl-known";

/// gcc's flags: no C library (its own system calls), static, an entry
/// point of its own; MIPS code without PIC or a global pointer; ARM code
/// in ARM state (the model does not decode Thumb).
fn flags(arch: &str) -> Result<Vec<&'static str>> {
    let mut f = vec![
        "-O2",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-static",
        "-nostdlib",
        "-ffreestanding",
        "-fno-builtin",
        "-fno-pic",
        "-Wl,-e,xl_start",
    ];
    match arch {
        "mips" | "mipsel" => f.extend(["-mno-abicalls", "-G0"]),
        "armel" | "armhf" => f.push("-marm"),
        _ => bail!("xl-known is built for MIPS and ARM guests, not {arch}"),
    }
    Ok(f)
}

/// The lab's initramfs of `target` with `/bin/xl-known` added.
#[derive(Debug, Clone)]
pub struct KnownAnswerInitramfs {
    /// The combined archive.
    pub path: PathBuf,
    /// The program alone.
    pub program: PathBuf,
    /// The compiler's `--version` line.
    pub compiler: String,
}

/// Builds (or reuses) `xl-known` for `target`'s guest (`arch`, its Debian
/// architecture) and the archive of `initramfs` with it. Errors name the
/// missing compiler's package or keep gcc's log.
pub fn prepare(
    layout: &Layout,
    target: &Target,
    arch: &str,
    initramfs: &Initramfs,
) -> Result<KnownAnswerInitramfs> {
    let gcc = format!("{}gcc", target.cross_compile);
    crate::lab::host_tools::require_tools(
        "the known-answer programs",
        &[(gcc.as_str(), target.compiler_package.as_str())],
    )?;
    let out = Command::new(&gcc)
        .arg("--version")
        .output()
        .with_context(|| format!("running {gcc} --version"))?;
    let compiler = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let flags = flags(arch)?;
    let mut h = Sha256::new();
    for part in [
        "xtask-known-answer-1",
        SOURCE,
        &compiler,
        &flags.join(" "),
        arch,
        &initramfs.sha256,
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    let key = hex::encode(h.finalize());
    let base = layout.work_dir().join("lab/known-answer");
    let dir = base.join(&key[..16]);
    let made = KnownAnswerInitramfs {
        path: dir.join("initramfs.cpio"),
        program: dir.join("xl-known"),
        compiler,
    };
    if made.path.is_file() && made.program.is_file() {
        return Ok(made);
    }
    std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
    remove_stale_staging(&base, ".build-")?;
    let stage = StagingDir::new(&base, ".build-")?;
    let src = stage.path().join("xl-known.c");
    std::fs::write(&src, SOURCE).with_context(|| format!("writing {}", src.display()))?;
    let program = stage.path().join("xl-known");
    let mut cc = Command::new(&gcc);
    cc.args(&flags).arg("-o").arg(&program).arg(&src);
    run_appending_to_log(
        cc,
        &format!("{gcc} xl-known.c"),
        &stage.path().join("gcc.log"),
        Duration::from_secs(120),
    )?;
    elf::check(&program, arch)?;
    let bytes = crate::util::fs::read_bytes_limited(
        &program,
        crate::util::fs::FileLimit::binary("guest program"),
        "",
    )?;
    combine(
        &initramfs.path,
        &bytes,
        &stage.path().join("initramfs.cpio"),
    )?;
    let kept = stage.keep()?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::rename(&kept, &dir)
        .with_context(|| format!("moving {} to {}", kept.display(), dir.display()))?;
    Ok(made)
}

/// Writes `lab`'s archive followed by one holding `program` as
/// [`GUEST_PATH`] to `out`.
pub fn combine(lab: &Path, program: &[u8], out: &Path) -> Result<()> {
    let mut bytes = crate::util::fs::read_bytes_limited(
        lab,
        crate::util::fs::FileLimit::binary("initramfs"),
        "",
    )?;
    // Each archive of a concatenation starts 4-byte aligned.
    while bytes.len() % 4 != 0 {
        bytes.push(0);
    }
    let mut w = cpio::Writer::new(Vec::new());
    w.dir("bin", 0o755)?;
    w.file(GUEST_PATH.trim_start_matches('/'), 0o755, program)?;
    bytes.extend(w.finish()?);
    write_atomic(out, &bytes)
}
