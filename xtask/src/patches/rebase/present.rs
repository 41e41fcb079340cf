//! Whether a patch that still applies forwards is nevertheless already in
//! the tree: its added lines are all there, next to the context it matched.
//!
//! A patch that went upstream usually applies in reverse, and the
//! classifier calls it `upstream` for that. Some do not: upstream took the
//! change with different context, and the old context still matches
//! somewhere, so the patch applies forwards (at an offset, or with fuzz)
//! and would add its lines a second time. OpenWrt's bcm53xx
//! `030-v6.7-0005-ARM-dts-BCM5301X-Explicitly-disable-unused-switch-CP.patch`
//! on Linux 6.12 is one: each hunk adds `port@7 { status = "disabled"; };`
//! and `port@8 { … };` after a `port@8` node that 6.7 already has, so
//! applying it writes duplicate nodes.
//!
//! [`additions_present`] is the test, for a patch that applies forwards:
//! every file diff modifies an existing file; every hunk only adds lines (a
//! hunk that removes lines which are still there, as they are when it
//! applies, is not present) and at least one of them has a letter or digit
//! (blank lines and braces prove nothing); and each hunk's new side — its
//! context and added lines, in order, with up to `fuzz` context lines
//! dropped at each end as GNU patch drops them — is in the file within the
//! hunk's reach of where it matched (three times as many lines before and
//! after as the hunk adds and matches), with other lines allowed between its lines as
//! long as none of those is a non-blank line of the hunk itself. That last
//! rule keeps a line found in a neighbouring table entry from counting:
//! OpenWrt's `498-mtd-spi-nor-locking-support-for-MX25L6405D.patch` adds
//! `.flags = SPI_NOR_HAS_LOCK | SPI_NOR_4BIT_BP,` to one `flash_info`
//! entry, and the next entry of 6.12's `macronix.c` has that line, past the
//! hunk's own context. The file is read as it is before the patch.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::Result;

use crate::patches::engine::{ApplyReport, FileOp, Hunk, HunkOutcome, LineKind, Patch};

/// Whether every change of `patch` is already in `tree` (see the module
/// docs), given `report`, the dry run of applying it forwards there, and
/// the fuzz allowed (GNU patch's 2).
///
/// Errors: a file of the report that cannot be read.
pub fn additions_present(
    tree: &Path,
    patch: &Patch,
    report: &ApplyReport,
    fuzz: usize,
) -> Result<bool> {
    if report.files.is_empty() || report.files.len() != patch.files.len() {
        return Ok(false);
    }
    let mut seen = BTreeSet::new();
    for file in &report.files {
        // A second diff of the same file would be located in the first's
        // output, not in the tree as it is.
        if !seen.insert(file.path.clone()) || file.op != FileOp::Modify {
            return Ok(false);
        }
        let fp = &patch.files[file.index];
        if fp.hunks.is_empty() || fp.hunks.len() != file.hunks.len() {
            return Ok(false);
        }
        let path = tree.join(&file.path);
        let bytes = crate::util::fs::read_bytes_limited(
            &path,
            crate::util::fs::FileLimit::binary("tree file"),
            "",
        )?;
        let lines: Vec<&[u8]> = split_lines(&bytes);
        for (hunk, outcome) in fp.hunks.iter().zip(&file.hunks) {
            let HunkOutcome::Applied { offset, .. } = *outcome else {
                return Ok(false);
            };
            if !hunk_present(hunk, offset, &lines, fuzz) {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Whether `hunk`, which matched `lines` at `offset` from where it says it
/// starts, is already there (see the module docs).
fn hunk_present(hunk: &Hunk, offset: isize, lines: &[&[u8]], fuzz: usize) -> bool {
    if hunk.lines.iter().any(|l| l.kind == LineKind::Delete) {
        return false;
    }
    let added = hunk.lines.iter().filter(|l| l.kind == LineKind::Insert);
    if !added
        .clone()
        .any(|l| l.text.iter().any(u8::is_ascii_alphanumeric))
    {
        return false;
    }
    // Where the hunk's old side matched, 0-based, in the file as it is.
    let at = (hunk.first() as isize + offset - 1).max(0) as usize;
    // Three times the hunk's length: upstream may have put other lines
    // between the hunk's (bcm53xx's 030-v6.7-0005 meets 0006's fixed-link
    // nodes inside the port nodes it adds on the Netgear R8000).
    let reach = 3 * (added.count() + hunk.old_count);
    let window = &lines[at.saturating_sub(reach)..(at + hunk.old_count + reach).min(lines.len())];
    let own: BTreeSet<&[u8]> = hunk
        .lines
        .iter()
        .map(|l| l.text.as_slice())
        .filter(|t| !t.iter().all(u8::is_ascii_whitespace))
        .collect();
    let new_side: Vec<&[u8]> = hunk.lines.iter().map(|l| l.text.as_slice()).collect();
    let (prefix, suffix) = (hunk.prefix_context(), hunk.suffix_context());
    (0..=fuzz).any(|f| {
        let pattern = &new_side[f.min(prefix)..new_side.len() - f.min(suffix)];
        (0..window.len()).any(|start| found_from(pattern, &window[start..], &own))
    })
}

/// Whether `pattern` is found in `hay` starting at its first line, in order,
/// skipping only lines that are not in `own` (blank lines never are).
fn found_from(pattern: &[&[u8]], hay: &[&[u8]], own: &BTreeSet<&[u8]>) -> bool {
    let Some((first, rest)) = pattern.split_first() else {
        return false;
    };
    if hay.first() != Some(first) {
        return false;
    }
    let mut at = 1;
    for want in rest {
        loop {
            let Some(line) = hay.get(at) else {
                return false;
            };
            at += 1;
            if line == want {
                break;
            }
            if own.contains(line) {
                return false;
            }
        }
    }
    true
}

/// The lines of `bytes` without their `\n` (a last line without one too).
fn split_lines(bytes: &[u8]) -> Vec<&[u8]> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if body.is_empty() && bytes.is_empty() {
        return Vec::new();
    }
    body.split(|&b| b == b'\n').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_may_skip_only_lines_foreign_to_the_hunk() {
        let hay: Vec<&[u8]> = vec![b"a", b"x", b"", b"b", b"c"];
        let own: BTreeSet<&[u8]> = [b"a".as_slice(), b"b", b"c"].into();
        assert!(found_from(&[b"a", b"b", b"c"], &hay, &own));
        assert!(
            !found_from(&[b"a", b"c"], &hay, &own),
            "skips b, a line of the hunk"
        );
        assert!(!found_from(&[b"b", b"a"], &hay, &own));
        assert!(
            !found_from(&[b"x"], &hay, &own),
            "starts at the first line only"
        );
        assert_eq!(split_lines(b"a\nb\n"), vec![b"a".as_slice(), b"b"]);
        assert_eq!(split_lines(b"a\nb"), vec![b"a".as_slice(), b"b"]);
        assert!(split_lines(b"").is_empty());
    }
}
