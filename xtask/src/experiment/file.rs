//! `experiments/<name>.toml`: one experiment as a file — the targets, the
//! variants, the mode, the lab and the report — read and checked before
//! anything builds (in the manner of LKP's job files and flent's batch
//! files).
//!
//! ```toml
//! description = "drop -fno-reorder-blocks"
//! targets = ["bcm53xx", "brcm47xx", "ramips/mt7621", "ath79"]
//! base = "baseline"                 # optional; else the first variant
//! variants = ["no-reorder-blocks"]
//! # openwrt = "../openwrt"          # OpenWrt mode; default: the hand-written profiles
//!
//! [lab]                             # optional: sizes only without it
//! topology = "nat-router"           # lab::topology::Name::KNOWN
//! workload = "iperf3"               # iperf3 (from, to, parallel, mss, udp) | tbench (guest, clients)
//! # parallel = 8                    # iperf3 -P, 1 to 128 (default 1)
//! # mss = 536                       # iperf3 --set-mss in bytes, 88 to 9216
//! # udp = 100                       # UDP at this rate in Mbit/s (iperf3 -u -b 100M); default TCP
//! runs = 10                         # rounds
//! duration = 10                     # seconds per run
//! gro = "both"                      # on | off | both (iperf3)
//! directions = "both"               # lan-to-wan | wan-to-lan | both (iperf3)
//! model = "none"                    # none | cache (the L1 cache model)
//! labs = "side-by-side"             # side-by-side (the targets' labs at once, within -j) | serial
//!
//! [report]
//! formats = ["mail", "text"]
//! output = "target/xtask/experiments/flags"
//! # devices = "*"                   # OpenWrt mode: device fit (size-report --devices)
//! # rootfs = "root.squashfs"        # with devices: whole images (size-report --rootfs)
//! ```
//!
//! Every problem is an error naming the file, its line and the fix: an
//! unknown key (serde's `deny_unknown_fields`, with `toml_edit`'s
//! position), target, variant, topology, format, or a workload its
//! topology cannot host.

use crate::report::device_fit::images::RootfsSummary;
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use serde_spanned::Spanned;

use crate::inputs::targets::{self, Target};
use crate::inputs::variants;
pub use crate::lab::WorkloadSpec;
use crate::report::Format;
use crate::util::layout::Layout;

mod lab;

use lab::RawLab;
pub use lab::{ExperimentLab, LabsAtOnce};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    description: String,
    targets: Vec<Spanned<String>>,
    base: Option<Spanned<String>>,
    variants: Spanned<Vec<Spanned<String>>>,
    openwrt: Option<Spanned<String>>,
    lab: Option<Spanned<RawLab>>,
    #[serde(default)]
    report: RawReport,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReport {
    formats: Option<Vec<Spanned<String>>>,
    output: Option<Spanned<String>>,
    symbols: Option<bool>,
    devices: Option<Spanned<String>>,
    rootfs: Option<Spanned<String>>,
}

/// How the kernels are configured, patched and flagged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExperimentMode {
    /// The hand-written profiles of `targets/` (`cargo xtask build`).
    Profiles,
    /// As this OpenWrt checkout does (`build --openwrt PATH`; the lab
    /// kernels as `lab --openwrt PATH` builds them).
    Openwrt(PathBuf),
}

/// Where and how the report is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportSpec {
    /// Its formats, each written as `<output>/<name>.<ext>`.
    pub formats: Vec<Format>,
    /// The directory, below `target/xtask` (`[report] output`, written
    /// relative to the workspace root; default
    /// `target/xtask/experiments/<name>/report`).
    pub output: PathBuf,
    /// bloat-o-meter symbol diffs in the report.
    pub symbols: bool,
    /// Device fit for the devices matching this pattern (`size-report
    /// --devices`: a glob with `*`/`?`, else a substring); OpenWrt mode
    /// only, whose builds write `device-fit.json`.
    pub devices: Option<String>,
    /// The rootfs whole images are sized with (`size-report --rootfs`),
    /// read when the file is (a relative path is taken from the
    /// experiment file's directory), so that a bad one stops the
    /// experiment before anything builds.
    pub rootfs: Option<RootfsSummary>,
}

/// A checked experiment file.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// The file's stem (`flags`): the state and report directory's name.
    pub name: String,
    /// The file.
    pub file: PathBuf,
    /// One line for the plan and the report.
    pub description: String,
    /// Target names (`targets/<name>.toml`), in order, without repeats.
    pub targets: Vec<String>,
    /// The variants, the base first.
    pub variants: Vec<String>,
    /// Hand-written profiles or OpenWrt's.
    pub mode: ExperimentMode,
    /// The lab, if any.
    pub lab: Option<ExperimentLab>,
    /// The report.
    pub report: ReportSpec,
}

/// Reads and checks `file` against `layout`'s targets and variants and the
/// lab's topology registry.
///
/// Errors: `FILE:LINE: what — fix` for an unreadable file, a TOML error,
/// an unknown key, target, variant, topology, workload, format; a lab
/// target without `[lab]`; a workload the topology cannot host; the cache
/// model on a topology that forwards nothing; a report output that is not
/// a directory below `target/xtask`.
pub fn load(layout: &Layout, file: &Path) -> Result<Experiment> {
    // A regular file of UTF-8 text, at most 1 MiB: a FIFO or a device
    // (/dev/zero) is refused before it is read, not waited on or read
    // until memory runs out.
    let limit = crate::util::fs::FileLimit {
        what: "TOML experiment file",
        max_bytes: MAX_FILE_BYTES,
    };
    let text = crate::util::fs::read_limited(
        file,
        limit,
        "give a regular file of UTF-8 TOML text, at most 1 MiB (docs/experiments.md)",
    )?;
    parse(layout, file, &text)
}

/// The largest experiment file read, in bytes (the project's are under
/// 2 KB).
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// [`load`] of `text`, as if read from `file`.
pub fn parse(layout: &Layout, file: &Path, text: &str) -> Result<Experiment> {
    let raw = parse_raw(file, text)?;
    let at = |span: Range<usize>| format!("{}:{}", file.display(), line_of(text, &span));
    let name = experiment_name(file)?;
    let chosen = chosen_targets(layout, file, &raw.targets, &at)?;
    let variants = chosen_variants(layout, &raw, &at)?;
    let mode = experiment_mode(file, raw.openwrt.as_ref(), &at)?;
    let lab = match raw.lab {
        None => None,
        Some(l) => {
            let table = l.span();
            // Where each `[lab]` key's value is, for the keys serde reads
            // into a map (the lab's whole-number options).
            let doc = toml_edit::Document::parse(text).ok();
            let key_at = |key: &str| {
                let lab = doc.as_ref()?.get("lab")?;
                lab.get(key)?.span()
            };
            Some(lab::lab_spec(
                l.into_inner(),
                table,
                &chosen,
                (&at, &key_at),
            )?)
        }
    };
    let report = report_spec(layout, file, &name, &raw.report, &mode, &chosen, &at)?;
    Ok(Experiment {
        name,
        file: file.to_path_buf(),
        description: raw.description,
        targets: chosen.iter().map(|t| t.name.clone()).collect(),
        variants,
        mode,
        lab,
        report,
    })
}

/// The file's `text` as read by serde, before any check of its values.
///
/// Errors: `FILE:LINE: message` for a TOML error, an unknown key or a
/// value of the wrong type (then with what the key takes).
fn parse_raw(file: &Path, text: &str) -> Result<RawFile> {
    toml_edit::de::from_str(text).map_err(|e| {
        let at = e
            .span()
            .map_or(String::new(), |s| format!(":{}", line_of(text, &s)));
        let takes = e
            .span()
            .filter(|_| {
                let m = e.message();
                m.starts_with("invalid type") || m.starts_with("invalid value")
            })
            .and_then(|s| super::hint::for_span(text, &s))
            .map_or(String::new(), |t| format!("; {t}"));
        anyhow::anyhow!(
            "{}{at}: {}{takes} (the file's keys: docs/experiments.md)",
            file.display(),
            e.message().trim_end()
        )
    })
}

/// The experiment's name: `file`'s stem (`experiments/flags.toml` →
/// `flags`).
///
/// Errors: a file without a stem, or a stem that is not a valid name
/// (the name becomes a directory and a line of the plan).
fn experiment_name(file: &Path) -> Result<String> {
    let name = file
        .file_stem()
        .and_then(|s| s.to_str())
        .context("the experiment file needs a name (experiments/<name>.toml)")?
        .to_string();
    // The name becomes a directory (target/xtask/experiments/<name>/) and
    // a line of the plan.
    crate::inputs::variants::check_name("the experiment file's name", &name).with_context(
        || {
            format!(
                "{}: rename the file (experiments/<name>.toml)",
                crate::util::text::printable(&file.display().to_string())
            )
        },
    )?;
    Ok(name)
}

/// The targets of `layout` that `targets` (the file's `targets`, names
/// or groups) select, in order, without repeats; `at` turns a span into
/// `FILE:LINE`.
///
/// Errors: an empty list, an unreadable `targets/` directory, or a name
/// that selects no target (named at its line).
fn chosen_targets(
    layout: &Layout,
    file: &Path,
    targets: &[Spanned<String>],
    at: &dyn Fn(Range<usize>) -> String,
) -> Result<Vec<Target>> {
    let all_targets = targets::load_all(&layout.targets_dir())?;
    let mut chosen: Vec<Target> = Vec::new();
    if targets.is_empty() {
        bail!(
            "{}: targets is empty — name at least one, e.g. targets = [\"brcm47xx\"]",
            file.display()
        );
    }
    for t in targets {
        let found = targets::select(&all_targets, std::slice::from_ref(t.get_ref()))
            .with_context(|| format!("{}: targets", at(t.span())))?;
        for f in found {
            if !chosen.iter().any(|c| c.name == f.name) {
                chosen.push(f);
            }
        }
    }
    Ok(chosen)
}

/// The variants `raw` compares, the base first, without repeats; `at`
/// turns a span into `FILE:LINE`.
///
/// Errors: an unreadable `patches/variants.toml`, a variant it does not
/// list (named at its line), or fewer than two variants.
fn chosen_variants(
    layout: &Layout,
    raw: &RawFile,
    at: &dyn Fn(Range<usize>) -> String,
) -> Result<Vec<String>> {
    let all_variants = variants::load(&layout.variants_file(), &layout.patches_dir())?;
    let mut names: Vec<Spanned<String>> = raw.base.iter().cloned().collect();
    names.extend(raw.variants.get_ref().iter().cloned());
    let mut variants: Vec<String> = Vec::new();
    for v in &names {
        variants::select(&all_variants, std::slice::from_ref(v.get_ref()))
            .with_context(|| format!("{}: variant", at(v.span())))?;
        if !variants.contains(v.get_ref()) {
            variants.push(v.get_ref().clone());
        }
    }
    if variants.len() < 2 {
        bail!(
            "{}: an experiment compares a base with at least one other variant; add one to variants (patches/variants.toml lists them)",
            at(raw.variants.span())
        );
    }
    Ok(variants)
}

/// The mode the file's `openwrt` key asks for: the hand-written profiles
/// without it, else OpenWrt mode with the checkout at that path (a
/// relative one is taken from `file`'s directory); `at` turns a span into
/// `FILE:LINE`.
///
/// Errors: a path that is not an OpenWrt checkout (no
/// `include/target.mk`).
fn experiment_mode(
    file: &Path,
    openwrt: Option<&Spanned<String>>,
    at: &dyn Fn(Range<usize>) -> String,
) -> Result<ExperimentMode> {
    Ok(match openwrt {
        None => ExperimentMode::Profiles,
        Some(p) => {
            let base = file.parent().unwrap_or(Path::new("."));
            let path = base.join(p.get_ref());
            if !path.join("include/target.mk").is_file() {
                bail!(
                    "{}: openwrt = {:?}: {} is not an OpenWrt checkout (no include/target.mk); a relative path is taken from the experiment file's directory",
                    at(p.span()),
                    p.get_ref(),
                    path.display()
                );
            }
            ExperimentMode::Openwrt(path)
        }
    })
}

/// The checked `[report]` table `raw` of experiment `name` (in `mode`, of
/// targets `chosen`); `at` turns a span into `FILE:LINE`.
///
/// Errors: an unknown format, and those of [`report_devices`],
/// [`report_rootfs`] and [`report_output`], each at its line.
fn report_spec(
    layout: &Layout,
    file: &Path,
    name: &str,
    raw: &RawReport,
    mode: &ExperimentMode,
    chosen: &[Target],
    at: &dyn Fn(Range<usize>) -> String,
) -> Result<ReportSpec> {
    let formats = match &raw.formats {
        None => vec![Format::Mail],
        Some(list) => list
            .iter()
            .map(|f| {
                f.get_ref()
                    .parse::<Format>()
                    .with_context(|| format!("{}: report.formats", at(f.span())))
            })
            .collect::<Result<Vec<_>>>()?,
    };
    let devices = report_devices(raw.devices.as_ref(), mode, chosen, at)?;
    let rootfs = report_rootfs(file, raw.rootfs.as_ref(), devices.is_some(), at)?;
    let default_output = layout
        .work_dir()
        .join("experiments")
        .join(name)
        .join("report");
    let output = match &raw.output {
        None => default_output,
        Some(o) => report_output(layout, o.get_ref()).map_err(|why| {
            anyhow::anyhow!(
                "{}: report.output = {:?} {why}; every report stays under {}: name a directory there, e.g. \"{}\", or leave output out for that one",
                at(o.span()),
                o.get_ref(),
                work_dir_in(layout).display(),
                default_output
                    .strip_prefix(layout.root())
                    .unwrap_or(&default_output)
                    .display()
            )
        })?,
    };
    Ok(ReportSpec {
        formats,
        output,
        symbols: raw.symbols.unwrap_or(false),
        devices,
        rootfs,
    })
}

/// The device pattern of `[report] devices`, if given; `at` turns a span
/// into `FILE:LINE`.
///
/// Errors: devices outside OpenWrt `mode`, an empty pattern, or a target
/// of `chosen` without an `openwrt_device` (its build makes no device
/// images).
fn report_devices(
    devices: Option<&Spanned<String>>,
    mode: &ExperimentMode,
    chosen: &[Target],
    at: &dyn Fn(Range<usize>) -> String,
) -> Result<Option<String>> {
    Ok(match (devices, mode) {
        (None, _) => None,
        (Some(d), ExperimentMode::Openwrt(_)) if !d.get_ref().trim().is_empty() => {
            // Device fit comes from the build of a target's openwrt_device.
            if let Some(t) = chosen.iter().find(|t| t.openwrt_device.is_none()) {
                bail!(
                    "{}: report.devices, but target {} has no openwrt_device in targets/{}.toml, so its OpenWrt-mode build makes no device images: give it one or leave devices out",
                    at(d.span()),
                    t.name,
                    t.name
                );
            }
            Some(d.get_ref().clone())
        }
        (Some(d), ExperimentMode::Openwrt(_)) => bail!(
            "{}: report.devices is empty: name the devices (\"*\" for all, or a part of their names)",
            at(d.span())
        ),
        (Some(d), ExperimentMode::Profiles) => bail!(
            "{}: report.devices needs OpenWrt mode, whose builds make every device's image: set openwrt = \"<checkout>\" or leave devices out",
            at(d.span())
        ),
    })
}

/// The summary of the rootfs `[report] rootfs` names (a relative path is
/// taken from `file`'s directory), read now, if given; `devices` is
/// whether the report has device fit; `at` turns a span into `FILE:LINE`.
///
/// Errors: a rootfs without devices, a path that is not a file, or one
/// that is neither a squashfs nor a sysupgrade image.
fn report_rootfs(
    file: &Path,
    rootfs: Option<&Spanned<String>>,
    devices: bool,
    at: &dyn Fn(Range<usize>) -> String,
) -> Result<Option<RootfsSummary>> {
    Ok(match (rootfs, devices) {
        (None, _) => None,
        (Some(r), true) => {
            let path = file.parent().unwrap_or(Path::new(".")).join(r.get_ref());
            if !path.is_file() {
                bail!(
                    "{}: report.rootfs = {:?}: {} is not a file (a root.squashfs or an OpenWrt \
                     sysupgrade image; a relative path is taken from the experiment file's \
                     directory)",
                    at(r.span()),
                    r.get_ref(),
                    path.display()
                );
            }
            let summary = super::rootfs::rootfs_summary(&path)
                .with_context(|| format!("{}: report.rootfs", at(r.span())))?;
            Some(summary)
        }
        (Some(r), false) => bail!(
            "{}: report.rootfs sizes whole images for device fit: set report.devices too",
            at(r.span())
        ),
    })
}

/// `target/xtask`: the work directory as written relative to the
/// workspace root (as `[report] output` is written).
fn work_dir_in(layout: &Layout) -> PathBuf {
    let work = layout.work_dir();
    work.strip_prefix(layout.root())
        .map_or_else(|_| work.clone(), Path::to_path_buf)
}

/// `[report] output` (`written`, relative to the workspace root) as a
/// path, or why it is refused: empty (the workspace root itself),
/// absolute, holding `..`, not a directory below `target/xtask` (a
/// report written to `patches/generic/pending-6.12` replaced files of the
/// patch stack), or inside the results or lab directories (in either
/// mode). The text after the value: `is empty …`.
fn report_output(layout: &Layout, written: &str) -> std::result::Result<PathBuf, String> {
    if let Some(why) = crate::util::path::unsafe_reason(Path::new(written)) {
        return Err(match why {
            "empty file name" => "is empty, which names the workspace root".to_string(),
            "names the tree itself" => "names the workspace root".to_string(),
            why => format!("is refused ({why})"),
        });
    }
    // Plain components only (unsafe_reason let `.` through).
    let rel: PathBuf = Path::new(written)
        .components()
        .filter(|c| *c != std::path::Component::CurDir)
        .collect();
    let work = work_dir_in(layout);
    if !rel.starts_with(&work) || rel == work {
        return Err(format!("is not a directory below {}", work.display()));
    }
    // Results and lab directories are records other commands read, pack
    // and merge: a report there became part of a build's result, which
    // `results export` packed and `results merge` refused.
    for records in ["results", "lab", "openwrt/results", "openwrt/lab"] {
        let dir = work.join(records);
        if rel.starts_with(&dir) {
            return Err(format!(
                "is inside {}, where builds and labs keep their records; name a directory such \
                 as {}",
                dir.display(),
                work.join("experiments/<name>").display()
            ));
        }
    }
    Ok(layout.root().join(rel))
}

/// The 1-based line of byte `span.start` in `text`.
fn line_of(text: &str, span: &Range<usize>) -> usize {
    text[..span.start.min(text.len())].matches('\n').count() + 1
}
