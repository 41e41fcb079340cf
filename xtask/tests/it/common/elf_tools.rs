//! Reference tools for the ELF differential tests: the cross binutils, the
//! kernel's `scripts/bloat-o-meter` (extracted from the Debian kernel source
//! tarball, never committed) and the vmlinux files a build leaves in
//! `target/xtask/results/`.
//!
//! `crate::common::elf_tools`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common::gate::Needs;
use xshell::{cmd, Shell};
use xtask::measure::bloat::BloatMode;
use xtask::util::layout::Layout;

/// Debian's kernel source tarball holding the reference script.
pub const KERNEL_TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";
/// The script's path inside [`KERNEL_TARBALL`].
pub const SCRIPT_MEMBER: &str = "linux-source-6.12/scripts/bloat-o-meter";

/// The Debian package of a cross tool, e.g. `arm-linux-gnueabi-nm` →
/// `binutils-arm-linux-gnueabi`, `mipsel-linux-gnu-gcc` →
/// `gcc-mipsel-linux-gnu` (what `cargo xtask setup` installs).
pub fn cross_package(prefix: &str, tool: &str) -> String {
    // Debian's package names have `-` where the triplet has `_`.
    let triplet = prefix.trim_end_matches('-').replace('_', "-");
    match tool {
        "gcc" => format!("gcc-{triplet}"),
        _ => format!("binutils-{triplet}"),
    }
}

/// `needs` plus the cross `<prefix><tool>` of each of `tools`.
pub fn cross_tools(mut needs: Needs, prefix: &str, tools: &[&str]) -> Needs {
    for tool in tools {
        needs = needs.program(&format!("{prefix}{tool}"), &cross_package(prefix, tool));
    }
    needs
}

/// `needs` plus python3 and the kernel source tarball that
/// [`bloat_o_meter`] extracts the script from.
pub fn with_bloat_o_meter(needs: Needs) -> Needs {
    needs
        .program("python3", "python3")
        .program("tar", "tar")
        .file(
            Path::new(KERNEL_TARBALL),
            "apt-get install linux-source-6.12",
        )
}

/// The path of `scripts/bloat-o-meter`, extracted once from
/// [`KERNEL_TARBALL`] into the cargo target directory and reused after that.
pub fn bloat_o_meter() -> PathBuf {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bloat-o-meter-6.12");
    let script = cache.join("bloat-o-meter");
    if script.is_file() {
        return script;
    }
    std::fs::create_dir_all(&cache).expect("creating the script cache directory");
    let scratch = tempfile::tempdir_in(&cache).expect("creating a temporary directory");
    let sh = Shell::new().expect("shell");
    let dir = scratch.path();
    cmd!(sh, "tar -xJf {KERNEL_TARBALL} -C {dir} {SCRIPT_MEMBER}")
        .quiet()
        .run()
        .expect("extracting scripts/bloat-o-meter from the kernel source tarball");
    // A rename is atomic, so concurrent tests see either no script or all of it.
    std::fs::rename(dir.join(SCRIPT_MEMBER), &script).expect("caching bloat-o-meter");
    script
}

/// The interpreter `python3` runs, resolved once: `python3` on `PATH` may be
/// a wrapper (pyenv's shim) that costs more than the script itself.
pub fn python3() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let sh = Shell::new().expect("shell");
        let exe = cmd!(sh, "python3 -c 'import sys; print(sys.executable)'")
            .quiet()
            .read()
            .expect("running python3");
        if exe.is_empty() {
            PathBuf::from("python3")
        } else {
            PathBuf::from(exe)
        }
    })
}

/// A `-p` prefix whose `nm` is `<prefix>nm` with nameless symbols
/// (`00000004 t `, two fields) left out. bloat-o-meter 6.12 unpacks every
/// line into three fields and crashes on them (real ARM vmlinux files have
/// some); `xtask::measure::bloat` skips them, so this is the script's behaviour had
/// it not crashed. The wrapper is written once per prefix.
pub fn nameless_filtering_prefix(prefix: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nm-wrappers");
    std::fs::create_dir_all(&dir).expect("creating the nm wrapper directory");
    let wrapper = dir.join(format!("{}nm", prefix.replace('/', "_")));
    if !wrapper.is_file() {
        let script = format!("#!/bin/sh\n\"{prefix}nm\" \"$@\" | awk 'NF != 2'\n");
        let tmp = dir.join(format!(
            ".{}.{}",
            std::process::id(),
            prefix.replace('/', "_")
        ));
        std::fs::write(&tmp, script).expect("writing the nm wrapper");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::rename(&tmp, &wrapper).expect("installing the nm wrapper");
    }
    format!("{}/{}", dir.display(), prefix.replace('/', "_"))
}

/// `python3 bloat-o-meter [flag] -p PREFIX old new`, its stdout verbatim,
/// with `nm` filtered by [`nameless_filtering_prefix`].
pub fn run_bloat_o_meter(
    script: &Path,
    prefix: &str,
    mode: BloatMode,
    old: &Path,
    new: &Path,
) -> String {
    let sh = Shell::new().expect("shell");
    let flag = mode.flag();
    let python = python3();
    let prefix = nameless_filtering_prefix(prefix);
    let output = cmd!(sh, "{python} {script} {flag...} -p {prefix} {old} {new}")
        .env("LC_ALL", "C")
        .quiet()
        .output()
        .unwrap_or_else(|e| panic!("running bloat-o-meter on {old:?} {new:?}: {e}"));
    String::from_utf8(output.stdout).expect("bloat-o-meter output is UTF-8")
}

/// One bloat-o-meter invocation for [`run_bloat_o_meter_batch`].
pub struct BloatJob<'a> {
    pub prefix: &'a str,
    pub mode: BloatMode,
    pub old: &'a Path,
    pub new: &'a Path,
}

/// Runs the unmodified script once per job inside a single `python3`
/// process (`runpy.run_path` with that job's `sys.argv`, stdout captured):
/// the same as [`run_bloat_o_meter`] per job, without paying interpreter
/// start-up a hundred times. Returns each job's stdout verbatim.
pub fn run_bloat_o_meter_batch(script: &Path, jobs: &[BloatJob<'_>]) -> Vec<String> {
    const DRIVER: &str = "import contextlib, io, json, runpy, sys
script = sys.argv[1]
results = []
for argv in json.load(sys.stdin):
    out = io.StringIO()
    sys.argv = [script] + argv
    with contextlib.redirect_stdout(out):
        runpy.run_path(script, run_name='__main__')
    results.append(out.getvalue())
json.dump(results, sys.stdout)
";
    let argvs: Vec<Vec<String>> = jobs
        .iter()
        .map(|job| {
            let mut argv: Vec<String> = job.mode.flag().map(str::to_string).into_iter().collect();
            argv.extend(["-p".to_string(), job.prefix.to_string()]);
            argv.push(job.old.to_str().expect("UTF-8 path").to_string());
            argv.push(job.new.to_str().expect("UTF-8 path").to_string());
            argv
        })
        .collect();
    let sh = Shell::new().expect("shell");
    let python = python3();
    let output = cmd!(sh, "{python} -c {DRIVER} {script}")
        .env("LC_ALL", "C")
        .stdin(serde_json::to_string(&argvs).expect("JSON"))
        .quiet()
        .output()
        .expect("running bloat-o-meter in python3");
    let results: Vec<String> =
        serde_json::from_slice(&output.stdout).expect("the driver prints a JSON list");
    assert_eq!(results.len(), jobs.len());
    results
}

/// `LC_ALL=C PREFIXnm --size-sort file`, its stdout verbatim.
pub fn run_nm_size_sort(prefix: &str, file: &Path) -> String {
    let sh = Shell::new().expect("shell");
    let nm = format!("{prefix}nm");
    let output = cmd!(sh, "{nm} --size-sort {file}")
        .env("LC_ALL", "C")
        .quiet()
        .ignore_stderr()
        .output()
        .unwrap_or_else(|e| panic!("running {nm} on {file:?}: {e}"));
    String::from_utf8(output.stdout).expect("nm output is UTF-8")
}

/// `PREFIXsize file` (Berkeley format): (text, data, bss, dec).
pub fn run_size(prefix: &str, file: &Path) -> (u64, u64, u64, u64) {
    let sh = Shell::new().expect("shell");
    let size = format!("{prefix}size");
    let text = cmd!(sh, "{size} {file}")
        .quiet()
        .read()
        .unwrap_or_else(|e| panic!("running {size} on {file:?}: {e}"));
    let line = text
        .lines()
        .nth(1)
        .expect("size prints a header and a line");
    let fields: Vec<u64> = line
        .split_whitespace()
        .take(4)
        .map(|f| f.parse().expect("size prints decimal numbers"))
        .collect();
    (fields[0], fields[1], fields[2], fields[3])
}

/// Sorted lines: nm's order among symbols of equal size and name is
/// unspecified (qsort), so listings are compared as multisets.
pub fn sorted_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines
}

/// `None` when equal, else a report of the first differing line.
pub fn first_difference(ours: &str, theirs: &str) -> Option<String> {
    if ours == theirs {
        return None;
    }
    let a: Vec<&str> = ours.split_inclusive('\n').collect();
    let b: Vec<&str> = theirs.split_inclusive('\n').collect();
    let at = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    Some(format!(
        "first difference at line {} (ours has {} lines, reference {}):\n  ours: {:?}\n  ref:  {:?}",
        at + 1,
        a.len(),
        b.len(),
        a.get(at).copied().unwrap_or("<end>"),
        b.get(at).copied().unwrap_or("<end>")
    ))
}

/// A pair of real kernels to compare, with the cross prefix for their tools.
pub struct VmlinuxPair {
    /// Where the pair came from, for messages.
    pub label: String,
    /// `<cross_compile>` of the target, e.g. `arm-linux-gnueabi-`.
    pub prefix: String,
    pub old: PathBuf,
    pub new: PathBuf,
}

/// The real vmlinux pairs to test against.
///
/// `XTASK_TEST_VMLINUX_OLD`/`_NEW` (and `XTASK_TEST_VMLINUX_PREFIX`, default
/// `arm-linux-gnueabi-`) name a pair by hand. Otherwise the pair is
/// `target/xtask/results/arm-tiny/{baseline,no-reorder-blocks}/vmlinux`, which
/// CI builds before the tests: when those are missing the gate fails the
/// test under CI and skips it elsewhere (an empty list).
pub fn vmlinux_pairs() -> Vec<VmlinuxPair> {
    if let (Some(old), Some(new)) = (
        std::env::var_os("XTASK_TEST_VMLINUX_OLD"),
        std::env::var_os("XTASK_TEST_VMLINUX_NEW"),
    ) {
        let prefix = std::env::var("XTASK_TEST_VMLINUX_PREFIX")
            .unwrap_or_else(|_| "arm-linux-gnueabi-".to_string());
        return vec![VmlinuxPair {
            label: "XTASK_TEST_VMLINUX_OLD/_NEW".to_string(),
            prefix,
            old: old.into(),
            new: new.into(),
        }];
    }
    let layout = Layout::from_manifest_dir();
    let target = "arm-tiny";
    let old = layout.results_dir(target, "baseline").join("vmlinux");
    let new = layout
        .results_dir(target, "no-reorder-blocks")
        .join("vmlinux");
    let how = format!(
        "`cargo xtask build --target {target} --variant baseline --variant no-reorder-blocks`, \
         or set XTASK_TEST_VMLINUX_OLD/_NEW"
    );
    if !Needs::new().file(&old, &how).file(&new, &how).met() {
        return Vec::new();
    }
    let target_file = layout.targets_dir().join(format!("{target}.toml"));
    let prefix = xtask::inputs::targets::Target::load(&target_file)
        .expect("loading the arm-tiny target")
        .cross_compile;
    vec![VmlinuxPair {
        label: format!("{target} baseline → no-reorder-blocks"),
        prefix,
        old,
        new,
    }]
}

/// Every `target/xtask/results/<target>/<variant>/vmlinux` with its target's
/// cross prefix (targets whose file is missing or unreadable are left out).
pub fn results_vmlinux_files() -> Vec<(String, PathBuf)> {
    let layout = Layout::from_manifest_dir();
    let mut found = Vec::new();
    let Ok(targets) = std::fs::read_dir(layout.results_root()) else {
        return found;
    };
    for target in targets.flatten() {
        let name = target.file_name().to_string_lossy().into_owned();
        let file = layout.targets_dir().join(format!("{name}.toml"));
        let Ok(spec) = xtask::inputs::targets::Target::load(&file) else {
            continue;
        };
        let Ok(variants) = std::fs::read_dir(target.path()) else {
            continue;
        };
        for variant in variants.flatten() {
            let vmlinux = variant.path().join("vmlinux");
            if vmlinux.is_file() {
                found.push((spec.cross_compile.clone(), vmlinux));
            }
        }
    }
    found.sort();
    found
}
