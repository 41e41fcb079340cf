//! `bench symbols`: the user's symbol diff, the built `xtask` binary's
//! `size-report --symbols`, timed as a whole process against the kernel's own
//! `scripts/bloat-o-meter` on the same vmlinux pair, with the ratio printed
//! in one run (the goal: at least 10× faster).
//!
//! The pair is the target's results for the base and the variant; when
//! either has no `result.json` or `vmlinux`, the bench builds them first as
//! `cargo xtask build` would (into the usual results; up-to-date jobs are
//! skipped). bloat-o-meter is the one in the kernel source the base was
//! built from (`result.json`'s `kernel_source`), run with Debian's
//! interpreter ([`PYTHON`], not the first `python3` on PATH: a pyenv shim
//! there took 1.47× as long) and `-p <target's cross prefix>`,
//! `LC_ALL=C`. The two commands run in pairs, one after the other in each
//! round, so that a change of the machine's load reaches both. Real ARM vmlinux files have
//! nameless local symbols that crash the script (it unpacks every `nm`
//! line into three fields); when it fails, it is timed again with an `nm`
//! that leaves those lines out, as the tests compare it, and the report
//! says so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use xshell::Shell;

use crate::inputs::kernel_source::{self, SourceInput};
use crate::kernel_build::ccache::Ccache;
use crate::kernel_build::command::{BuildMode, BuildRequest};
use crate::kernel_build::distcc::Distcc;
use crate::kernel_build::Rebuild;
use crate::results::BuildResult;
use crate::util::layout::Layout;
use crate::util::lock::Wait;

/// The interpreter bloat-o-meter runs with: Debian's `python3` package.
pub const PYTHON: &str = "/usr/bin/python3";

/// What `bench symbols` compares.
#[derive(Debug, Clone)]
pub struct SymbolsBenchRequest {
    /// The target (bcm53xx for the published figure).
    pub target: String,
    /// The old side of the diff.
    pub base: String,
    /// The new side.
    pub variant: String,
    /// Timed rounds, each one run of either command (the median counts);
    /// at least 1.
    pub runs: usize,
    /// Compile jobs if the pair has to be built first.
    pub jobs: usize,
}

/// One command's times.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Median wall-clock time from start to exit.
    pub wall: Duration,
    /// Mean CPU time (user + system) of the process and the processes it
    /// waited for, from `/proc/self/stat`'s `cutime` and `cstime` (clock
    /// ticks of 10 ms, so the mean over several runs).
    pub cpu: Duration,
}

/// The two commands' times.
#[derive(Debug, Clone)]
pub struct SymbolsBench {
    /// The built binary's `size-report --symbols` ([`std::env::current_exe`]).
    pub ours: Timing,
    /// `/usr/bin/python3 bloat-o-meter -p PREFIX old new` (its two `nm`
    /// runs included).
    pub bloat_o_meter: Timing,
    /// What `PYTHON --version` printed (`Python 3.11.2`).
    pub python: String,
}

impl SymbolsBench {
    /// How many times as long bloat-o-meter takes: (wall clock, CPU time).
    pub fn ratios(&self) -> (f64, f64) {
        (
            self.bloat_o_meter.wall.as_secs_f64() / self.ours.wall.as_secs_f64(),
            self.bloat_o_meter.cpu.as_secs_f64() / self.ours.cpu.as_secs_f64().max(1e-3),
        )
    }
}

/// Runs the benchmark and prints its table on stdout.
///
/// Errors: the pair cannot be built, the kernel source or bloat-o-meter
/// is missing, or either command fails (quoting its stderr).
pub fn run(sh: &Shell, layout: &Layout, request: &SymbolsBenchRequest) -> Result<SymbolsBench> {
    let dirs = [&request.base, &request.variant].map(|v| layout.results_dir(&request.target, v));
    if dirs
        .iter()
        .any(|d| !d.join("vmlinux").is_file() || !d.join(crate::results::FILE_NAME).is_file())
    {
        eprintln!(
            "bench symbols: building {} {} and {} first",
            request.target, request.base, request.variant
        );
        crate::kernel_build::command::run(
            sh,
            layout,
            &BuildRequest {
                targets: vec![request.target.clone()],
                variants: vec![request.base.clone(), request.variant.clone()],
                jobs: request.jobs.max(1),
                kernel_src: None,
                verbose: false,
                rebuild: Rebuild::IfChanged,
                wait: Wait::Yes,
                mode: BuildMode::Build,
                ccache: Ccache::default(),
                distcc: Distcc::default(),
                openwrt: None,
            },
        )?;
    }
    let base = BuildResult::read(&dirs[0])?;
    let script = bloat_o_meter(sh, layout, &base)?;
    let [old, new] = dirs.map(|d| d.join("vmlinux"));
    let prefix = base.target.cross_compile.clone();

    let exe = std::env::current_exe().context("finding the xtask executable")?;
    let python = python_version()?;
    let wrapper = tempfile::tempdir().context("creating a directory for the nm wrapper")?;
    let plain = run_once(&mut bloat_command(&script, &prefix, &old, &new))?;
    let (prefix_used, note) = if plain.status.success() {
        (prefix.clone(), "")
    } else {
        (
            filtering_prefix(wrapper.path(), &prefix)?,
            " (with an nm that leaves out nameless symbols, on which the script crashes)",
        )
    };
    let [ours, theirs] = time_paired(
        request.runs,
        [
            &|| {
                let mut c = Command::new(&exe);
                c.args(["size-report", "--no-lab", "--symbols", "--target"])
                    .arg(&request.target)
                    .args(["--base", &request.base, "--variant", &request.variant]);
                c
            },
            &|| bloat_command(&script, &prefix_used, &old, &new),
        ],
    )?;
    let bench = SymbolsBench {
        ours,
        bloat_o_meter: theirs,
        python: python.clone(),
    };
    let (wall, cpu) = bench.ratios();
    println!(
        "{} {} → {}, {} paired run{} (load average {}): wall-clock median, mean CPU time",
        request.target,
        request.base,
        request.variant,
        request.runs,
        if request.runs == 1 { "" } else { "s" },
        load_average()
    );
    println!(
        "  {}: {:.3} s, CPU {:.3} s",
        ours_label(&exe, layout.root()),
        bench.ours.wall.as_secs_f64(),
        bench.ours.cpu.as_secs_f64()
    );
    println!(
        "  {PYTHON} ({python}) scripts/bloat-o-meter -p {prefix}{note}: {:.3} s, CPU {:.3} s",
        bench.bloat_o_meter.wall.as_secs_f64(),
        bench.bloat_o_meter.cpu.as_secs_f64()
    );
    println!("  ratio: bloat-o-meter takes {wall:.1}× as long (CPU time: {cpu:.1}×); goal: ≥ 10×");
    Ok(bench)
}

/// What the table's first row timed: the built binary `exe` (shown
/// relative to the workspace `root` when inside it) running `size-report
/// --symbols` as a whole process. Not `cargo xtask size-report`: cargo's
/// own start-up and its check of the build are not in the time. The row
/// was labelled `cargo xtask size-report --symbols` before.
fn ours_label(exe: &Path, root: &Path) -> String {
    format!(
        "{} size-report --symbols (the built binary, whole process; cargo's start-up not timed)",
        exe.strip_prefix(root).unwrap_or(exe).display()
    )
}

/// `scripts/bloat-o-meter` of the kernel source `result` was built from.
fn bloat_o_meter(sh: &Shell, layout: &Layout, result: &BuildResult) -> Result<PathBuf> {
    let origin = PathBuf::from(&result.kernel_source.origin);
    let input = if origin.is_dir() {
        SourceInput::Tree(origin)
    } else {
        SourceInput::Tarball(origin)
    };
    let tree = kernel_source::pristine_tree(sh, layout, &input)?;
    let script = tree.dir.join("scripts/bloat-o-meter");
    if !script.is_file() {
        bail!(
            "{} does not exist: the kernel source has no bloat-o-meter",
            script.display()
        );
    }
    Ok(script)
}

/// `PYTHON --version`'s words (`Python 3.11.2`).
///
/// Errors: Debian's interpreter is missing (`apt-get install python3`).
fn python_version() -> Result<String> {
    let out = run_once(Command::new(PYTHON).arg("--version"))
        .context("`apt-get install python3` (or `cargo xtask setup`)")?;
    anyhow::ensure!(
        out.status.success(),
        "`{PYTHON} --version` failed ({})",
        out.status
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn bloat_command(script: &Path, prefix: &str, old: &Path, new: &Path) -> Command {
    let mut c = Command::new(PYTHON);
    c.arg(script)
        .arg("-p")
        .arg(prefix)
        .arg(old)
        .arg(new)
        .env("LC_ALL", "C");
    c
}

/// A `-p` prefix in `dir` whose `nm` is `<prefix>nm` without two-field
/// (nameless) lines.
fn filtering_prefix(dir: &Path, prefix: &str) -> Result<String> {
    use std::os::unix::fs::PermissionsExt;
    if !prefix
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
    {
        bail!("cross prefix {prefix:?}: only letters, digits, '-' and '_' expected");
    }
    let nm = dir.join(format!("{prefix}nm"));
    std::fs::write(
        &nm,
        format!("#!/bin/sh\n\"{prefix}nm\" \"$@\" | awk 'NF != 2'\n"),
    )
    .with_context(|| format!("writing {}", nm.display()))?;
    std::fs::set_permissions(&nm, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", nm.display()))?;
    Ok(format!("{}/{prefix}", dir.display()))
}

fn run_once(command: &mut Command) -> Result<Output> {
    command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("starting {:?}", command.get_program()))
}

/// The times of two commands over `runs` rounds, each running one
/// command after the other (the first, then the second), after one
/// untimed round that warms the page cache; a failing run is an error.
fn time_paired(runs: usize, make: [&dyn Fn() -> Command; 2]) -> Result<[Timing; 2]> {
    let mut times = [Vec::with_capacity(runs), Vec::with_capacity(runs)];
    let mut cpu_ticks = [0; 2];
    for round in 0..=runs.max(1) {
        for (i, make) in make.iter().enumerate() {
            let mut command = make();
            let ticks = children_cpu_ticks()?;
            let start = Instant::now();
            let out = run_once(command.stdout(Stdio::piped()))?;
            let took = start.elapsed();
            if !out.status.success() {
                bail!(
                    "{:?} failed ({}): {}",
                    command.get_program(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            if round > 0 {
                times[i].push(took);
                cpu_ticks[i] += children_cpu_ticks()? - ticks;
            }
        }
    }
    Ok([0, 1].map(|i| {
        times[i].sort();
        Timing {
            wall: times[i][times[i].len() / 2],
            cpu: CLOCK_TICK * cpu_ticks[i] as u32 / times[i].len() as u32,
        }
    }))
}

/// `USER_HZ`: the unit of `/proc/<pid>/stat`'s times (proc(5): 100 on
/// every architecture these builds run on).
const CLOCK_TICK: Duration = Duration::from_millis(10);

/// `cutime + cstime` of this process (proc(5), fields 16 and 17): CPU
/// time of the children it has waited for, in clock ticks.
fn children_cpu_ticks() -> Result<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").context("reading /proc/self/stat")?;
    // The fields after the command name, which is in parentheses and may
    // hold spaces: field 3 (state) is the first.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> Result<u64> {
        fields
            .get(n - 3)
            .and_then(|f| f.parse().ok())
            .with_context(|| format!("/proc/self/stat has no field {n}: {stat:?}"))
    };
    Ok(field(16)? + field(17)?)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row names the binary it times, not `cargo xtask`.
    #[test]
    fn the_row_names_the_binary_it_times() {
        let label = ours_label(Path::new("/w/target/debug/xtask"), Path::new("/w"));
        assert_eq!(
            label,
            "target/debug/xtask size-report --symbols (the built binary, whole process; \
             cargo's start-up not timed)"
        );
        let elsewhere = ours_label(Path::new("/opt/xtask"), Path::new("/w"));
        assert!(
            elsewhere.starts_with("/opt/xtask size-report"),
            "{elsewhere}"
        );
    }

    #[test]
    fn the_nm_wrapper_takes_only_a_plain_cross_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = filtering_prefix(dir.path(), "arm-linux-gnueabi-").unwrap();
        assert_eq!(
            prefix,
            format!("{}/arm-linux-gnueabi-", dir.path().display())
        );
        let script = std::fs::read_to_string(dir.path().join("arm-linux-gnueabi-nm")).unwrap();
        assert!(script.contains("\"arm-linux-gnueabi-nm\" \"$@\" | awk 'NF != 2'"));
        for bad in ["../x-", "a b-", "x$(id)-", "a\"-"] {
            assert!(filtering_prefix(dir.path(), bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn children_cpu_time_grows_with_a_waited_for_child() {
        let before = children_cpu_ticks().unwrap();
        // A child that burns some CPU: sha256 of this test executable
        // (tens of MB).
        let status = Command::new("sha256sum")
            .arg(std::env::current_exe().unwrap())
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        assert!(children_cpu_ticks().unwrap() > before);
    }
}
