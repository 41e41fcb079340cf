//! Applying a parsed patch to a directory tree, all-or-nothing.
//!
//! Every file diff is first applied in memory, on a view of the tree that
//! sees the earlier file diffs of the same patch; only when all of them
//! succeed are files written (see [`super::fsops`] for how).

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::error::ApplyError;
use super::fsops::{self, Staging};
use super::model::{FileName, FileOp, FilePatch, Patch};
use super::report::{ApplyReport, FileProblem, FileReport};
use super::text::{apply_hunks, Reversal};

/// How to apply a patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApplyOptions {
    /// `-p` level: leading path components stripped from the names in the
    /// patch (1 for `a/`/`b/` prefixed names).
    pub strip: usize,
    /// Maximum fuzz: context lines that may be ignored at each end of a hunk
    /// (GNU's default is 2; the build uses 0 so that every hunk matches exactly,
    /// offsets aside).
    pub fuzz: usize,
}

impl Default for ApplyOptions {
    /// `-p1` and GNU patch's default fuzz of 2.
    fn default() -> Self {
        ApplyOptions { strip: 1, fuzz: 2 }
    }
}

/// A file's content and permission bits (`None`: the umask default for a
/// new file). A symbolic link to be created is its target and
/// `S_IFLNK | 0o777`.
type Content = (Vec<u8>, Option<u32>);

/// File type bits of an `st_mode`, and the two types git diffs carry.
const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;

/// The tree as the patch sees it: the disk plus the patch's changes so far.
struct View<'t> {
    tree: &'t Path,
    /// On-disk state of every path looked at: bytes and `mode & 0o777`.
    disk: BTreeMap<PathBuf, Option<(Vec<u8>, u32)>>,
    /// Paths the patch changed: new content, or `None` for deleted.
    changed: BTreeMap<PathBuf, Option<Content>>,
    /// The symbolic links the patch creates, with their file diff's
    /// header line, checked together once every diff is planned
    /// ([`View::link_problem`]).
    links: Vec<(PathBuf, usize)>,
}

impl<'t> View<'t> {
    fn new(tree: &'t Path) -> Self {
        View {
            tree,
            disk: BTreeMap::new(),
            changed: BTreeMap::new(),
            links: Vec::new(),
        }
    }

    /// The target of the link the tree has at `rel` once the patch is
    /// applied: one the patch creates, or one on disk it leaves alone;
    /// `None` for anything else.
    fn link_at(&self, rel: &Path) -> Option<Vec<u8>> {
        match self.changed.get(rel) {
            Some(Some((target, Some(mode)))) if mode & S_IFMT == S_IFLNK => Some(target.clone()),
            Some(_) => None,
            None => self.link_on_disk(rel),
        }
    }

    /// The target of the link on disk at `rel`, as the tree is before the
    /// patch; `None` for anything else.
    fn link_on_disk(&self, rel: &Path) -> Option<Vec<u8>> {
        let on_disk = self.tree.join(rel);
        let meta = std::fs::symlink_metadata(&on_disk).ok()?;
        meta.file_type()
            .is_symlink()
            .then(|| std::fs::read_link(&on_disk).ok())
            .flatten()
            .map(|t| t.as_os_str().as_encoded_bytes().to_vec())
    }

    /// The first link that leads out of the tree once the whole patch is
    /// applied ([`super::links`]), as the error that refuses the patch:
    /// one the patch creates, or one already on disk that stayed inside
    /// before and leads out through a link the patch creates (`x -> y/..`
    /// of an earlier patch, then `y -> .`). The tree is walked for the
    /// latter only when the patch creates a link.
    fn link_problem(&self) -> Option<ApplyError> {
        let (first, first_line) = self.links.first()?;
        let refuse = |link: &Path, line: usize, why: String, whose: &str| {
            let target = self.link_at(link).unwrap_or_default();
            ApplyError::SpecialFile {
                path: link.to_path_buf(),
                patch_line: line,
                why: format!(
                    "symbolic link to {:?}: {why}, {whose}",
                    String::from_utf8_lossy(&target)
                ),
            }
        };
        if let Some(e) = self.links.iter().find_map(|(link, line)| {
            let why = super::links::leads_out(link, &mut |p| self.link_at(p))?;
            Some(refuse(
                link,
                *line,
                why,
                "once the patch's other links are made",
            ))
        }) {
            return Some(e);
        }
        walkdir::WalkDir::new(self.tree)
            .min_depth(1)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.path_is_symlink())
            .filter_map(|e| e.path().strip_prefix(self.tree).ok().map(Path::to_path_buf))
            .filter(|rel| !self.changed.contains_key(rel))
            .find_map(|rel| {
                let after = super::links::leads_out(&rel, &mut |p| self.link_at(p))?;
                if super::links::leads_out(&rel, &mut |p| self.link_on_disk(p)).is_some() {
                    return None;
                }
                Some(refuse(
                    first,
                    *first_line,
                    format!(
                        "the link {} already in the tree then {after}",
                        rel.display()
                    ),
                    "so this patch's links are refused",
                ))
            })
    }

    fn load(&mut self, rel: &Path) -> Result<(), ApplyError> {
        if !self.disk.contains_key(rel) {
            let f = fsops::read_file(self.tree, rel)?;
            self.disk.insert(rel.to_path_buf(), f);
        }
        Ok(())
    }

    fn get(&mut self, rel: &Path) -> Result<Option<Content>, ApplyError> {
        self.load(rel)?;
        if let Some(c) = self.changed.get(rel) {
            return Ok(c.clone());
        }
        Ok(self.disk[rel].clone().map(|(d, m)| (d, Some(m))))
    }

    fn set(&mut self, rel: &Path, c: Option<Content>) -> Result<(), ApplyError> {
        self.load(rel)?;
        self.changed.insert(rel.to_path_buf(), c);
        Ok(())
    }

    /// Writes the changes: new contents first (temporary file + rename),
    /// then deletions.
    fn commit(self) -> Result<(), ApplyError> {
        let mut staging = Staging::default();
        for (rel, c) in &self.changed {
            let Some((data, mode)) = c else { continue };
            let old = &self.disk[rel];
            let same = old
                .as_ref()
                .is_some_and(|(d, m)| d == data && mode.is_none_or(|x| x == *m));
            if same {
                continue;
            }
            let mode = mode.or(old.as_ref().map(|(_, m)| *m));
            if let Err(e) = staging.stage(self.tree, rel, data, mode) {
                staging.abort();
                return Err(e);
            }
        }
        staging.commit()?;
        for (rel, c) in &self.changed {
            if c.is_none() && self.disk[rel].is_some() {
                fsops::delete(self.tree, rel)?;
            }
        }
        Ok(())
    }
}

/// `name` without its first `strip` components, as GNU patch's `-p` strips:
/// each run of slashes is one separator.
pub(crate) fn strip_name(name: &Path, strip: usize) -> Option<PathBuf> {
    let b = name.as_os_str().as_bytes();
    if strip == 0 {
        return Some(name.to_path_buf());
    }
    let mut seen = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' {
            while i + 1 < b.len() && b[i + 1] == b'/' {
                i += 1;
            }
            seen += 1;
            if seen == strip {
                return Some(PathBuf::from(std::ffi::OsStr::from_bytes(&b[i + 1..])));
            }
        }
        i += 1;
    }
    None
}

/// Strips and checks one header name; `Ok(None)` for `/dev/null`.
fn target_name(
    name: &Option<FileName>,
    fp: &FilePatch,
    strip: usize,
) -> Result<Option<PathBuf>, ApplyError> {
    let Some(n) = name else { return Ok(None) };
    let rel = strip_name(&n.path, strip).ok_or_else(|| ApplyError::Strip {
        name: n.path.clone(),
        strip,
        patch_line: fp.line,
    })?;
    if let Some(why) = fsops::unsafe_reason(&rel) {
        return Err(ApplyError::UnsafePath {
            path: rel,
            patch_line: fp.line,
            why,
        });
    }
    // Normalise away "./" components so the view sees one name per file.
    Ok(Some(rel.components().collect()))
}

/// GNU's `best_name`: fewest components, then shortest base name, then shortest.
fn best_name(names: &[PathBuf]) -> Option<PathBuf> {
    names
        .iter()
        .min_by_key(|p| {
            let base = p.file_name().map_or(0, |b| b.len());
            (p.components().count(), base, p.as_os_str().len())
        })
        .cloned()
}

/// What [`plan`] worked out: the report, the tree with the changes, and
/// for [`Reversal::Probe`] whether the first file diff's first hunk
/// matches backwards (`None` when that is not a necessary condition for
/// the whole patch applying in reverse: the first file diff is not a plain
/// modification with hunks).
struct Plan<'t> {
    report: ApplyReport,
    view: View<'t>,
    first_hunk_reverses: Option<bool>,
}

/// Applies `patch` in memory. Hard errors (unsafe names, symlinks, binary
/// diffs, I/O) end it at once; content mismatches are recorded in the report.
///
/// `reversal`: whether each file's first hunk is tried backwards too (GNU's
/// "Reversed (or previously applied) patch detected!" check, which `-f`
/// turns off).
fn plan<'t>(
    tree: &'t Path,
    patch: &Patch,
    opts: &ApplyOptions,
    reversal: Reversal,
) -> Result<Plan<'t>, ApplyError> {
    let mut view = View::new(tree);
    let mut report = ApplyReport::default();
    let mut first_hunk_reverses = None;
    for (index, fp) in patch.files.iter().enumerate() {
        let old = target_name(&fp.old, fp, opts.strip)?;
        let new = target_name(&fp.new, fp, opts.strip)?;
        let any = new
            .clone()
            .or_else(|| old.clone())
            .ok_or(ApplyError::UnsafePath {
                path: PathBuf::new(),
                patch_line: fp.line,
                why: "both names are /dev/null",
            })?;
        if fp.binary {
            return Err(ApplyError::Binary {
                path: any,
                patch_line: fp.line,
            });
        }
        let (file, reverses) = apply_file(&mut view, index, fp, (old, new, any), opts, reversal)?;
        if index == 0 && file.op == FileOp::Modify && !fp.hunks.is_empty() {
            first_hunk_reverses = Some(reverses);
        }
        report.files.push(file);
    }
    if let Some(refusal) = view.link_problem() {
        return Err(refusal);
    }
    Ok(Plan {
        report,
        view,
        first_hunk_reverses,
    })
}

fn apply_file(
    view: &mut View<'_>,
    index: usize,
    fp: &FilePatch,
    (old, new, any): (Option<PathBuf>, Option<PathBuf>, PathBuf),
    opts: &ApplyOptions,
    reversal: Reversal,
) -> Result<(FileReport, bool), ApplyError> {
    let mut op = fp.op;
    if matches!(op, FileOp::Rename | FileOp::Copy | FileOp::Uncopy)
        && (old.is_none() || new.is_none())
    {
        op = FileOp::Modify;
    }
    // (source to read, path to write)
    let (source, target) = match op {
        FileOp::Create => (None, new.clone().unwrap_or(any.clone())),
        FileOp::Delete => (old.clone(), old.clone().unwrap_or(any.clone())),
        FileOp::Rename | FileOp::Copy | FileOp::Uncopy => {
            (old.clone(), new.clone().unwrap_or(any.clone()))
        }
        FileOp::Modify => {
            let mut cands: Vec<PathBuf> = old.iter().chain(new.iter()).cloned().collect();
            cands.dedup();
            let mut existing = Vec::new();
            for c in &cands {
                if view.get(c)?.is_some() {
                    existing.push(c.clone());
                }
            }
            let pick = best_name(if existing.is_empty() {
                &cands
            } else {
                &existing
            })
            .unwrap_or(any.clone());
            (Some(pick.clone()), pick)
        }
    };
    let mut report = FileReport {
        index,
        path: if op == FileOp::Uncopy {
            source.clone().unwrap_or(any.clone())
        } else {
            target.clone()
        },
        source: match op {
            FileOp::Rename | FileOp::Copy => source.clone(),
            _ => None,
        },
        op,
        hunks: Vec::new(),
        problem: None,
        hunk_count: fp.hunks.len(),
        line: fp.hunks.first().map_or(fp.line, |h| h.line),
        symlink: false,
    };
    // git modes: regular files (100644, 100755), symbolic links (120000,
    // only created here); anything else (gitlinks) is refused.
    let file_type = |m: Option<u32>| m.map(|m| m & S_IFMT).filter(|&t| t != 0);
    let refuse = |why: String| ApplyError::SpecialFile {
        path: target.clone(),
        patch_line: fp.line,
        why,
    };
    match file_type(fp.new_mode) {
        None | Some(S_IFREG) => {}
        Some(S_IFLNK) if op == FileOp::Create => report.symlink = true,
        Some(S_IFLNK) => {
            return Err(refuse(
                "turns a file into a symbolic link; only creating links is supported".into(),
            ))
        }
        Some(_) => {
            return Err(refuse(format!(
                "mode {:o} is neither a regular file nor a symbolic link",
                fp.new_mode.unwrap_or(0)
            )))
        }
    }
    let input = match &source {
        Some(s) => view.get(s)?,
        None => view.get(&target)?,
    };
    let can_create = fp.hunks.iter().all(|h| h.old_count == 0);
    let (input, mode) = match input {
        Some((data, mode)) => (data, mode),
        None if op == FileOp::Create || (op == FileOp::Modify && can_create) => (Vec::new(), None),
        // `patch -f` on a deletion of a missing file: "Applying it anyway"
        // to an empty file, where its hunks fail.
        None if op == FileOp::Delete && reversal != Reversal::Detect => (Vec::new(), None),
        None => {
            report.problem = Some(FileProblem::Missing);
            return Ok((report, false));
        }
    };
    let res = apply_hunks(&input, &fp.hunks, opts.fuzz, op == FileOp::Create, reversal);
    let reverses = res.first_hunk_reverses;
    if res.looks_reversed {
        report.problem = Some(FileProblem::LooksReversed);
        return Ok((report, reverses));
    }
    report.hunks = res.hunks.clone();
    if !res.all_applied() {
        return Ok((report, reverses));
    }
    let mode = if report.symlink {
        // git writes the link's target as its only line, without newline.
        if let Some(why) = fsops::symlink_target_problem(view.tree, &target, &res.output) {
            return Err(refuse(format!(
                "symbolic link to {:?}: {why}",
                String::from_utf8_lossy(&res.output)
            )));
        }
        view.links.push((target.clone(), fp.line));
        Some(S_IFLNK | 0o777)
    } else {
        fp.new_mode.map(|m| m & 0o777).or(mode)
    };
    match op {
        FileOp::Delete => {
            if res.output.is_empty() {
                view.set(&target, None)?;
            } else {
                report.problem = Some(FileProblem::NotDeleted);
            }
        }
        FileOp::Uncopy => {
            let copy = report.path.clone();
            let original = view.get(&target)?;
            if original.is_some_and(|(d, _)| d == res.output) {
                view.set(&copy, None)?;
            } else {
                report.problem = Some(FileProblem::CopyDiffers);
            }
        }
        FileOp::Rename => {
            view.set(&target, Some((res.output, mode)))?;
            if let Some(s) = source.filter(|s| *s != target) {
                view.set(&s, None)?;
            }
        }
        FileOp::Create | FileOp::Modify | FileOp::Copy => {
            view.set(&target, Some((res.output, mode)))?;
        }
    }
    Ok((report, reverses))
}

/// Applies `patch` (or its reverse, `-R`).
///
/// Without `force`, as GNU patch without `-f`: a file whose first hunk
/// matches backwards first is skipped, and a failed patch that applies
/// entirely the other way round is [`ApplyError::Reversed`]. With `force`
/// (`-f`), hunks are only tried in the requested direction; a success that
/// would also apply the other way round exactly (fuzz 0) to the tree as it
/// was is flagged in [`ApplyReport::applies_in_reverse`].
pub(crate) fn run(
    tree: &Path,
    patch: &Patch,
    opts: &ApplyOptions,
    reverse: bool,
    write: bool,
    force: bool,
) -> Result<ApplyReport, ApplyError> {
    let reversed;
    let patch = if reverse {
        reversed = patch.reversed();
        &reversed
    } else {
        patch
    };
    let reversal = if force {
        Reversal::Probe
    } else {
        Reversal::Detect
    };
    let Plan {
        mut report,
        view,
        first_hunk_reverses,
    } = plan(tree, patch, opts, reversal)?;
    report.parse_warnings = patch.warnings.clone();
    if !report.succeeded() {
        if !force {
            let other = patch.reversed();
            if let Ok(back) = plan(tree, &other, opts, Reversal::Ignore) {
                if back.report.succeeded() && !other.files.is_empty() {
                    return Err(ApplyError::Reversed { report, reverse });
                }
            }
        }
        return Err(ApplyError::Failed(report));
    }
    if force && first_hunk_reverses != Some(false) && !patch.files.is_empty() {
        // The cheap necessary condition holds (or does not apply): check
        // the whole patch backwards, exactly, before anything is written.
        let exact = ApplyOptions { fuzz: 0, ..*opts };
        report.applies_in_reverse = applies(tree, patch, &exact, true)?;
    }
    if write {
        view.commit()?;
    }
    Ok(report)
}

/// Whether `patch` would apply cleanly in the given direction (no writes).
/// Hard errors (unsafe names, symlinks, binary diffs, I/O) are still errors.
pub(crate) fn applies(
    tree: &Path,
    patch: &Patch,
    opts: &ApplyOptions,
    reverse: bool,
) -> Result<bool, ApplyError> {
    let p = if reverse {
        patch.reversed()
    } else {
        patch.clone()
    };
    Ok(plan(tree, &p, opts, Reversal::Ignore)?.report.succeeded())
}
