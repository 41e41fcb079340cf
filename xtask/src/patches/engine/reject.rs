//! Reject files: the hunks that failed, in unified form, as GNU patch 2.7's
//! `abort_hunk_unified` (patch.c) writes them to `FILE.rej`.

use std::path::{Path, PathBuf};

use super::apply::strip_name;
use super::error::ApplyError;
use super::fsops::Staging;
use super::model::{FileName, FilePatch, HunkLine, LineKind, Patch};
use super::report::{ApplyReport, FileReport, HunkOutcome};

/// `start,count` as unified diff ranges write it (`start-1,0` when empty,
/// `start` alone for one line).
fn range(start: isize, count: usize) -> String {
    match count {
        0 => format!("{},0", start - 1),
        1 => format!("{start}"),
        n => format!("{start},{n}"),
    }
}

fn header_name(n: &Option<FileName>, strip: usize) -> String {
    match n {
        None => "/dev/null".to_string(),
        Some(n) => {
            let p = strip_name(&n.path, strip).unwrap_or_else(|| n.path.clone());
            format!("{}{}", p.display(), n.timestamp)
        }
    }
}

fn push_line(out: &mut Vec<u8>, marker: u8, l: &HunkLine) {
    out.push(marker);
    out.extend_from_slice(&l.text);
    out.push(b'\n');
    if l.no_newline {
        out.extend_from_slice(b"\\ No newline at end of file\n");
    }
}

/// The reject text for the failed hunks of one file diff: a `---`/`+++`
/// header with the `-p`-stripped names and their timestamps, then each failed
/// hunk with its ranges shifted by the lines earlier applied hunks added or
/// removed (so they point where the hunk was expected in the patched file).
/// Within a change block `-` lines come before `+` lines, as GNU writes them.
/// Empty when no hunk failed.
pub fn render_rejects(file: &FilePatch, report: &FileReport, strip: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for (hunk, outcome) in file.hunks.iter().zip(&report.hunks) {
        let HunkOutcome::Failed { out_offset, .. } = *outcome else {
            continue;
        };
        if out.is_empty() {
            out.extend_from_slice(format!("--- {}\n", header_name(&file.old, strip)).as_bytes());
            out.extend_from_slice(format!("+++ {}\n", header_name(&file.new, strip)).as_bytes());
        }
        out.extend_from_slice(
            format!(
                "@@ -{} +{} @@",
                range(hunk.first() as isize + out_offset, hunk.old_count),
                range(hunk.new_first() as isize + out_offset, hunk.new_count)
            )
            .as_bytes(),
        );
        out.extend_from_slice(&hunk.section);
        out.push(b'\n');
        let mut inserts = Vec::new();
        for l in &hunk.lines {
            match l.kind {
                LineKind::Delete => push_line(&mut out, b'-', l),
                LineKind::Insert => inserts.push(l),
                LineKind::Context => {
                    for i in inserts.drain(..) {
                        push_line(&mut out, b'+', i);
                    }
                    push_line(&mut out, b' ', l);
                }
            }
        }
        for i in inserts {
            push_line(&mut out, b'+', i);
        }
    }
    out
}

/// Writes `PATH.rej` next to every file of `report` that has failed hunks
/// (opt-in: applying never writes rejects by itself). Each reject file is
/// written to a temporary file and renamed into place. Returns the reject
/// paths relative to `tree`.
pub fn write_rejects(
    tree: &Path,
    patch: &Patch,
    report: &ApplyReport,
    strip: usize,
) -> Result<Vec<PathBuf>, ApplyError> {
    let mut staging = Staging::default();
    let mut written = Vec::new();
    for f in &report.files {
        let Some(fp) = patch.files.get(f.index) else {
            continue;
        };
        let text = render_rejects(fp, f, strip);
        if text.is_empty() {
            continue;
        }
        let mut name = f.path.clone().into_os_string();
        name.push(".rej");
        let rel = PathBuf::from(name);
        if let Err(e) = staging.stage(tree, &rel, &text, None) {
            staging.abort();
            return Err(e);
        }
        written.push(rel);
    }
    staging.commit()?;
    Ok(written)
}
