//! Applying the hunks of one file diff to one file's bytes, in memory, as
//! GNU patch 2.7's main loop and `apply_hunk`/`copy_till` (patch.c) do.

use super::locate::{locate, Pattern, Window};
use super::model::{Hunk, HunkLine, LineKind};
use super::report::HunkOutcome;

/// The result of applying a file's hunks: the new bytes (meaningful only
/// when every hunk applied) and one outcome per hunk.
pub(crate) struct TextResult {
    pub output: Vec<u8>,
    pub hunks: Vec<HunkOutcome>,
    /// The first hunk matched backwards before it matched forwards: the
    /// file looks reversed or already patched; nothing else was tried.
    pub looks_reversed: bool,
    /// [`Reversal::Probe`] only: the first hunk, reversed, matches the
    /// input exactly (fuzz 0) somewhere.
    pub first_hunk_reverses: bool,
}

/// What to do about a file that looks reversed (GNU patch's "Reversed (or
/// previously applied) patch detected!").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reversal {
    /// As GNU patch without `-f`: at each fuzz level where the first hunk
    /// does not match forwards, try it backwards; a match there stops the
    /// file with [`TextResult::looks_reversed`].
    Detect,
    /// As `patch -f`: hunks are only tried forwards. Also record in
    /// [`TextResult::first_hunk_reverses`] whether the first hunk matches
    /// backwards at fuzz 0 (a cheap hint that the patch may already be in).
    Probe,
    /// Hunks are only tried forwards; nothing else.
    Ignore,
}

impl TextResult {
    pub fn all_applied(&self) -> bool {
        self.hunks.iter().all(HunkOutcome::applied)
    }
}

/// Splits bytes into lines that keep their `\n` (the last may lack it).
pub(crate) fn split_lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

/// Output under construction (GNU `struct outstate` plus `last_frozen_line`).
struct Out<'a> {
    input: &'a [&'a [u8]],
    bytes: Vec<u8>,
    /// Input lines consumed so far.
    frozen: usize,
    after_newline: bool,
}

impl Out<'_> {
    /// Copies input lines up to `line` (1-based, inclusive). Fails when the
    /// output has already passed it (GNU: "misordered hunks").
    fn copy_till(&mut self, line: isize) -> bool {
        if (self.frozen as isize) > line {
            return false;
        }
        while (self.frozen as isize) < line {
            let l = self.input.get(self.frozen).copied().unwrap_or(b"");
            if !l.is_empty() {
                if !self.after_newline {
                    self.bytes.push(b'\n');
                }
                self.bytes.extend_from_slice(l);
                self.after_newline = l.ends_with(b"\n");
            }
            self.frozen += 1;
        }
        true
    }

    fn write(&mut self, line: &HunkLine, fix_newline: bool) {
        if fix_newline && !self.after_newline {
            self.bytes.push(b'\n');
        }
        self.bytes.extend_from_slice(&line.text);
        if !line.no_newline {
            self.bytes.push(b'\n');
        }
        self.after_newline = !line.no_newline;
    }
}

/// GNU walks each change block deleting before inserting; put the lines in
/// that order so the walk below can follow the patch order.
fn canonical(lines: &[HunkLine]) -> Vec<&HunkLine> {
    let mut out = Vec::with_capacity(lines.len());
    let mut inserts = Vec::new();
    for l in lines {
        match l.kind {
            LineKind::Delete => out.push(l),
            LineKind::Insert => inserts.push(l),
            LineKind::Context => {
                out.append(&mut inserts);
                out.push(l);
            }
        }
    }
    out.append(&mut inserts);
    out
}

/// Applies `hunks` to `input` with at most `max_fuzz` fuzz.
///
/// `creating` is GNU's "the old side says the file does not exist": a hunk
/// that lands on line 1 of a non-empty file then fails (the file already exists).
///
/// `reversal` says whether the first hunk is also tried backwards (see
/// [`Reversal`]).
pub(crate) fn apply_hunks(
    input: &[u8],
    hunks: &[Hunk],
    max_fuzz: usize,
    creating: bool,
    reversal: Reversal,
) -> TextResult {
    let lines = split_lines(input);
    let first_hunk_reverses = reversal == Reversal::Probe
        && hunks.first().is_some_and(|h| {
            let win = Window {
                input_len: lines.len() as isize,
                frozen: 0,
                offset: 0,
            };
            reverse_matches(&lines, h, &win, 0)
        });
    let mut out = Out {
        input: &lines,
        bytes: Vec::with_capacity(input.len() + 256),
        frozen: 0,
        after_newline: true,
    };
    let mut in_offset: isize = 0;
    let mut out_offset: isize = 0;
    let mut outcomes = Vec::with_capacity(hunks.len());
    for hunk in hunks {
        let old = hunk.old_lines();
        let pat = Pattern {
            lines: &old,
            first: hunk.first() as isize,
            prefix: hunk.prefix_context() as isize,
            suffix: hunk.suffix_context() as isize,
        };
        let mut found = None;
        for fuzz in 0..=pat.max_fuzz(max_fuzz) {
            let win = Window {
                input_len: lines.len() as isize,
                frozen: out.frozen as isize,
                offset: in_offset,
            };
            if let Some(w) = locate(&lines, &pat, &win, fuzz) {
                found = Some((w, fuzz));
                break;
            }
            if reversal == Reversal::Detect
                && outcomes.is_empty()
                && reverse_matches(&lines, hunk, &win, fuzz)
            {
                return TextResult {
                    output: Vec::new(),
                    hunks: Vec::new(),
                    looks_reversed: true,
                    first_hunk_reverses: false,
                };
            }
        }
        // GNU prints the line where the hunk was found, or where it was
        // expected, shifted by what the earlier hunks added or removed.
        let failed = |at: Option<isize>| {
            let line = at.unwrap_or(hunk.first() as isize) + out_offset;
            HunkOutcome::Failed {
                line,
                out_offset,
                different_line_endings: different_line_endings(hunk, &lines, line),
            }
        };
        let Some((at, fuzz)) = found else {
            outcomes.push(failed(None));
            continue;
        };
        // GNU's locate_hunk moves in_offset to every place it finds, even
        // when the hunk then cannot be written there.
        in_offset = at - hunk.first() as isize;
        if at == 1 && creating && !input.is_empty() {
            outcomes.push(failed(Some(at)));
            continue;
        }
        let printed = at + out_offset;
        if !apply_one(&mut out, hunk, at) {
            // "misordered hunks! output would be garbled": the hunk's first
            // change lies before a line an earlier hunk consumed.
            outcomes.push(failed(Some(at)));
            continue;
        }
        out_offset += hunk.new_lines().len() as isize - old.len() as isize;
        outcomes.push(HunkOutcome::Applied {
            line: printed.max(0) as usize,
            offset: in_offset,
            fuzz,
        });
    }
    out.copy_till(lines.len() as isize);
    TextResult {
        output: out.bytes,
        hunks: outcomes,
        looks_reversed: false,
        first_hunk_reverses,
    }
}

/// Whether `hunk`, old and new sides swapped, matches at `fuzz`.
fn reverse_matches(lines: &[&[u8]], hunk: &Hunk, win: &Window, fuzz: usize) -> bool {
    let r = hunk.reversed();
    let old = r.old_lines();
    let pat = Pattern {
        lines: &old,
        first: r.first() as isize,
        prefix: r.prefix_context() as isize,
        suffix: r.suffix_context() as isize,
    };
    !old.is_empty() && locate(lines, &pat, win, fuzz).is_some()
}

/// Writes one located hunk (GNU `apply_hunk`); false on misordered hunks.
fn apply_one(out: &mut Out<'_>, hunk: &Hunk, at: isize) -> bool {
    let old_len = hunk
        .lines
        .iter()
        .filter(|l| l.kind != LineKind::Insert)
        .count();
    let base = at - 1;
    let mut old_seen = 0isize;
    for line in canonical(&hunk.lines) {
        match line.kind {
            LineKind::Context => old_seen += 1,
            LineKind::Delete => {
                if !out.copy_till(base + old_seen) {
                    return false;
                }
                out.frozen += 1;
                old_seen += 1;
            }
            LineKind::Insert => {
                if !out.copy_till(base + old_seen) {
                    return false;
                }
                // GNU only mends a missing newline before inserts that
                // follow the whole old side.
                out.write(line, old_seen as usize == old_len);
            }
        }
    }
    true
}

/// GNU's `check_line_endings`: does the hunk's first old line end in CRLF
/// while the input line where it failed does not, or the reverse?
fn different_line_endings(hunk: &Hunk, input: &[&[u8]], at: isize) -> bool {
    let crlf = |l: &[u8]| l.ends_with(b"\r\n");
    // With an empty old side GNU looks at its own "--- a,b ----" line: LF.
    let patch_crlf = if hunk.old_count > 0 {
        match hunk.lines.iter().find(|l| l.kind != LineKind::Insert) {
            Some(l) if !l.bytes().is_empty() => crlf(&l.bytes()),
            _ => return false,
        }
    } else {
        false
    };
    if input.is_empty() {
        return false;
    }
    let at = at.min(input.len() as isize);
    if at < 1 {
        return false;
    }
    patch_crlf != crlf(input[(at - 1) as usize])
}
