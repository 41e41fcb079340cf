//! Results as files for CI fan-out: one CI job per (target, variant)
//! builds and [`export`]s its results directory as a tar
//! (`<target>/<variant>/result.json`, the artifacts, `build.log`); a final
//! job [`merge`]s every tar into `target/xtask/results/` and runs
//! `size-report`.
//!
//! A merge reads each archive with the `tar` crate ([`members`]) and
//! checks everything before writing anything, and refuses:
//!
//! * an archive with a member outside `<target>/<variant>/<file>` (an
//!   absolute path, `..`, a link, a device, a sparse file, a deeper or
//!   shallower path): its results directory would escape or be ill-formed;
//! * a member no build writes ([`members::expected`]: `result.json`,
//!   `build.log`, the artifacts `result.json` lists, of their recorded
//!   size and sha256, and a few files made on the side), or one over its
//!   size cap, and a listed artifact that is missing;
//! * a `result.json` that cannot be read (over 16 MiB, not JSON, another
//!   schema), or that names another target or variant than its directory;
//! * results of one target whose inputs differ from the others' (among the
//!   archives and the results already there, each of which must be
//!   readable): the target record (every field of the target file,
//!   fragments by sha256), the kernel source (version and tarball sha256,
//!   or the tree's path), the compiler. These are the input rules of the
//!   size report's comparability checks (`report/checks.rs`); `.config`
//!   and patches may differ between variants on purpose, and the report
//!   judges them.
//!
//! Each result is staged next to its destination (so on its file system)
//! and swapped with the old one in one rename ([`place`]): a merge never
//! removes a result before the new one is in place. A killed merge's
//! staging directories are removed by the next merge or build.
//! A result with the build key of another (already there or merged with
//! it) but other artifact bytes gets a note: the build is not reproducible.

pub mod members;
pub mod place;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use xshell::{cmd, Shell};

use super::BuildResult;
use crate::util::fs::{is_not_found, remove_empty_parents};
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};
use crate::util::process::run_tied;
use members::ArchivedResult;
use place::StagedResult;

/// Writes the results of each (target, variant) as one tar `output`
/// (members `<target>/<variant>/<file>`, sorted, owner 0, mtime 0, so
/// equal results give equal bytes). It packs only what [`merge`] accepts:
/// the files a build writes ([`members::expected`]), with its JSON records
/// checked as the merge checks them ([`members::check_records`]); any
/// other file in the directory is left out and named on stderr.
///
/// Errors: a `--target` or `--variant` that is not a plain name (it would
/// name a directory outside `target/xtask/results/`), a results directory
/// that is a link, a pair without a complete result of that name (naming
/// the build command), a record a merge would refuse, a file the merge
/// needs (`result.json`, an artifact it lists) that is no regular file or
/// not of its recorded size. Hard links are packed as files.
pub fn export(
    sh: &Shell,
    layout: &Layout,
    targets: &[String],
    variants: &[String],
    output: &Path,
) -> Result<()> {
    let root = layout.results_root();
    let mut pairs = Vec::new();
    let mut members = Vec::new();
    for t in targets {
        one_name("--target", t, &root)?;
        for v in variants {
            one_name("--variant", v, &root.join(t))?;
            let dir = layout.results_dir(t, v);
            let build = format!("`cargo xtask build --target {t} --variant {v}`");
            if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
                bail!(
                    "nothing exported: {} is a symbolic link; export packs results directories \
                     a build wrote, not what a link leads to",
                    dir.display()
                );
            }
            let result = BuildResult::read(&dir).with_context(|| {
                format!("nothing exported: {t}/{v} has no complete result ({build})")
            })?;
            if (result.target.name.as_str(), result.variant.name.as_str()) != (t, v) {
                bail!(
                    "nothing exported: {} records {}/{}, not {t}/{v}; build it again ({build})",
                    dir.join(super::FILE_NAME).display(),
                    result.target.name,
                    result.variant.name
                );
            }
            members::check_records(&dir, &result, &format!("build it again ({build} --force)"))
                .context("nothing exported")?;
            for name in read_dir_names(&dir)? {
                let file = dir.join(&name);
                let shown = crate::util::text::printable(&file.display().to_string()).into_owned();
                let size = std::fs::symlink_metadata(&file)
                    .with_context(|| format!("reading {}", file.display()))
                    .map(|m| m.is_file().then_some(m.len()))?;
                let needed = name == super::FILE_NAME || result.artifacts.contains_key(&name);
                match size.map(|size| members::expected(&result, &name, size)) {
                    Some(Ok(())) => members.push(format!("{t}/{v}/{name}")),
                    None if needed => bail!(
                        "nothing exported: {shown} is not a regular file (a link?), and a merge \
                         takes only regular files; build it again ({build} --force)"
                    ),
                    Some(Err(why)) if needed => {
                        bail!("nothing exported: {shown}: {why}; build it again ({build} --force)")
                    }
                    Some(Err(why)) => {
                        eprintln!("note: not exported: {shown}: {why} (a merge would refuse it)")
                    }
                    None => eprintln!("note: not exported: {shown}: not a regular file"),
                }
            }
            pairs.push(format!("{t}/{v}"));
        }
    }
    members.sort();
    let listed = pairs.join(", ");
    run_tied(cmd!(
        sh,
        "tar --create --file {output} --directory {root} --owner=0 --group=0 --numeric-owner --mtime=@0 --no-recursion --hard-dereference -- {members...}"
    )
    .quiet())
    .with_context(|| format!("writing {}; is the directory writable?", output.display()))?;
    println!("exported {listed} to {}", output.display());
    Ok(())
}

/// Errors unless `value` (of `flag`) is one name in `dir`, as a merge
/// takes a member's parts ([`members::plain_part`]). Anything else names
/// another directory than `dir`'s, or one a merge refuses.
fn one_name(flag: &str, value: &str, dir: &Path) -> Result<()> {
    if !members::plain_part(value) {
        bail!(
            "nothing exported: {flag} {:?} is not a name in {}: pass a directory name there \
             (`ls {}`)",
            crate::util::text::printable(value),
            dir.display(),
            dir.display()
        );
    }
    Ok(())
}

/// The names in `dir` but hidden ones (a build's staging files), sorted.
fn read_dir_names(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// One result found in an archive.
struct Incoming {
    archive: PathBuf,
    found: ArchivedResult,
}

impl Incoming {
    fn result(&self) -> &BuildResult {
        &self.found.result
    }

    fn label(&self) -> String {
        format!(
            "{}/{} from {}",
            self.found.target,
            self.found.variant,
            self.archive.display()
        )
    }
}

/// What a merge did: the (target, variant) pairs merged, and notes (a
/// result whose build key another has, with other bytes).
#[derive(Debug, Default)]
pub struct Merged {
    /// `(target, variant)`, in merge order.
    pub merged: Vec<(String, String)>,
    /// Notes printed to stderr, each one line.
    pub notes: Vec<String>,
}

/// Merges every archive into `target/xtask/results/` (see the module
/// docs for what is refused; then nothing is written). Each (target,
/// variant) replaces the results there, under its results lock, all of
/// which are held from the checks to the end.
///
/// Errors: a refusal (naming the archive, the member and why), I/O.
pub fn merge(layout: &Layout, archives: &[PathBuf]) -> Result<Merged> {
    place::remove_stale(layout)?;
    let mut opened = Vec::new();
    let mut incoming: Vec<Incoming> = Vec::new();
    for archive in archives {
        let refuse = |e: anyhow::Error| {
            anyhow::anyhow!(
                "nothing merged: {}: {e:#}; make it with `cargo xtask results export`",
                archive.display()
            )
        };
        let mut file = members::open(archive).map_err(refuse)?;
        for found in members::scan(&mut file).map_err(refuse)? {
            let key = (&found.target, &found.variant);
            if let Some(other) = incoming
                .iter()
                .find(|i| (&i.found.target, &i.found.variant) == key)
            {
                bail!(
                    "nothing merged: {}/{} is in both {} and {}; merge one of them",
                    key.0,
                    key.1,
                    other.archive.display(),
                    archive.display()
                );
            }
            incoming.push(Incoming {
                archive: archive.clone(),
                found,
            });
        }
        opened.push(file);
    }
    let mut pairs: Vec<(&str, &str)> = incoming
        .iter()
        .map(|i| (i.found.target.as_str(), i.found.variant.as_str()))
        .collect();
    pairs.sort();
    let mut _locks = Vec::new();
    for (t, v) in pairs {
        _locks.push(Lock::acquire(
            &layout.results_lock(t, v),
            &format!(
                "the results directory {}",
                layout.results_dir(t, v).display()
            ),
            Wait::Yes,
        )?);
    }
    // A results directory is made where it is, never through a link
    // (a linked results/<target> led a merge into /tmp).
    for i in &incoming {
        let target_dir = layout.results_root().join(&i.found.target);
        if std::fs::symlink_metadata(&target_dir).is_ok_and(|m| m.file_type().is_symlink()) {
            bail!(
                "nothing merged: {} is a symbolic link; a merge writes results only into the \
                 directories it makes; remove the link",
                target_dir.display()
            );
        }
    }
    let existing = check_inputs(layout, &incoming)?;
    let notes = reproducibility_notes(&incoming, &existing);
    let mut staged = Vec::new();
    for i in &incoming {
        let dest = layout.results_dir(&i.found.target, &i.found.variant);
        let file = &mut opened[archives.iter().position(|a| *a == i.archive).unwrap_or(0)];
        let stage = StagedResult::new(&dest)
            .and_then(|s| members::extract(file, &i.found, &s.dir()).map(|()| s));
        match stage {
            Ok(s) => staged.push(s),
            Err(e) => {
                drop(staged);
                for i in &incoming {
                    let dest = layout.results_dir(&i.found.target, &i.found.variant);
                    remove_empty_parents(&layout.results_root(), dest.parent());
                }
                bail!(
                    "nothing merged: {}: {e:#}; make it with `cargo xtask results export`",
                    i.archive.display()
                );
            }
        }
    }
    let mut merged = Merged {
        notes,
        ..Merged::default()
    };
    for (i, s) in incoming.iter().zip(staged) {
        let (t, v) = (&i.found.target, &i.found.variant);
        s.put_in_place().with_context(|| {
            let done: Vec<String> = merged
                .merged
                .iter()
                .map(|(t, v)| format!("{t}/{v}"))
                .collect();
            format!(
                "merging {t}/{v} (merged before it: {}; the rest were not)",
                if done.is_empty() {
                    "none".to_string()
                } else {
                    done.join(", ")
                }
            )
        })?;
        println!("merged {t}/{v} from {}", i.archive.display());
        merged.merged.push((t.clone(), v.clone()));
    }
    for note in &merged.notes {
        eprintln!("note: {note}");
    }
    Ok(merged)
}

/// A note for each incoming result that has the build key of another
/// result (incoming, or already there: the one it replaces included) but
/// other artifact bytes.
fn reproducibility_notes(incoming: &[Incoming], existing: &[(String, BuildResult)]) -> Vec<String> {
    let mut notes = Vec::new();
    for (n, i) in incoming.iter().enumerate() {
        let others = incoming[..n]
            .iter()
            .map(|o| (o.label(), o.result()))
            .chain(existing.iter().map(|(l, r)| (l.clone(), r)));
        for (label, other) in others {
            if let Some(note) = super::differing_bytes(other, i.result()) {
                notes.push(format!("{} and {label}: {note}", i.label()));
            }
        }
    }
    notes
}

/// The subdirectories of `dir`, hidden ones (staging) left out, sorted.
fn read_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("reading {}", dir.display()))?
            .path();
        let hidden = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if path.is_dir() && !hidden {
            dirs.push(path);
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// The inputs every result of one target must share, as text per field.
fn inputs_of(r: &BuildResult) -> Vec<(&'static str, String)> {
    let source = &r.kernel_source;
    vec![
        (
            "target record",
            serde_json::to_string(&r.target).unwrap_or_default(),
        ),
        (
            "kernel source",
            format!(
                "{} {}",
                source.version,
                source.sha256.as_deref().unwrap_or(&source.origin)
            ),
        ),
        ("compiler", r.compiler.clone()),
    ]
}

/// Refuses results of one target with different inputs (see the module
/// docs), comparing the incoming ones with each other and with the results
/// already in `target/xtask/results/` that they do not replace; one of
/// those that cannot be read is a refusal too (a directory without
/// `result.json` is an unfinished build, not a result). Returns the
/// results already there (those replaced too, when readable) with labels.
fn check_inputs(layout: &Layout, incoming: &[Incoming]) -> Result<Vec<(String, BuildResult)>> {
    let mut by_target: BTreeMap<&str, Vec<(String, &BuildResult)>> = BTreeMap::new();
    for i in incoming {
        by_target
            .entry(&i.found.target)
            .or_default()
            .push((i.label(), i.result()));
    }
    let mut existing = Vec::new();
    let mut kept = Vec::new();
    for target in by_target.keys() {
        let dir = layout.results_root().join(target);
        for variant_dir in read_dirs(&dir).unwrap_or_default() {
            let variant = variant_dir
                .file_name()
                .map(|n| n.to_string_lossy().to_string());
            let replaced = incoming
                .iter()
                .any(|i| i.found.target == *target && Some(&i.found.variant) == variant.as_ref());
            let label = format!(
                "{} ({})",
                variant_dir.display(),
                if replaced {
                    "replaced"
                } else {
                    "already merged"
                }
            );
            match BuildResult::read(&variant_dir) {
                Ok(r) => {
                    if !replaced {
                        kept.push(existing.len());
                    }
                    existing.push((label, r));
                }
                Err(e) if replaced || is_not_found(&e) => {}
                Err(e) => bail!(
                    "nothing merged: the result already in {} cannot be read, so the \
                     inputs of the merged results cannot be checked against it: {e:#}",
                    variant_dir.display()
                ),
            }
        }
    }
    for &n in &kept {
        let (label, r) = &existing[n];
        if let Some(list) = by_target.get_mut(r.target.name.as_str()) {
            list.push((label.clone(), r));
        }
    }
    let mut problems = Vec::new();
    for list in by_target.values() {
        let (first_label, first) = &list[0];
        let want = inputs_of(first);
        for (label, r) in &list[1..] {
            for ((what, a), (_, b)) in want.iter().zip(inputs_of(r)) {
                if *a != b {
                    problems.push(format!("{what}: {first_label} has {a}, {label} has {b}"));
                }
            }
        }
    }
    if !problems.is_empty() {
        bail!(
            "nothing merged: results of one target were built from different inputs \
             (build every variant on the same image, or remove the stale results):\n- {}",
            problems.join("\n- ")
        );
    }
    Ok(existing)
}
