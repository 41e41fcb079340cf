//! `cargo xtask patches size-bisect`: which patches of a range grow the
//! image most, in a budget of builds.
//!
//! The range is a variant's own patches (base: the variant without them)
//! or the patches of `--series DIR` (base: the variant; the range comes
//! after its patches). State `k` (the base plus the range's first `k`
//! patches) is built as a variant of its own, `<variant>~bisect-<key>-<k>`
//! (`<key>` from the variant's name and the state's own patches; the name
//! of a `variants.toml` variant with the same flags, kconfig and patches
//! where there is one), through the ordinary build: the same build keys,
//! results and up-to-date check, so a second run of the same command
//! builds nothing, and a changed patch rebuilds only the states that have
//! it. Every state but the
//! first starts from the finished state sharing the most patches
//! ([`super::reuse`]: a patch-only incremental build, kbuild recompiling
//! what the patches change). [`super::bisect_search`] picks the states.
//!
//! Only the workbench's kernel-tree mode: OpenWrt mode builds every state
//! in a full copy of the tree, from scratch.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use xshell::Shell;

use super::bisect_search::{Search, Segment};
use super::command::{self, BuildMode, BuildRequest};
use super::Job;
use crate::inputs::targets::{self, Artifact, Target};
use crate::inputs::variants::{self, Variant};
use crate::patches::series::patch_files;
use crate::results::BISECT_STATE_MARK;
use crate::util::hash::sha256_bytes;
use crate::util::layout::Layout;

/// What `patches size-bisect` was asked for.
#[derive(Debug, Clone)]
pub struct BisectRequest {
    /// How to build: exactly one target, at most one variant (default
    /// `baseline`), `-j`, ccache, `--dry-run` …; not `--openwrt`.
    pub build: BuildRequest,
    /// `--series DIR`: bisect DIR's patches (its quilt `series` file when
    /// it has one, else every `*.patch` in name order) on top of the
    /// variant; `None`: the variant's own patches.
    pub series: Option<PathBuf>,
    /// `--builds N`: at most N states measured, both ends included (≥ 2).
    pub builds: usize,
    /// `--image NAME`: the artifact whose size is bisected (a name of the
    /// target's `artifacts`); default [`default_image`].
    pub image: Option<String>,
}

/// The range, its base and the states' variants.
struct Range {
    target: Target,
    variant: Variant,
    /// The patches before the range (applied in every state).
    base: Vec<PathBuf>,
    /// The range, in order.
    patches: Vec<PathBuf>,
    /// Where the range comes from, for messages.
    origin: String,
    /// `keys[k]`: the first 8 hex digits of a sha256 of the variant's
    /// name and the file name and sha256 of each of the range's first `k`
    /// patches. A state's name carries its own key, so states of
    /// different ranges never share a name, and a state keeps its name
    /// (and its build) when a later patch of the range changes.
    keys: Vec<String>,
    /// The variants of `variants.toml`: a state whose flags, kconfig
    /// and patches are one of theirs is built (and found) under its name.
    known: Vec<Variant>,
}

impl Range {
    /// The variant that builds state `k`.
    fn state(&self, k: usize) -> Variant {
        let mut patches = self.base.clone();
        patches.extend(self.patches[..k].iter().cloned());
        let same = |v: &Variant| {
            v.patches == patches
                && v.os_flags == self.variant.os_flags
                && v.o2_flags == self.variant.o2_flags
                && v.kconfig == self.variant.kconfig
        };
        let name = match self.known.iter().find(|v| same(v)) {
            Some(v) => v.name.clone(),
            None => format!(
                "{}{BISECT_STATE_MARK}{}-{k:03}",
                self.variant.name, self.keys[k]
            ),
        };
        Variant {
            name,
            description: format!(
                "{} + the first {k} of {} patches of {}",
                self.variant.name,
                self.patches.len(),
                self.origin
            ),
            patches,
            ..self.variant.clone()
        }
    }

    /// The job of state `k`.
    fn job(&self, k: usize) -> Job {
        Job {
            target: self.target.clone(),
            variant: self.state(k),
        }
    }

    /// `state 3 of 42 (up to 030-x.patch)`, for messages.
    fn describe_state(&self, k: usize) -> String {
        match k {
            0 => format!("state 0 of {} (none of the range)", self.patches.len()),
            _ => format!(
                "state {k} of {} (up to patch {k}, {})",
                self.patches.len(),
                self.name(k - 1)
            ),
        }
    }

    /// Patch `i` of the range, as a report names it.
    fn name(&self, i: usize) -> String {
        let path = &self.patches[i];
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string())
    }
}

/// The artifact bisected by default: `zImage` when the target makes one,
/// else `vmlinux.lzma` (the payload of a MIPS router's uImage), else the
/// target's first artifact.
pub fn default_image(target: &Target) -> Artifact {
    [Artifact::ZImage, Artifact::VmlinuxLzma]
        .into_iter()
        .find(|a| target.artifacts.contains(a))
        .or_else(|| target.artifacts.first().copied())
        .unwrap_or(Artifact::Vmlinux)
}

/// The patches of `--series DIR` (as absolute paths, so that any
/// spelling of DIR names the same states): the names its quilt `series`
/// file lists (a line starting with `#` and a `#` after a blank are
/// comments; `-p` options are refused), else every `*.patch` in name
/// order.
///
/// Errors: DIR missing; a `series` that is not a file; a listed name that
/// is absolute, leaves DIR (by `..` or through a link), has a control
/// character or is not a file; a `*.patch` that is a link out of DIR; no
/// patch.
pub fn series_patches(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        bail!("--series {}: not a directory of patches", dir.display());
    }
    let dir = std::fs::canonicalize(dir)
        .with_context(|| format!("--series {}: resolving the path", dir.display()))?;
    let series = dir.join("series");
    if series.symlink_metadata().is_ok() && !series.is_file() {
        bail!(
            "{}: not a regular file; a quilt series file lists the patches, one per line",
            series.display()
        );
    }
    if series.is_file() && !stays_in(&dir, &series) {
        bail!(
            "{}: a link that leads out of {}; a series file lists the patches beside it",
            series.display(),
            dir.display()
        );
    }
    if !series.is_file() {
        let patches = patch_files(&dir)?;
        if patches.is_empty() {
            bail!(
                "--series {}: no patch (no `series` file and no *.patch)",
                dir.display()
            );
        }
        for p in &patches {
            if !stays_in(&dir, p) {
                bail!(
                    "{}: a link that leads out of {}; copy the patch in instead",
                    p.display(),
                    dir.display()
                );
            }
        }
        return Ok(patches);
    }
    let text = crate::util::fs::read_limited(
        &series,
        crate::util::fs::FileLimit::input("quilt series file"),
        "fix the series file",
    )?;
    let mut patches = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = |what: String| anyhow::anyhow!("{}:{}: {what}", series.display(), n + 1);
        // A comment: the whole line from a leading `#`, or from a `#`
        // after a blank (quilt's series format).
        let line = match line.trim_start().strip_prefix('#') {
            Some(_) => "",
            None => line.split(" #").next().unwrap_or(line),
        };
        let line = line.split("\t#").next().unwrap_or(line).trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let name = words.next().unwrap_or_default();
        if words.next().is_some() {
            return Err(at(format!(
                "{:?}: patch options are not supported (every patch is applied with -p1); \
                 remove them",
                line
            )));
        }
        if name.chars().any(char::is_control) {
            return Err(at(format!(
                "{name:?}: a patch name with a control character cannot be in a series; rename it"
            )));
        }
        let path = dir.join(name);
        if name.starts_with('/')
            || name.split('/').any(|c| c == "..")
            || !path.is_file()
            || !stays_in(&dir, &path)
        {
            return Err(at(format!(
                "{name:?} is not a patch file in {} (absolute, with `..`, missing, or reached \
                 through a link that leads out of it)",
                dir.display()
            )));
        }
        patches.push(path);
    }
    if patches.is_empty() {
        bail!(
            "{}: lists no patch (only comments or blank lines)",
            series.display()
        );
    }
    Ok(patches)
}

/// Whether `path`, with every link resolved, is inside `dir` (itself
/// resolved): a series entry `sub/passwd` with `sub → /etc`, or a patch
/// `evil.patch → /etc/passwd`, is not.
fn stays_in(dir: &Path, path: &Path) -> bool {
    std::fs::canonicalize(path).is_ok_and(|real| real.starts_with(dir))
}

/// The target, variant and range of `request`.
fn range(layout: &Layout, request: &BisectRequest) -> Result<Range> {
    if request.build.openwrt.is_some() {
        bail!(
            "size-bisect builds in the workbench's kernel-tree mode, where each state starts \
             from the nearest finished one; OpenWrt mode builds every state from scratch. \
             Leave out --openwrt, and give the OpenWrt patches to bisect with --series DIR"
        );
    }
    let chosen = targets::select(
        &targets::load_all(&layout.targets_dir())?,
        &request.build.targets,
    )?;
    let [target] = <[Target; 1]>::try_from(chosen).map_err(|chosen| {
        anyhow::anyhow!(
            "size-bisect takes exactly one target; --target gave {}",
            chosen.len()
        )
    })?;
    let name = match request.build.variants.as_slice() {
        [] => variants::BASELINE.to_string(),
        [one] => one.clone(),
        _ => bail!("size-bisect takes at most one --variant (the base of the range)"),
    };
    let all = variants::load(&layout.variants_file(), &layout.patches_dir())?;
    let variant = variants::select(&all, &[name])?.remove(0);
    if request.series.is_none() && variant.patches.is_empty() {
        bail!(
            "variant {} has no patches of its own to bisect; give --series DIR, or a variant \
             with `patches = [...]` in {}",
            variant.name,
            layout.variants_file().display()
        );
    }
    let (base, patches, origin) = match &request.series {
        Some(dir) => (
            variant.patches.clone(),
            series_patches(dir)?,
            dir.display().to_string(),
        ),
        None => (
            Vec::new(),
            variant.patches.clone(),
            format!("variant {}", variant.name),
        ),
    };
    let mut material = variant.name.clone().into_bytes();
    let mut keys = vec![sha256_bytes(&material)[..8].to_string()];
    for path in &patches {
        let bytes = crate::util::fs::read_bytes_limited(
            path,
            crate::util::fs::FileLimit::input("patch"),
            "remove it from the range",
        )?;
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        material.extend(name.bytes());
        material.push(0);
        material.extend(sha256_bytes(&bytes).bytes());
        keys.push(sha256_bytes(&material)[..8].to_string());
    }
    Ok(Range {
        target,
        variant,
        base,
        patches,
        origin,
        keys,
        known: all,
    })
}

/// One measured state, as the record and the table give it.
#[derive(Debug, Clone, Serialize)]
pub struct StateRecord {
    /// How many patches of the range it has.
    pub state: usize,
    /// The variant name it was built as.
    pub variant: String,
    /// The image's size in bytes.
    pub bytes: u64,
    /// `built` now (with the state it started from, if any) or `up to date`.
    pub how: String,
    /// Wall time of its build in seconds (0 when up to date).
    pub seconds: f64,
}

/// One step of the result: a patch, or several not yet split.
#[derive(Debug, Clone, Serialize)]
pub struct StepRecord {
    /// The range's patches in it (file names), in order.
    pub patches: Vec<String>,
    /// The image's change across them, in bytes.
    pub delta: i64,
}

/// `size-bisect.json`: what a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct BisectRecord {
    /// The target.
    pub target: String,
    /// The base variant.
    pub variant: String,
    /// Where the range comes from.
    pub range: String,
    /// The range's patches (paths), in order.
    pub patches: Vec<String>,
    /// The artifact measured.
    pub image: String,
    /// `--builds`.
    pub budget: usize,
    /// Every measured state, in series order.
    pub states: Vec<StateRecord>,
    /// The steps between measured states, in series order; their deltas
    /// add up to the last state's size minus the first's.
    pub steps: Vec<StepRecord>,
    /// Wall time of the run in seconds.
    pub seconds: f64,
}

/// Runs `request` (see the module docs): prints each state as it is
/// measured, then the steps in series order and the largest ones, and
/// writes `target/xtask/size-bisect/<target>/<variant>-<key>-<image>.json`
/// (`<key>`: the whole range's state key). On a
/// dry run, prints the range and the plan of both ends and builds nothing.
///
/// Errors: a bad range or request (naming the flag or file), the first
/// failing build (the states measured before it stay built: the same
/// command resumes), an image the target does not make.
pub fn run(sh: &Shell, layout: &Layout, request: &BisectRequest) -> Result<()> {
    let started = Instant::now();
    let range = range(layout, request)?;
    let image = match &request.image {
        None => default_image(&range.target),
        Some(name) => *range
            .target
            .artifacts
            .iter()
            .find(|a| a.file_name() == name)
            .with_context(|| {
                let made: Vec<&str> = range
                    .target
                    .artifacts
                    .iter()
                    .map(|a| a.file_name())
                    .collect();
                format!(
                    "--image {name}: {} makes {}",
                    range.target.name,
                    made.join(", ")
                )
            })?,
    };
    let image = image.file_name().to_string();
    let mut search = Search::new(range.patches.len(), request.builds)?;
    println!(
        "size-bisect {}: {} patch(es) of {} on {}, measuring {image} (bytes), at most {} builds",
        range.target.name,
        range.patches.len(),
        range.origin,
        range.variant.name,
        request.builds
    );
    if request.build.mode == BuildMode::DryRun {
        let ends = [range.job(0), range.job(range.patches.len())];
        let planned = command::plan_jobs(sh, layout, &request.build, &ends)?;
        print!("{}", command::describe_plan(layout, &planned.jobs));
        for i in 0..range.patches.len() {
            println!("  {:>3} {}", i + 1, range.patches[i].display());
        }
        println!(
            "then up to {} middle state(s), each the middle of the step with the largest \
             change so far",
            request
                .builds
                .saturating_sub(2)
                .min(range.patches.len().saturating_sub(1))
        );
        return Ok(());
    }
    let mut states = Vec::new();
    while let Some(k) = search.next() {
        let what = range.describe_state(k);
        let measured = || describe_measured(&search);
        crate::util::cancel::check().with_context(|| format!("before {what}{}", measured()))?;
        let job = range.job(k);
        let planned = command::plan_jobs(sh, layout, &request.build, &[job])
            .with_context(|| format!("planning {what}{}", measured()))?;
        let build_started = Instant::now();
        let outcomes = command::build_outcomes(sh, &planned, &request.build)
            .with_context(|| format!("building {what}{}", measured()))?;
        // A build stopped by Ctrl-C before it started reports nothing.
        let Some(outcome) = outcomes.into_iter().next() else {
            bail!(
                "stopped before {what} was built (Ctrl-C or SIGTERM){}; the same command \
                 resumes",
                measured()
            );
        };
        let result = outcome.result();
        let bytes = result
            .artifacts
            .get(&image)
            .with_context(|| format!("state {k}: the build recorded no {image}"))?
            .size;
        let how = match (&outcome, &result.incremental_from) {
            (super::BuildOutcome::UpToDate(_), _) => "up to date".to_string(),
            (_, Some(from)) => format!("built from {from}"),
            (_, None) => "built from scratch".to_string(),
        };
        let seconds = match outcome {
            super::BuildOutcome::UpToDate(_) => 0.0,
            super::BuildOutcome::Built(_) => build_started.elapsed().as_secs_f64(),
        };
        println!(
            "state {k:>3}/{}: {bytes} bytes ({how}, {seconds:.0} s)",
            range.patches.len()
        );
        search.record(k, bytes);
        states.push(StateRecord {
            state: k,
            variant: result.variant.name.clone(),
            bytes,
            how,
            seconds,
        });
    }
    states.sort_by_key(|s| s.state);
    let segments = search.segments();
    let record = BisectRecord {
        target: range.target.name.clone(),
        variant: range.variant.name.clone(),
        range: range.origin.clone(),
        patches: range
            .patches
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        image: image.clone(),
        budget: request.builds,
        steps: segments
            .iter()
            .map(|s| StepRecord {
                patches: (s.from..s.to).map(|i| range.name(i)).collect(),
                delta: s.delta,
            })
            .collect(),
        states,
        seconds: started.elapsed().as_secs_f64(),
    };
    print!("{}", render(&range, &segments, &record));
    let file = layout
        .work_dir()
        .join("size-bisect")
        .join(&range.target.name)
        .join(format!(
            "{}-{}-{image}.json",
            range.variant.name,
            range.keys[range.patches.len()]
        ));
    let json = serde_json::to_vec_pretty(&record).context("serialising the bisection")?;
    crate::util::fs::write_atomic(&file, &json)?;
    println!("record: {}", file.display());
    Ok(())
}

/// `; measured so far: state 0 2133292 bytes, …` (nothing when nothing
/// is), for an error that stops the bisection.
fn describe_measured(search: &Search) -> String {
    if search.sizes().is_empty() {
        return String::new();
    }
    let states: Vec<String> = search
        .sizes()
        .iter()
        .map(|(k, bytes)| format!("state {k} {bytes} bytes"))
        .collect();
    format!("; measured so far: {}", states.join(", "))
}

/// The steps in series order, then the largest ones.
fn render(range: &Range, segments: &[Segment], record: &BisectRecord) -> String {
    let n = range.patches.len();
    let built = record.states.iter().filter(|s| s.seconds > 0.0).count();
    let mut out = format!(
        "\n{} state(s) measured ({built} built, {} up to date) in {:.0} s; {} → {} bytes ({:+})\n",
        record.states.len(),
        record.states.len() - built,
        record.seconds,
        record.states.first().map_or(0, |s| s.bytes),
        record.states.last().map_or(0, |s| s.bytes),
        segments.iter().map(|s| s.delta).sum::<i64>()
    );
    out.push_str(&format!("{:>10}  {:<9}  patch\n", "bytes", "patches"));
    for s in segments {
        let which = if s.is_one_patch() {
            format!("{}", s.from + 1)
        } else {
            format!("{}-{}", s.from + 1, s.to)
        };
        let names = if s.is_one_patch() {
            range.name(s.from)
        } else {
            format!(
                "{} … {} ({} patches, not split)",
                range.name(s.from),
                range.name(s.to - 1),
                s.patches()
            )
        };
        out.push_str(&format!("{:>+10}  {which:<9}  {names}\n", s.delta));
    }
    let mut largest: Vec<&Segment> = segments.iter().filter(|s| s.delta != 0).collect();
    largest.sort_by_key(|s| std::cmp::Reverse(s.delta.unsigned_abs()));
    if let Some(top) = largest.first() {
        let what = if top.is_one_patch() {
            format!("patch {} ({})", top.from + 1, range.name(top.from))
        } else {
            format!(
                "patches {}-{} (not split: raise --builds)",
                top.from + 1,
                top.to
            )
        };
        out.push_str(&format!(
            "largest step: {what}, {:+} bytes, of {n} patch(es)\n",
            top.delta
        ));
    } else {
        out.push_str("no step changed the image\n");
    }
    out
}
