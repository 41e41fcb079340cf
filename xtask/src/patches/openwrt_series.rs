//! OpenWrt mode's patch series on the workbench's kernel source.
//!
//! OpenWrt's 6.12 series is made for the point release in its
//! `target/linux/generic/kernel-6.12` (6.12.40 in the test fixture); the
//! workbench builds Debian's source (6.12.117). Before applying, every
//! patch of the series ([`crate::inputs::openwrt::series`]) is classified
//! with the rebase classifier ([`rebase::classify`]) on a copy of the
//! pristine tree with OpenWrt's `files/` overlays, in OpenWrt's order,
//! with GNU patch's default fuzz of 2 (what scripts/patch-kernel.sh runs):
//!
//! * `clean`, `offset`, `fuzz`: applied, and the series goes on from the
//!   patched tree;
//! * `upstream`: the point release already has it (it applies in
//!   reverse, or only adds lines that are already there: see
//!   [`rebase::classify`]): dropped, with the reason as its note;
//! * `conflict`: neither; listed, not applied, and the series goes on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use xshell::{cmd, Shell};

use crate::inputs::kernel_source::PristineTree;
use crate::inputs::openwrt::series::{self, SeriesEntry};
use crate::inputs::openwrt::{Checkout, OpenwrtTarget};
use crate::patches::engine::{apply_patch, parse_patch, ApplyOptions, ApplyReport, Patch};
use crate::patches::rebase::{self, Class};
use crate::results::PatchRecord;
use crate::util::fs::{copy_tree, remove_stale_staging, write_atomic, CopyKind, StagingDir};
use crate::util::hash::sha256_bytes;
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

/// How OpenWrt applies its patches: `patch -p1` with GNU patch's default fuzz (2).
pub const OPENWRT_APPLY: ApplyOptions = ApplyOptions { strip: 1, fuzz: 2 };

/// The OpenWrt series of one target and kernel series, with its overlays.
#[derive(Debug, Clone)]
pub struct OpenwrtSeries {
    /// The OpenWrt target.
    pub target: OpenwrtTarget,
    /// Kernel series (`6.12`).
    pub kernel: String,
    /// The `files/` overlay directories, in copy order.
    pub overlays: Vec<PathBuf>,
    /// The patches, in OpenWrt's order.
    pub entries: Vec<SeriesEntry>,
}

impl OpenwrtSeries {
    /// Reads the series and overlays of `target` for `kernel` from the checkout.
    pub fn load(
        checkout: &Checkout,
        target: &OpenwrtTarget,
        kernel: &str,
    ) -> Result<OpenwrtSeries> {
        Ok(OpenwrtSeries {
            target: target.clone(),
            kernel: kernel.to_string(),
            overlays: series::overlay_dirs(checkout, &target.board, kernel),
            entries: series::series(checkout, &target.board, kernel)?,
        })
    }
}

/// The text of one patch, decompressed as scripts/patch-kernel.sh does
/// (`gzip -dc`, `bzip2 -dc`, `xz -dc`, `zstd -dc`).
pub fn read_patch(sh: &Shell, entry: &SeriesEntry) -> Result<Vec<u8>> {
    let file = &entry.file;
    match entry.compression.decompressor() {
        None => std::fs::read(file).with_context(|| format!("reading {}", file.display())),
        Some(program) => {
            let out = cmd!(sh, "{program} -dc {file}")
                .quiet()
                .output()
                .with_context(|| {
                    format!(
                        "decompressing {} with {program} (install it, or store the patch uncompressed)",
                        file.display()
                    )
                })?;
            Ok(out.stdout)
        }
    }
}

/// Reads and parses one patch; errors name the file and line.
pub fn parse_entry(sh: &Shell, entry: &SeriesEntry) -> Result<Patch> {
    let bytes = read_patch(sh, entry)?;
    parse_patch(&bytes).map_err(|e| anyhow!("{}:{}: {e}", entry.file.display(), e.line))
}

/// A work tree for the series: a hard-linked copy of `pristine` at `dest`
/// (which must not exist) with the overlays copied in (unlinking, never
/// writing through, the pristine files they replace).
pub fn prepare_tree(sh: &Shell, pristine: &Path, dest: &Path, overlays: &[PathBuf]) -> Result<()> {
    copy_tree(sh, pristine, dest, CopyKind::HardLinks)?;
    series::copy_overlays(overlays, dest)
        .with_context(|| format!("copying OpenWrt's files/ overlays into {}", dest.display()))?;
    Ok(())
}

/// One patch's class on the workbench's source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classified {
    /// Quilt name (`generic-backport/…`, `generic/…`, `generic-hack/…`, `platform/…`).
    pub name: String,
    /// The patch file in the checkout.
    pub file: PathBuf,
    /// Its class.
    pub class: Class,
    /// GNU-style hunk messages (offsets, fuzz, failures).
    pub note: String,
}

/// Every patch of a series with its class, in order.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Classification {
    /// One per patch of the series.
    pub patches: Vec<Classified>,
}

impl Classification {
    /// Patches per class, every class present (zeros included).
    pub fn counts(&self) -> BTreeMap<Class, usize> {
        crate::patches::rebase::tally(self.patches.iter().map(|p| p.class))
    }

    /// `clean 300, offset 40, …` for messages.
    pub fn summary(&self) -> String {
        self.counts()
            .iter()
            .map(|(k, n)| format!("{} {n}", k.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether the patch named `name` is applied (clean, offset or fuzz).
    pub fn is_kept(&self, name: &str) -> bool {
        self.patches.iter().any(|p| {
            p.name == name && matches!(p.class, Class::Clean | Class::Offset | Class::Fuzz)
        })
    }

    /// The patches of class `class`.
    pub fn of_class(&self, class: Class) -> Vec<&Classified> {
        self.patches.iter().filter(|p| p.class == class).collect()
    }
}

/// Classifies every patch of `series` in order on `tree`, applying those
/// that apply (clean, offset, fuzz) so that later patches see them; drops
/// upstream ones, lists conflicts (see the module docs). `tree` is changed.
///
/// Errors: a patch that does not parse, engine refusals (unsafe names,
/// binary diffs), I/O; each names the patch.
pub fn classify_series(
    sh: &Shell,
    tree: &Path,
    series: &OpenwrtSeries,
    opts: &ApplyOptions,
) -> Result<Classification> {
    let mut out = Classification::default();
    for entry in &series.entries {
        let patch = parse_entry(sh, entry)?;
        let classified = rebase::classify(tree, &patch, opts)
            .with_context(|| format!("classifying {}", entry.file.display()))?;
        let class = classified.class;
        let note = match classified.upstream {
            Some(why) => why.note().to_string(),
            None => note(class, &classified.report),
        };
        if matches!(class, Class::Clean | Class::Offset | Class::Fuzz) {
            apply_patch(tree, &patch, opts)
                .map_err(|e| anyhow!(e))
                .with_context(|| format!("applying {}", entry.file.display()))?;
        }
        out.patches.push(Classified {
            name: entry.name.clone(),
            file: entry.file.clone(),
            class,
            note,
        });
    }
    Ok(out)
}

/// GNU patch's messages worth keeping, each with its file: offsets and
/// fuzz for patches that apply; failures, missing files and "Reversed (or
/// previously applied)" for conflicts.
pub fn note(class: Class, report: &ApplyReport) -> String {
    let text = report.render();
    let mut file = "";
    let mut parts = Vec::new();
    for line in text.lines() {
        if let Some(f) = line.strip_prefix("patching file ") {
            file = f;
            continue;
        }
        let keep = match class {
            Class::Conflict => !line.contains(" succeeded at "),
            _ => line.starts_with("Hunk"),
        };
        if keep {
            parts.push(format!("{file}: {line}"));
        }
    }
    parts.join("; ")
}

/// Applies the patches `classification` keeps (clean, offset, fuzz), in
/// series order, to `tree`; the first that fails stops with its name.
pub fn apply_kept(
    sh: &Shell,
    tree: &Path,
    series: &OpenwrtSeries,
    classification: &Classification,
    opts: &ApplyOptions,
) -> Result<usize> {
    let mut applied = 0;
    for entry in series
        .entries
        .iter()
        .filter(|e| classification.is_kept(&e.name))
    {
        let patch = parse_entry(sh, entry)?;
        apply_patch(tree, &patch, opts)
            .map_err(|e| anyhow!(e))
            .with_context(|| format!("applying {}", entry.file.display()))?;
        applied += 1;
    }
    Ok(applied)
}

/// The version of [`rebase::classify`]'s rules, part of a prepared tree's
/// key: a tree classified by older rules (which kept patches that apply
/// both ways, or whose added lines are there) is prepared again.
const CLASSIFIER: &str = "xtask-openwrt-classifier-2\0";

/// A kernel tree with OpenWrt's overlays and the patches that apply,
/// cached under `target/xtask/src/openwrt-<version>-<key>/linux/` with
/// `classification.json` next to it.
#[derive(Debug, Clone)]
pub struct PreparedTree {
    /// The patched tree.
    pub dir: PathBuf,
    /// sha256 (hex) of the classifier's version, the source identity, the
    /// overlay files and every patch of the series (names and bytes).
    pub key: String,
    /// Every patch's class.
    pub classification: Classification,
    /// The applied patches, in order, named `openwrt/<quilt name>`, with sha256.
    pub applied: Vec<PatchRecord>,
}

/// Returns the OpenWrt-patched tree of `series` on `pristine`, creating it
/// on first use: overlays copied, every patch classified, the applying
/// ones applied ([`classify_series`], GNU's fuzz 2). A user's tree
/// (`--kernel-src DIR`) is prepared again each time, as its edits are not
/// seen by the key.
pub fn prepare_cached(
    sh: &Shell,
    layout: &Layout,
    pristine: &PristineTree,
    series: &OpenwrtSeries,
) -> Result<PreparedTree> {
    let mut key = Sha256::new();
    key.update(CLASSIFIER.as_bytes());
    match &pristine.tarball_sha256 {
        Some(sum) => key.update(sum.as_bytes()),
        None => key.update(pristine.dir.to_string_lossy().as_bytes()),
    }
    for (rel, src) in series::overlay_files(&series.overlays)? {
        let bytes = match std::fs::read_link(&src) {
            Ok(target) => target.to_string_lossy().into_owned().into_bytes(),
            Err(_) => std::fs::read(&src).with_context(|| format!("reading {}", src.display()))?,
        };
        key.update(b"\0overlay\0");
        key.update(rel.to_string_lossy().as_bytes());
        key.update(sha256_bytes(&bytes).as_bytes());
    }
    let mut records = Vec::new();
    for entry in &series.entries {
        let bytes = read_patch(sh, entry)?;
        let record = PatchRecord {
            name: format!("openwrt/{}", entry.name),
            sha256: sha256_bytes(&bytes),
        };
        key.update(b"\0patch\0");
        key.update(record.name.as_bytes());
        key.update(record.sha256.as_bytes());
        records.push(record);
    }
    let key = hex::encode(key.finalize());
    let root = layout.patched_src_dir();
    let dir = root.join(format!("openwrt-{}-{}", pristine.version, &key[..16]));
    let json = dir.join("classification.json");
    let done = |classification: Classification| {
        let applied = records
            .iter()
            .zip(&series.entries)
            .filter(|(_, e)| classification.is_kept(&e.name))
            .map(|(r, _)| r.clone())
            .collect();
        PreparedTree {
            dir: dir.join("linux"),
            key: key.clone(),
            classification,
            applied,
        }
    };
    let cached = |json: &Path| -> Result<Option<Classification>> {
        if pristine.tarball_sha256.is_none() || !json.is_file() {
            return Ok(None);
        }
        let limit = crate::util::fs::FileLimit {
            what: "classification",
            max_bytes: crate::util::fs::MAX_RECORD_BYTES,
        };
        let text = crate::util::fs::read_limited(
            json,
            limit,
            &format!("remove {} and build again", dir.display()),
        )?;
        let classification: Classification = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: not a classification; remove {}",
                json.display(),
                dir.display()
            )
        })?;
        Ok(Some(classification))
    };
    if let Some(classification) = cached(&json)? {
        return Ok(done(classification));
    }
    std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
    // One run classifies a given series at a time (builds in two
    // workspaces share this directory); the second finds it done. Its
    // staging directory is owned (`StagingDir`), so another run's
    // `remove_stale_staging` leaves it alone.
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let _lock = Lock::acquire(
        &layout.patched_src_lock(&name),
        &format!("the classified tree {}", dir.display()),
        Wait::Yes,
    )?;
    if let Some(classification) = cached(&json)? {
        return Ok(done(classification));
    }
    remove_stale_staging(&root, ".staging-")?;
    let staging = StagingDir::new(&root, ".staging-")?;
    let tree = staging.path().join("linux");
    eprintln!(
        "OpenWrt {} (Linux {}): classifying {} patches on {} (once)",
        series.target,
        series.kernel,
        series.entries.len(),
        pristine.version
    );
    prepare_tree(sh, &pristine.dir, &tree, &series.overlays)?;
    let classification = classify_series(sh, &tree, series, &OPENWRT_APPLY)?;
    let text = serde_json::to_string_pretty(&classification).context("serialising the classes")?;
    write_atomic(&staging.path().join("classification.json"), text.as_bytes())?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing old {}", dir.display()))?;
    }
    let staged = staging.keep()?;
    std::fs::rename(&staged, &dir)
        .with_context(|| format!("moving {} to {}", staged.display(), dir.display()))?;
    Ok(done(classification))
}
