//! Device trees as OpenWrt's include/image.mk compiles them for a device's
//! image (`Device/Build/dtb`, which calls `Image/BuildDTB` for
//! `$(KDIR)/image-<dts>.dtb`): the target's C preprocessor
//! (`$(TARGET_CROSS)cpp`) in assembler-with-cpp mode without the standard
//! include directories or predefined macros (`-nostdinc -undef`, with
//! `-D__DTS__`), searching `$(DTS_DIR)`, `$(DTS_DIR)/include`, the kernel's
//! `include/` and `scripts/dtc/include-prefixes`; then the kernel's dtc
//! (`-O dtb`, with the `.dts` file's directory as include directory).
//!
//! The source is `<DEVICE_DTS_DIR or DTS_DIR>/<dts>.dts`. dtc is the kernel
//! tree's own `scripts/dtc/dtc` when the kernel build made it, else Debian's
//! `dtc` (device-tree-compiler). image.mk's `DTC_FLAGS` only silence
//! warnings and are left out; so is `-@`, which comes only with
//! `CONFIG_HAS_DT_OVERLAY_SUPPORT` (none of the workbench's targets).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use xshell::{cmd, Shell};

/// Where one DTB comes from and goes.
#[derive(Debug, Clone)]
pub struct DtbJob<'a> {
    /// The `.dts` file (`$(1)`).
    pub source: PathBuf,
    /// The `.dtb` to write (`$(2)`).
    pub output: PathBuf,
    /// `$(DTS_DIR)` after the board's changes.
    pub dts_dir: &'a Path,
    /// `$(LINUX_DIR)`: the kernel tree.
    pub linux_dir: &'a Path,
    /// `$(TARGET_CROSS)`: the cross compiler prefix (`mipsel-linux-gnu-`).
    pub cross_compile: &'a str,
}

/// The dtc to run: `<linux_dir>/scripts/dtc/dtc` when it exists, else `dtc`.
pub fn dtc_program(linux_dir: &Path) -> PathBuf {
    let own = linux_dir.join("scripts/dtc/dtc");
    if own.is_file() {
        own
    } else {
        PathBuf::from("dtc")
    }
}

/// The preprocessor's arguments (see the module docs), writing `tmp`.
pub fn cpp_args(job: &DtbJob<'_>, tmp: &Path) -> Vec<String> {
    let dts = job.dts_dir.display();
    let linux = job.linux_dir.display();
    vec![
        "-nostdinc".into(),
        "-x".into(),
        "assembler-with-cpp".into(),
        format!("-I{dts}"),
        format!("-I{dts}/include"),
        format!("-I{linux}/include/"),
        format!("-I{linux}/scripts/dtc/include-prefixes"),
        "-undef".into(),
        "-D__DTS__".into(),
        "-o".into(),
        tmp.display().to_string(),
        job.source.display().to_string(),
    ]
}

/// Compiles `job.source` into `job.output` (see the module docs).
///
/// Errors name the `.dts` and the tool, with its message.
pub fn build(sh: &Shell, job: &DtbJob<'_>) -> Result<()> {
    anyhow::ensure!(
        job.source.is_file(),
        "device tree {} does not exist (DEVICE_DTS names it)",
        job.source.display()
    );
    let tmp = job.output.with_extension("dtb.tmp");
    let cpp = format!("{}cpp", job.cross_compile);
    let args = cpp_args(job, &tmp);
    let out = cmd!(sh, "{cpp} {args...}")
        .quiet()
        .ignore_status()
        .output()
        .with_context(|| format!("running {cpp} (from the cross compiler's package)"))?;
    anyhow::ensure!(
        out.status.success(),
        "{cpp} on {}: {}",
        job.source.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let dtc = dtc_program(job.linux_dir);
    let include = format!(
        "-i{}/",
        job.source.parent().unwrap_or(Path::new(".")).display()
    );
    let output = &job.output;
    let out = cmd!(sh, "{dtc} -O dtb {include} -o {output} {tmp}")
        .quiet()
        .ignore_status()
        .output()
        .with_context(|| {
            format!(
                "running {} (the kernel's scripts/dtc/dtc, or Debian's device-tree-compiler)",
                dtc.display()
            )
        })?;
    let _ = std::fs::remove_file(&tmp);
    anyhow::ensure!(
        out.status.success(),
        "{} on {}: {}",
        dtc.display(),
        job.source.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}
