//! The progress estimate of a build: how many objects a full build of a
//! kernel configuration compiles, remembered from the last one.
//!
//! kbuild compiles every object of a `.config` when it starts from an
//! empty build directory, so the count of the last such build of the same
//! `.config` (by its sha256, the `config_sha256` of `result.json`) is the
//! total to expect the next time. The build directory cannot keep it, as
//! it is emptied when the patched tree changes, and variants that differ
//! only in flags or patches share a `.config`: the counts live in
//! `target/xtask/object-counts/<sha256>`, one number each.
//!
//! Only a build that ran make from an empty directory to the end is
//! counted, and only such a build is shown a total: an emptied directory
//! carries a mark ([`mark_empty`]) that the build takes before make starts
//! ([`take_empty_mark`]), so a build resumed after an interruption (which
//! compiles only what is missing) neither shows nor records a total.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::util::layout::Layout;

/// The mark of a build directory that holds no object yet.
const EMPTY_MARK: &str = ".xtask-empty";

/// Proof that make is about to run in an empty build directory: every
/// object of the configuration will be compiled.
#[derive(Debug)]
pub struct FullBuild(());

/// Marks `dir`, just emptied or created, as holding no object yet.
///
/// Errors: the mark cannot be written (naming it).
pub fn mark_empty(dir: &Path) -> Result<()> {
    let mark = dir.join(EMPTY_MARK);
    std::fs::write(&mark, b"").with_context(|| format!("writing {}", mark.display()))
}

/// Whether `dir` was marked empty by [`mark_empty`], removing the mark: the
/// make that runs next is a full build; a later one (after an
/// interruption) is not.
///
/// Errors: the mark exists but cannot be removed (naming it).
pub fn take_empty_mark(dir: &Path) -> Result<Option<FullBuild>> {
    let mark = dir.join(EMPTY_MARK);
    match std::fs::remove_file(&mark) {
        Ok(()) => Ok(Some(FullBuild(()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("removing {}", mark.display())),
    }
}

/// How many objects the last full build of the `.config` text `config`
/// compiled, if one ran to the end before.
pub fn expected_objects(layout: &Layout, config: &str) -> Option<u64> {
    crate::util::fs::read_limited(
        &count_file(layout, config),
        crate::util::fs::FileLimit::record("object count"),
        "",
    )
    .ok()?
    .trim()
    .parse()
    .ok()
}

/// Remembers that the full build `_full` of `config` compiled `objects`
/// objects.
///
/// Errors: the count cannot be written (I/O, naming the file).
pub fn record_full_build(
    layout: &Layout,
    _full: FullBuild,
    config: &str,
    objects: u64,
) -> Result<()> {
    let file = count_file(layout, config);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    crate::util::fs::write_atomic(&file, format!("{objects}\n").as_bytes())
        .with_context(|| format!("remembering the object count in {}", file.display()))
}

fn count_file(layout: &Layout, config: &str) -> PathBuf {
    layout
        .work_dir()
        .join("object-counts")
        .join(crate::util::hash::sha256_bytes(config.as_bytes()))
}

/// The progress message of a build that has compiled `objects` objects in
/// `elapsed`: `n objects compiled` without an `expected` total, else
/// `n/m objects compiled, estimated T left`, where T assumes the remaining
/// objects take as long on average as those compiled so far (no time
/// before the first object; once more than `m` are compiled, it says so
/// instead of a time).
pub fn progress_message(objects: u64, expected: Option<u64>, elapsed: Duration) -> String {
    match expected {
        Some(m) if m > 0 && objects > m => {
            format!("{objects} objects compiled, more than the {m} of the last full build")
        }
        Some(m) if m > 0 && objects > 0 => {
            let left = m - objects;
            let secs = elapsed.as_secs_f64() * left as f64 / objects as f64;
            format!(
                "{objects}/{m} objects compiled, estimated {} left",
                humantime::format_duration(Duration::from_secs(secs.round() as u64))
            )
        }
        Some(m) if m > 0 => format!("{objects}/{m} objects compiled"),
        _ => format!("{objects} objects compiled"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_found_by_the_configuration_only() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        std::fs::create_dir_all(layout.work_dir()).unwrap();
        let config = "CONFIG_ARM=y\n";
        assert_eq!(expected_objects(&layout, config), None);
        record_full_build(&layout, FullBuild(()), config, 2431).unwrap();
        assert_eq!(expected_objects(&layout, config), Some(2431));
        assert_eq!(
            expected_objects(&layout, "CONFIG_ARM=y\nCONFIG_NET=y\n"),
            None
        );
        record_full_build(&layout, FullBuild(()), config, 2433).unwrap();
        assert_eq!(expected_objects(&layout, config), Some(2433));
    }

    #[test]
    fn only_the_first_make_after_emptying_is_a_full_build() {
        let dir = tempfile::tempdir().unwrap();
        assert!(take_empty_mark(dir.path()).unwrap().is_none());
        mark_empty(dir.path()).unwrap();
        assert!(take_empty_mark(dir.path()).unwrap().is_some());
        // Interrupted and run again: make resumes, it is not a full build.
        assert!(take_empty_mark(dir.path()).unwrap().is_none());
    }

    #[test]
    fn the_estimate_scales_the_time_per_object() {
        let d = Duration::from_secs;
        assert_eq!(progress_message(0, None, d(5)), "0 objects compiled");
        assert_eq!(progress_message(7, Some(0), d(5)), "7 objects compiled");
        assert_eq!(
            progress_message(0, Some(100), d(5)),
            "0/100 objects compiled"
        );
        assert_eq!(
            progress_message(25, Some(100), d(60)),
            "25/100 objects compiled, estimated 3m left"
        );
        assert_eq!(
            progress_message(100, Some(100), d(60)),
            "100/100 objects compiled, estimated 0s left"
        );
        assert_eq!(
            progress_message(120, Some(100), d(60)),
            "120 objects compiled, more than the 100 of the last full build"
        );
    }
}
