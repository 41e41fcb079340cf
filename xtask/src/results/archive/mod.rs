//! Results as files for CI fan-out: one CI job per (target, variant)
//! builds and [`export`]s its results directory as a tar
//! (`<target>/<variant>/result.json`, the artifacts, `build.log`); a final
//! job [`merge`]s every tar into `target/xtask/results/` and runs
//! `size-report`.
//!
//! A merge checks everything before writing anything, and refuses:
//!
//! * an archive with a member outside `<target>/<variant>/<file>` (an
//!   absolute path, `..`, a link, a deeper or shallower path): its results
//!   directory would escape or be ill-formed;
//! * a `result.json` that cannot be read (not JSON, another schema), or that
//!   names another target or variant than its directory;
//! * results of one target whose inputs differ from the others' (among the
//!   archives and the results already there): the target record (every
//!   field of the target file, fragments by sha256), the kernel source
//!   (version and tarball sha256, or the tree's path), the compiler. These
//!   are the input rules of the size report's comparability checks
//!   (`report/checks.rs`); `.config` and patches may differ between
//!   variants on purpose, and the report judges them.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};
use xshell::{cmd, Shell};

use super::{BuildResult, FILE_NAME};
use crate::util::fs::StagingDir;
use crate::util::layout::Layout;
use crate::util::lock::{Lock, Wait};

/// Writes the results of each (target, variant) as one tar `output`
/// (members `<target>/<variant>/…`, sorted, owner 0, mtime 0, so equal
/// results give equal bytes).
///
/// Errors: a pair without a complete result (naming the build command).
pub fn export(
    sh: &Shell,
    layout: &Layout,
    targets: &[String],
    variants: &[String],
    output: &Path,
) -> Result<()> {
    let root = layout.results_root();
    let mut members = Vec::new();
    for t in targets {
        for v in variants {
            let dir = layout.results_dir(t, v);
            BuildResult::read(&dir).with_context(|| {
                format!("nothing exported: {t}/{v} has no complete result (`cargo xtask build --target {t} --variant {v}`)")
            })?;
            members.push(format!("{t}/{v}"));
        }
    }
    let listed = members.join(", ");
    cmd!(
        sh,
        "tar --create --file {output} --directory {root} --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --exclude=.* {members...}"
    )
    .quiet()
    .run()
    .with_context(|| format!("writing {}; is the directory writable?", output.display()))?;
    println!("exported {listed} to {}", output.display());
    Ok(())
}

/// One result found in an archive.
struct Incoming {
    archive: PathBuf,
    /// `<staging>/<target>/<variant>`.
    dir: PathBuf,
    result: BuildResult,
}

/// Unpacks every archive into `target/xtask/results/` (see the module
/// docs for what is refused; then nothing is written). Each (target,
/// variant) replaces the results there, under its results lock.
pub fn merge(sh: &Shell, layout: &Layout, archives: &[PathBuf]) -> Result<()> {
    let staging = StagingDir::new(&layout.work_dir(), ".staging-merge-")?;
    let mut incoming: Vec<Incoming> = Vec::new();
    for (n, archive) in archives.iter().enumerate() {
        let into = staging.path().join(n.to_string());
        for found in unpack(sh, archive, &into)? {
            let key = (&found.result.target.name, &found.result.variant.name);
            if let Some(other) = incoming
                .iter()
                .find(|i| (&i.result.target.name, &i.result.variant.name) == key)
            {
                bail!(
                    "nothing merged: {}/{} is in both {} and {}; merge one of them",
                    key.0,
                    key.1,
                    other.archive.display(),
                    archive.display()
                );
            }
            incoming.push(found);
        }
    }
    check_inputs(layout, &incoming)?;
    for found in &incoming {
        let (t, v) = (&found.result.target.name, &found.result.variant.name);
        let _lock = Lock::acquire(
            &layout.results_lock(t, v),
            &format!(
                "the results directory {}",
                layout.results_dir(t, v).display()
            ),
            Wait::Yes,
        )?;
        let dest = layout.results_dir(t, v);
        if dest.exists() {
            std::fs::remove_dir_all(&dest)
                .with_context(|| format!("removing the old {}", dest.display()))?;
        }
        let parent = dest.parent().context("a results directory has a parent")?;
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        std::fs::rename(&found.dir, &dest)
            .with_context(|| format!("moving {} to {}", found.dir.display(), dest.display()))?;
        println!("merged {t}/{v} from {}", found.archive.display());
    }
    Ok(())
}

/// Checks `archive`'s member names, unpacks it into `into` and reads
/// every `<target>/<variant>/result.json`.
fn unpack(sh: &Shell, archive: &Path, into: &Path) -> Result<Vec<Incoming>> {
    let refuse = |why: String| -> anyhow::Error {
        anyhow::anyhow!(
            "nothing merged: {}: {why}; make it with `cargo xtask results export`",
            archive.display()
        )
    };
    let listing = cmd!(sh, "tar --list --verbose --absolute-names --file {archive}")
        .quiet()
        .read()
        .with_context(|| {
            format!(
                "nothing merged: {} is not a readable tar",
                archive.display()
            )
        })?;
    let names = cmd!(sh, "tar --list --absolute-names --file {archive}")
        .quiet()
        .read()?;
    for (line, name) in listing.lines().zip(names.lines()) {
        let kind = line.chars().next().unwrap_or('?');
        check_member(name, kind).map_err(refuse)?;
    }
    std::fs::create_dir_all(into).with_context(|| format!("creating {}", into.display()))?;
    cmd!(
        sh,
        "tar --extract --file {archive} --directory {into} --no-same-owner --no-same-permissions"
    )
    .quiet()
    .run()
    .with_context(|| format!("nothing merged: unpacking {}", archive.display()))?;
    let mut found = Vec::new();
    for target in read_dirs(into)? {
        for dir in read_dirs(&target)? {
            let result = BuildResult::read(&dir).map_err(|e| {
                refuse(format!(
                    "{} is unreadable: {e:#}",
                    dir.strip_prefix(into)
                        .unwrap_or(&dir)
                        .join(FILE_NAME)
                        .display()
                ))
            })?;
            let named = (
                target.file_name().map(|n| n.to_string_lossy().to_string()),
                dir.file_name().map(|n| n.to_string_lossy().to_string()),
            );
            if named
                != (
                    Some(result.target.name.clone()),
                    Some(result.variant.name.clone()),
                )
            {
                return Err(refuse(format!(
                    "{} holds the result of {}/{}",
                    dir.strip_prefix(into).unwrap_or(&dir).display(),
                    result.target.name,
                    result.variant.name
                )));
            }
            found.push(Incoming {
                archive: archive.to_path_buf(),
                dir,
                result,
            });
        }
    }
    if found.is_empty() {
        return Err(refuse("it holds no results".to_string()));
    }
    Ok(found)
}

/// A member must be `<target>/<variant>/` or a regular file
/// `<target>/<variant>/<file>` (`kind`: the first letter of `tar -tv`),
/// each part a plain name.
pub fn check_member(name: &str, kind: char) -> std::result::Result<(), String> {
    let path = Path::new(name);
    let plain = path
        .components()
        .all(|c| matches!(c, Component::Normal(n) if !n.to_string_lossy().starts_with('.')));
    let depth = path.components().count();
    match kind {
        _ if !plain => Err(format!(
            "member {name:?} would escape its results directory (absolute, `..` or hidden)"
        )),
        'd' if (1..=2).contains(&depth) => Ok(()),
        '-' if depth == 3 => Ok(()),
        '-' | 'd' => Err(format!("member {name:?} is not <target>/<variant>/<file>")),
        _ => Err(format!(
            "member {name:?} is a link or special file, which could point outside the results"
        )),
    }
}

fn read_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("reading {}", dir.display()))?
            .path();
        if path.is_dir() {
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
/// already in `target/xtask/results/` that they do not replace.
fn check_inputs(layout: &Layout, incoming: &[Incoming]) -> Result<()> {
    let mut by_target: BTreeMap<&str, Vec<(String, &BuildResult)>> = BTreeMap::new();
    for i in incoming {
        by_target.entry(&i.result.target.name).or_default().push((
            format!(
                "{}/{} from {}",
                i.result.target.name,
                i.result.variant.name,
                i.archive.display()
            ),
            &i.result,
        ));
    }
    let mut existing = Vec::new();
    for target in by_target.keys() {
        let dir = layout.results_root().join(target);
        for variant_dir in read_dirs(&dir).unwrap_or_default() {
            let variant = variant_dir
                .file_name()
                .map(|n| n.to_string_lossy().to_string());
            let replaced = incoming.iter().any(|i| {
                i.result.target.name == *target && Some(&i.result.variant.name) == variant.as_ref()
            });
            if let (false, Ok(r)) = (replaced, BuildResult::read(&variant_dir)) {
                existing.push((format!("{} (already merged)", variant_dir.display()), r));
            }
        }
    }
    for (label, r) in &existing {
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_member;

    #[test]
    fn members_stay_in_their_results_directory() {
        assert!(check_member("t/v/", 'd').is_ok());
        assert!(check_member("t/", 'd').is_ok());
        assert!(check_member("t/v/result.json", '-').is_ok());
        assert!(check_member("t/v/vmlinux", '-').is_ok());
        for (name, kind) in [
            ("/etc/passwd", '-'),
            ("t/../../x", '-'),
            ("../t/v/result.json", '-'),
            ("t/v/sub/file", '-'),
            ("t/result.json", '-'),
            ("t/v/link", 'l'),
            ("t/v/hard", 'h'),
            ("t/.hidden/x", '-'),
        ] {
            assert!(check_member(name, kind).is_err(), "{name} accepted");
        }
    }
}
