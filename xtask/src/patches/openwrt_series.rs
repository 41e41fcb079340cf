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
use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use xshell::Shell;

use crate::inputs::kernel_source::PristineTree;
use crate::inputs::openwrt::series::{self, SeriesEntry};
use crate::inputs::openwrt::{Checkout, OpenwrtTarget};
use crate::patches::engine::{apply_patch, parse_patch, ApplyOptions, ApplyReport, Patch};
use crate::patches::rebase::{self, Class};
use crate::results::PatchRecord;
use crate::util::fs::{
    copy_tree, open_limited, read_bytes_limited, remove_stale_staging, write_atomic, CopyKind,
    FileLimit, StagingDir,
};
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

/// The largest patch (or overlay file) read from an OpenWrt checkout,
/// decompressed: OpenWrt's largest patches are a few hundred KiB.
pub const MAX_PATCH_BYTES: u64 = 64 << 20;

/// What a patch or overlay file of a checkout is, for the capped reader.
const PATCH_LIMIT: FileLimit = FileLimit {
    what: "patch or overlay file of an OpenWrt checkout",
    max_bytes: MAX_PATCH_BYTES,
};

/// The fix a refused patch or overlay file's message names.
const PATCH_FIX: &str = "remove or restore it in the OpenWrt checkout";

/// The text of one patch, decompressed as scripts/patch-kernel.sh does
/// (`gzip -dc`, `bzip2 -dc`, `xz -dc`, `zstd -dc`), through the capped
/// reader: the file must be a regular one, and neither it nor what it
/// decompresses to may be over [`MAX_PATCH_BYTES`] (a FIFO hung the read,
/// a 9 MB gzip of zeros filled memory).
pub fn read_patch(entry: &SeriesEntry) -> Result<Vec<u8>> {
    let file = &entry.file;
    let Some(program) = entry.compression.decompressor() else {
        return read_bytes_limited(file, PATCH_LIMIT, PATCH_FIX);
    };
    let input = open_limited(file, PATCH_LIMIT, PATCH_FIX)?;
    let how = || {
        format!(
            "decompressing {} with {program} (install it, or store the patch uncompressed)",
            file.display()
        )
    };
    let mut child = std::process::Command::new(program)
        .arg("-dc")
        .stdin(input)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .with_context(how)?;
    let mut out = Vec::new();
    let read = child
        .stdout
        .take()
        .context("the decompressor's output")?
        .take(MAX_PATCH_BYTES + 1)
        .read_to_end(&mut out);
    if out.len() as u64 > MAX_PATCH_BYTES {
        let _ = child.kill();
        let _ = child.wait();
        bail!(
            "{}: decompresses to more than {} MiB, more than a patch of OpenWrt's; {PATCH_FIX}",
            file.display(),
            MAX_PATCH_BYTES >> 20
        );
    }
    read.with_context(how)?;
    let status = child.wait().with_context(how)?;
    anyhow::ensure!(
        status.success(),
        "{}: {program} exited with {status}",
        how()
    );
    Ok(out)
}

/// Reads and parses one patch; errors name the file and line.
pub fn parse_entry(entry: &SeriesEntry) -> Result<Patch> {
    let bytes = read_patch(entry)?;
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
    tree: &Path,
    series: &OpenwrtSeries,
    opts: &ApplyOptions,
) -> Result<Classification> {
    let mut out = Classification::default();
    for entry in &series.entries {
        let patch = parse_entry(entry)?;
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
        let patch = parse_entry(entry)?;
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
            Err(_) => read_bytes_limited(&src, PATCH_LIMIT, PATCH_FIX)?,
        };
        key.update(b"\0overlay\0");
        key.update(rel.to_string_lossy().as_bytes());
        key.update(sha256_bytes(&bytes).as_bytes());
    }
    let mut records = Vec::new();
    for entry in &series.entries {
        let bytes = read_patch(entry)?;
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
    let classification = classify_series(&tree, series, &OPENWRT_APPLY)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::openwrt::series::{Compression, Group};

    /// The second hostile trial: a FIFO as a patch hung the read, and a
    /// 9 MB gzip of 2 GB of zeros filled memory. Both are refused.
    #[test]
    fn a_patch_is_read_capped_and_decompressed_capped() {
        let dir = tempfile::tempdir().unwrap();
        let entry = |file: PathBuf, compression| SeriesEntry {
            group: Group::Platform,
            name: "platform/999-x.patch".into(),
            file,
            compression,
        };
        let fifo = dir.path().join("999-x.patch");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let err = format!(
            "{:#}",
            read_patch(&entry(fifo, Compression::Plain)).unwrap_err()
        );
        assert!(err.contains("not a regular file"), "{err}");
        let zeros = dir.path().join("zeros");
        std::fs::File::create(&zeros)
            .unwrap()
            .set_len(MAX_PATCH_BYTES + 4096)
            .unwrap();
        let gz = dir.path().join("999-x.patch.gz");
        let out = std::process::Command::new("gzip")
            .arg("-c")
            .stdin(std::fs::File::open(&zeros).unwrap())
            .output()
            .unwrap();
        std::fs::write(&gz, out.stdout).unwrap();
        let err = format!(
            "{:#}",
            read_patch(&entry(gz, Compression::Gzip)).unwrap_err()
        );
        assert!(err.contains("decompresses to more than 64 MiB"), "{err}");
        let plain = dir.path().join("1.patch");
        std::fs::write(&plain, "--- a/x\n+++ b/x\n").unwrap();
        let made = std::process::Command::new("gzip")
            .arg(&plain)
            .status()
            .unwrap();
        assert!(made.success());
        let small = dir.path().join("1.patch.gz");
        assert_eq!(
            read_patch(&entry(small, Compression::Gzip)).unwrap(),
            b"--- a/x\n+++ b/x\n"
        );
    }
}
