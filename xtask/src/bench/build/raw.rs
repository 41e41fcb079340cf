//! Step 1a of `bench build`: the kernel-tree backend's `make` steps, run
//! by hand as a developer would type them, to time the workbench against.
//!
//! Same patched tree, same `KBUILD_BUILD_*` identity, same configuration
//! steps (`make <base>`, the fragments and the variant's lines merged as
//! the backend merges them, `make KCONFIG_ALLCONFIG=… alldefconfig`), then
//! `make -jN vmlinux <goals>`; no ccache, no jobserver of ours, no
//! artifacts, no checks.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use xshell::{cmd, Shell};

use crate::inputs::kconfig;
use crate::kernel_build::kbuild::REPRODUCIBLE_ENV;
use crate::kernel_build::Job;

/// How many of make's last output lines a failure shows.
const TAIL_LINES: usize = 25;

/// A raw build that finished.
#[derive(Debug, Clone)]
pub struct RawBuild {
    /// Wall time from the first `make` to the end of the last: seconds.
    pub seconds: f64,
    /// The vmlinux it made.
    pub vmlinux: PathBuf,
}

/// Builds `job` from the patched tree `src` into the empty directory `out`
/// (removed first if it exists) with `make -j<jobs>`; make's output goes
/// to `log`.
///
/// Errors: a `make` that fails (its last lines and the log named), I/O.
pub fn build(
    sh: &Shell,
    job: &Job,
    src: &Path,
    out: &Path,
    jobs: usize,
    log: &Path,
) -> Result<RawBuild> {
    if out.exists() {
        std::fs::remove_dir_all(out).with_context(|| format!("removing {}", out.display()))?;
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    std::fs::write(log, format!("# raw make of {}\n", job.label()))
        .with_context(|| format!("writing {}", log.display()))?;
    let settings = kconfig::read_fragments(
        &job.target.fragment_paths(),
        &job.variant.kconfig,
        &format!("variant {}", job.variant.name),
    )?;
    let base = job.target.kconfig.base.clone();
    let merged = out.join(".xtask-merged.config");
    let mut goals = vec![format!("-j{jobs}"), "vmlinux".to_string()];
    goals.extend(job.target.make_targets.iter().cloned());

    let clock = Instant::now();
    make(sh, job, src, out, std::slice::from_ref(&base), log)?;
    let config_file = out.join(".config");
    let base_config = crate::util::fs::read_limited(
        &config_file,
        crate::util::fs::FileLimit::record(".config"),
        "run the benchmark again",
    )
    .with_context(|| format!("after `make {base}`"))?;
    std::fs::write(&merged, kconfig::merge(&base_config, &settings))
        .with_context(|| format!("writing {}", merged.display()))?;
    let allconfig = format!("KCONFIG_ALLCONFIG={}", merged.display());
    make(
        sh,
        job,
        src,
        out,
        &[allconfig, "alldefconfig".to_string()],
        log,
    )?;
    make(sh, job, src, out, &goals, log)?;
    Ok(RawBuild {
        seconds: clock.elapsed().as_secs_f64(),
        vmlinux: out.join("vmlinux"),
    })
}

/// One `make -C src O=out ARCH= CROSS_COMPILE= ARGS…` with the fixed
/// build identity, its output appended to `log`.
fn make(sh: &Shell, job: &Job, src: &Path, out: &Path, args: &[String], log: &Path) -> Result<()> {
    let (arch, cross) = (&job.target.arch, &job.target.cross_compile);
    let mut make = cmd!(
        sh,
        "make -C {src} O={out} ARCH={arch} CROSS_COMPILE={cross} {args...}"
    );
    for (k, v) in REPRODUCIBLE_ENV {
        make = make.env(k, v);
    }
    let what = format!("make {}", args.join(" "));
    let output = make
        .quiet()
        .ignore_status()
        .output()
        .with_context(|| format!("running raw `{what}`"))?;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    file.write_all(&output.stdout)
        .and_then(|()| file.write_all(&output.stderr))
        .with_context(|| format!("writing {}", log.display()))?;
    if !output.status.success() {
        let text = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = text.lines().collect();
        bail!(
            "raw `{what}` failed ({}):\n{}\nfull output in {}",
            output.status,
            lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n"),
            log.display()
        );
    }
    Ok(())
}
