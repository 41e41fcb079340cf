//! Where a hunk goes: the search order and fuzz rules of GNU patch 2.7's
//! `locate_hunk`/`patch_match` (patch.c), reimplemented.
//!
//! Positions are 1-based input line numbers, as GNU prints them. The search
//! starts at the hunk's own line plus the offset accumulated by the earlier
//! hunks of the same file, then tries +1, −1, +2, −2 … within the allowed
//! window, not past the end of the file and not before the line after the
//! last one the previous hunk consumed (GNU `last_frozen_line`: its last
//! deleted line, or the line before its last insertion). The caller tries
//! every position at fuzz 0 before any at fuzz 1.
//!
//! The window start is GNU patch 2.7.6's (commit "Don't allow hunks to
//! overlap", 2017): `min_where = last_frozen_line + 1`. Patch 2.7.5 and
//! earlier let the window reach back over the new hunk's leading context
//! (`last_frozen_line + 1 - prefix_context`), so a hunk could land on the
//! site the previous hunk had just patched: three identical hunks meant
//! for three similar struct initializers all went into the first one.

/// A hunk's old side, as the search sees it.
pub(crate) struct Pattern<'a> {
    /// Old-side lines, each with its `\n` if it has one.
    pub lines: &'a [Vec<u8>],
    /// GNU `pch_first`: the 1-based line the hunk says it starts at.
    pub first: isize,
    /// Leading context lines.
    pub prefix: isize,
    /// Trailing context lines.
    pub suffix: isize,
}

impl Pattern<'_> {
    /// The most fuzz worth trying: `min(max_fuzz, max(prefix, suffix))`.
    pub fn max_fuzz(&self, max_fuzz: usize) -> usize {
        (max_fuzz as isize).min(self.prefix.max(self.suffix)).max(0) as usize
    }
}

/// Where the search may look, for one fuzz level.
pub(crate) struct Window {
    /// 1-based input lines (each with its `\n` if any).
    pub input_len: isize,
    /// Input lines already consumed by earlier hunks (GNU `last_frozen_line`).
    pub frozen: isize,
    /// Offset of the previous hunks (GNU `in_offset`): where they landed
    /// minus where they said they would.
    pub offset: isize,
}

/// Finds the 1-based line where `pat` matches `input` with `fuzz`, or `None`.
///
/// Fuzz `f` ignores context lines at the hunk's ends. A hunk with less
/// leading than trailing context (or the reverse) only ignores the shorter
/// side's lines once `f` exceeds the difference; until then that side stays
/// anchored: less leading context means the hunk must sit at the start of the
/// file (when it says it starts at line 1), less trailing context means it
/// must end at the end of the file. An empty old side matches at once.
pub(crate) fn locate(
    input: &[&[u8]],
    pat: &Pattern<'_>,
    win: &Window,
    fuzz: usize,
) -> Option<isize> {
    let n = win.input_len;
    let len = pat.lines.len() as isize;
    let guess = pat.first + win.offset;
    if len == 0 {
        return Some(guess);
    }
    let fuzz = fuzz as isize;
    let context = pat.prefix.max(pat.suffix);
    // Lines each end may ignore; negative: that end is anchored.
    let mut top = fuzz - (context - pat.prefix);
    let bottom = fuzz - (context - pat.suffix);
    let last_start = n - (len - bottom) + 1;
    // GNU 2.7.6 `min_where`: never at or before a line already consumed.
    let first_start = win.frozen + 1;
    let ahead = last_start - guess;
    let mut behind = guess - first_start;
    let widest = ahead.max(behind);
    behind = behind.min(guess - 1);

    let try_at = |w: isize, top: isize, bottom: isize| matches(input, pat.lines, w, top, bottom);

    if top < 0 && pat.first <= 1 {
        // Anchored at the start of the file.
        return (win.frozen <= pat.prefix && 1 - guess <= ahead && try_at(1, 0, bottom))
            .then_some(1);
    }
    top = top.max(0);
    if bottom < 0 {
        // Anchored at the end of the file.
        let w = n - len + 1;
        return (guess - w <= behind && try_at(w, top, 0)).then_some(w);
    }
    // GNU starts at the window's near edge when the guess lies outside it
    // (its formula for the "before the window" case, reproduced as is).
    let start = if ahead < 0 {
        guess - last_start
    } else if behind < 0 {
        guess - first_start
    } else {
        0
    };
    let mut d = start;
    while d <= widest {
        if d <= ahead && try_at(guess + d, top, bottom) {
            return Some(guess + d);
        }
        if d <= behind && try_at(guess - d, top, bottom) {
            return Some(guess - d);
        }
        d += 1;
    }
    None
}

/// Whether pattern lines `top .. len-bottom` equal the input lines starting
/// at `w + top` (1-based); input lines outside the file compare as empty.
fn matches(input: &[&[u8]], pattern: &[Vec<u8>], w: isize, top: isize, bottom: isize) -> bool {
    let end = pattern.len() as isize - bottom;
    (top..end).all(|k| {
        let at = w + k; // 1-based input line
        let line: &[u8] = if at >= 1 && at <= input.len() as isize {
            input[(at - 1) as usize]
        } else {
            b""
        };
        pattern
            .get(k as usize)
            .is_some_and(|p| p.as_slice() == line)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<Vec<u8>> {
        s.split_inclusive('\n')
            .map(|l| l.as_bytes().to_vec())
            .collect()
    }

    #[test]
    fn search_order_prefers_forward_on_ties() {
        let text = lines("x\na\nx\nx\na\n");
        let input: Vec<&[u8]> = text.iter().map(|l| l.as_slice()).collect();
        let pat_lines = lines("a\n");
        let pat = Pattern {
            lines: &pat_lines,
            first: 3,
            prefix: 0,
            suffix: 0,
        };
        let win = Window {
            input_len: 5,
            frozen: 0,
            offset: 0,
        };
        // Line 2 and 4 are both 1 away from 3... only 2 and 5 hold "a":
        // +1 (4) fails, -1 (2) matches before +2 (5).
        assert_eq!(locate(&input, &pat, &win, 0), Some(2));
        let win = Window { frozen: 2, ..win };
        assert_eq!(locate(&input, &pat, &win, 0), Some(5));
    }
}
