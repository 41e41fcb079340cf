//! Which lines of two files differ, chosen the way GNU diff (diffutils 3.8,
//! default options, no `--minimal`) chooses among the equally short edit
//! scripts, so that a refreshed patch has the same hunks as one written by
//! `quilt refresh` (which runs GNU diff).
//!
//! The steps, each described by its observable rule (written from the
//! documented algorithm and checked against `/usr/bin/diff` by the tests in
//! `super::tests` and `tests/it/stack_quilt.rs`, not translated from diffutils):
//!
//! 1. **Region.** Lines equal at the start (prefix) and at the end (suffix,
//!    never overlapping the prefix) are left out, except the `horizon` lines
//!    (the context length, 3) nearest to the difference on each side.
//! 2. **Confusing lines.** Within the region, a line whose text never occurs
//!    in the other file's region is marked changed up front; a line occurring
//!    there more than `5·2^k` times (`k` from the square root of the region
//!    length/64) is "provisional" and is only marked when it sits inside a run
//!    of such lines bounded by definite ones (with GNU's run-length rules).
//! 3. **Middle snake.** Myers' O(ND) search on the remaining lines, forward
//!    and backward diagonals extended alternately, highest diagonal first;
//!    the split is where the two searches first overlap, then both halves
//!    recursively after sliding over equal lines at their ends.
//! 4. **Boundary shifts.** Each run of changed lines is slid back while the
//!    line before it equals its last line (merging runs), then forward as
//!    far as the line after it equals its first line, and finally back to
//!    end where a run of changes in the other file lines up with it.
//!
//! Not reproduced: GNU's "too expensive" cut-off (only reached when a single
//! region needs more than 4096 edit steps in each direction) and the
//! `--speed-large-files` heuristic (off by default).

use std::collections::HashMap;

/// Changed-line flags: `old[i]` is true when old line `i` (0-based) is
/// deleted, `new[j]` when new line `j` is inserted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Changes {
    pub old: Vec<bool>,
    pub new: Vec<bool>,
}

/// GNU diff's choice of changed lines between `a` and `b` (lines with their
/// `\n`, the last possibly without), keeping `horizon` equal lines around
/// the differing region as GNU does with `--horizon-lines` = context (3).
pub(crate) fn changes<'l>(a: &[&'l [u8]], b: &[&'l [u8]], horizon: usize) -> Changes {
    let (n, m) = (a.len(), b.len());
    let mut out = Changes {
        old: vec![false; n],
        new: vec![false; m],
    };
    let mut prefix = 0;
    while prefix < n && prefix < m && a[prefix] == b[prefix] {
        prefix += 1;
    }
    let mut suffix = 0;
    while suffix < n - prefix && suffix < m - prefix && a[n - 1 - suffix] == b[m - 1 - suffix] {
        suffix += 1;
    }
    if prefix == n && prefix == m {
        return out;
    }
    let lo = prefix.saturating_sub(horizon);
    let hia = (n - suffix + horizon).min(n);
    let hib = (m - suffix + horizon).min(m);

    // Equivalence classes, numbered from 1 over both regions.
    let mut classes: HashMap<&'l [u8], usize> = HashMap::new();
    let mut class_of = |l: &'l [u8]| -> usize {
        let next = classes.len() + 1;
        *classes.entry(l).or_insert(next)
    };
    let ea: Vec<usize> = a[lo..hia].iter().map(|&l| class_of(l)).collect();
    let eb: Vec<usize> = b[lo..hib].iter().map(|&l| class_of(l)).collect();
    let nclasses = classes.len() + 1;

    let mut ca = vec![false; ea.len()];
    let mut cb = vec![false; eb.len()];
    let (da, db) = discards(&ea, &eb, nclasses);
    let (mut ia, mut ib) = (Vec::new(), Vec::new());
    let (mut xa, mut xb) = (Vec::new(), Vec::new());
    for (i, &d) in da.iter().enumerate() {
        if d {
            ca[i] = true;
        } else {
            ia.push(i);
            xa.push(ea[i]);
        }
    }
    for (i, &d) in db.iter().enumerate() {
        if d {
            cb[i] = true;
        } else {
            ib.push(i);
            xb.push(eb[i]);
        }
    }
    let mut ctx = Search::new(&xa, &xb);
    ctx.compare(0, xa.len(), 0, xb.len());
    for (x, &d) in ctx.del.iter().enumerate() {
        if d {
            ca[ia[x]] = true;
        }
    }
    for (y, &d) in ctx.ins.iter().enumerate() {
        if d {
            cb[ib[y]] = true;
        }
    }
    shift_boundaries(&mut ca, &cb, &ea);
    shift_boundaries(&mut cb, &ca, &eb);
    out.old[lo..hia].copy_from_slice(&ca);
    out.new[lo..hib].copy_from_slice(&cb);
    out
}

/// Step 2: which lines of each region are discarded (marked changed) before
/// the search.
fn discards(ea: &[usize], eb: &[usize], nclasses: usize) -> (Vec<bool>, Vec<bool>) {
    let count = |e: &[usize]| {
        let mut c = vec![0usize; nclasses];
        for &k in e {
            c[k] += 1;
        }
        c
    };
    let (count_a, count_b) = (count(ea), count(eb));
    let classify = |e: &[usize], other: &[usize]| -> Vec<u8> {
        let mut many = 5usize;
        let mut tem = e.len() / 64;
        loop {
            tem >>= 2;
            if tem == 0 {
                break;
            }
            many *= 2;
        }
        e.iter()
            .map(|&k| match other[k] {
                0 => 1,
                c if c > many => 2,
                _ => 0,
            })
            .collect()
    };
    let mut ra = classify(ea, &count_b);
    let mut rb = classify(eb, &count_a);
    settle(&mut ra);
    settle(&mut rb);
    (
        ra.iter().map(|&d| d != 0).collect(),
        rb.iter().map(|&d| d != 0).collect(),
    )
}

/// Keeps provisional discards (2) only inside runs of discardable lines
/// that start and end with a definite one (1), by GNU's rules: a run with
/// more than a quarter provisional lines keeps none; otherwise sub-runs of
/// `minimum` or more provisionals are cancelled, and provisionals near the
/// ends of the run (before three definite lines in a row, or the first
/// definite line 8 or more lines in) are cancelled.
fn settle(d: &mut [u8]) {
    let end = d.len();
    let mut i = 0;
    while i < end {
        if d[i] == 2 {
            d[i] = 0;
        } else if d[i] != 0 {
            let mut j = i;
            let mut provisional = 0usize;
            while j < end && d[j] != 0 {
                if d[j] == 2 {
                    provisional += 1;
                }
                j += 1;
            }
            while j > i && d[j - 1] == 2 {
                j -= 1;
                d[j] = 0;
                provisional -= 1;
            }
            let length = j - i;
            if provisional * 4 > length {
                for x in d[i..j].iter_mut().filter(|x| **x == 2) {
                    *x = 0;
                }
            } else {
                let mut minimum = 1usize;
                let mut tem = length >> 2;
                loop {
                    tem >>= 2;
                    if tem == 0 {
                        break;
                    }
                    minimum <<= 1;
                }
                minimum += 1;
                let mut consec = 0usize;
                let mut k = 0usize;
                while k < length {
                    if d[i + k] != 2 {
                        consec = 0;
                    } else {
                        consec += 1;
                        if consec == minimum {
                            // Back to the start of the sub-run: cancel it all.
                            k = k + 1 - consec;
                            continue;
                        } else if consec > minimum {
                            d[i + k] = 0;
                        }
                    }
                    k += 1;
                }
                let mut consec = 0;
                for k in 0..length {
                    if k >= 8 && d[i + k] == 1 {
                        break;
                    }
                    if d[i + k] == 2 {
                        consec = 0;
                        d[i + k] = 0;
                    } else if d[i + k] == 0 {
                        consec = 0;
                    } else {
                        consec += 1;
                    }
                    if consec == 3 {
                        break;
                    }
                }
                i += length - 1;
                let mut consec = 0;
                for k in 0..length {
                    if k >= 8 && d[i - k] == 1 {
                        break;
                    }
                    if d[i - k] == 2 {
                        consec = 0;
                        d[i - k] = 0;
                    } else if d[i - k] == 0 {
                        consec = 0;
                    } else {
                        consec += 1;
                    }
                    if consec == 3 {
                        break;
                    }
                }
            }
        }
        i += 1;
    }
}

/// Step 3: the divide-and-conquer middle-snake search.
struct Search<'a> {
    a: &'a [usize],
    b: &'a [usize],
    fd: Vec<isize>,
    bd: Vec<isize>,
    /// Added to a diagonal number to index `fd`/`bd`.
    base: isize,
    del: Vec<bool>,
    ins: Vec<bool>,
}

impl<'a> Search<'a> {
    fn new(a: &'a [usize], b: &'a [usize]) -> Self {
        let size = a.len() + b.len() + 3;
        Search {
            a,
            b,
            fd: vec![0; size],
            bd: vec![0; size],
            base: b.len() as isize + 1,
            del: vec![false; a.len()],
            ins: vec![false; b.len()],
        }
    }

    fn compare(&mut self, mut xoff: usize, mut xlim: usize, mut yoff: usize, mut ylim: usize) {
        while xoff < xlim && yoff < ylim && self.a[xoff] == self.b[yoff] {
            xoff += 1;
            yoff += 1;
        }
        while xoff < xlim && yoff < ylim && self.a[xlim - 1] == self.b[ylim - 1] {
            xlim -= 1;
            ylim -= 1;
        }
        if xoff == xlim {
            self.ins[yoff..ylim].iter_mut().for_each(|c| *c = true);
        } else if yoff == ylim {
            self.del[xoff..xlim].iter_mut().for_each(|c| *c = true);
        } else {
            let (xmid, ymid) = self.diag(xoff, xlim, yoff, ylim);
            self.compare(xoff, xmid, yoff, ymid);
            self.compare(xmid, xlim, ymid, ylim);
        }
    }

    /// The point where the forward and backward searches first overlap.
    fn diag(&mut self, xoff: usize, xlim: usize, yoff: usize, ylim: usize) -> (usize, usize) {
        let (xoff, xlim, yoff, ylim) = (xoff as isize, xlim as isize, yoff as isize, ylim as isize);
        let base = self.base;
        let ix = |d: isize| (d + base) as usize;
        let dmin = xoff - ylim;
        let dmax = xlim - yoff;
        let fmid = xoff - yoff;
        let bmid = xlim - ylim;
        let (mut fmin, mut fmax, mut bmin, mut bmax) = (fmid, fmid, bmid, bmid);
        let odd = (fmid - bmid) & 1 != 0;
        self.fd[ix(fmid)] = xoff;
        self.bd[ix(bmid)] = xlim;
        loop {
            if fmin > dmin {
                fmin -= 1;
                self.fd[ix(fmin - 1)] = -1;
            } else {
                fmin += 1;
            }
            if fmax < dmax {
                fmax += 1;
                self.fd[ix(fmax + 1)] = -1;
            } else {
                fmax -= 1;
            }
            let mut d = fmax;
            while d >= fmin {
                let (tlo, thi) = (self.fd[ix(d - 1)], self.fd[ix(d + 1)]);
                let x0 = if tlo < thi { thi } else { tlo + 1 };
                let (mut x, mut y) = (x0, x0 - d);
                while x < xlim && y < ylim && self.a[x as usize] == self.b[y as usize] {
                    x += 1;
                    y += 1;
                }
                self.fd[ix(d)] = x;
                if odd && bmin <= d && d <= bmax && self.bd[ix(d)] <= x {
                    return (x as usize, y as usize);
                }
                d -= 2;
            }
            if bmin > dmin {
                bmin -= 1;
                self.bd[ix(bmin - 1)] = isize::MAX;
            } else {
                bmin += 1;
            }
            if bmax < dmax {
                bmax += 1;
                self.bd[ix(bmax + 1)] = isize::MAX;
            } else {
                bmax -= 1;
            }
            let mut d = bmax;
            while d >= bmin {
                let (tlo, thi) = (self.bd[ix(d - 1)], self.bd[ix(d + 1)]);
                let x0 = if tlo < thi { tlo } else { thi - 1 };
                let (mut x, mut y) = (x0, x0 - d);
                while xoff < x && yoff < y && self.a[(x - 1) as usize] == self.b[(y - 1) as usize] {
                    x -= 1;
                    y -= 1;
                }
                self.bd[ix(d)] = x;
                if !odd && fmin <= d && d <= fmax && x <= self.fd[ix(d)] {
                    return (x as usize, y as usize);
                }
                d -= 2;
            }
        }
    }
}

/// Step 4 for one side: `ch` are this side's flags, `other` the other
/// side's, `eq` this side's line classes.
fn shift_boundaries(ch: &mut [bool], other: &[bool], eq: &[usize]) {
    let n = ch.len();
    let oc = |j: isize| j >= 0 && (j as usize) < other.len() && other[j as usize];
    let mut i = 0usize;
    let mut j: isize = 0;
    loop {
        while i < n && !ch[i] {
            while oc(j) {
                j += 1;
            }
            j += 1;
            i += 1;
        }
        if i == n {
            break;
        }
        let mut start = i;
        while i < n && ch[i] {
            i += 1;
        }
        while oc(j) {
            j += 1;
        }
        let mut corresponding;
        loop {
            let runlength = i - start;
            while start > 0 && eq[start - 1] == eq[i - 1] {
                start -= 1;
                ch[start] = true;
                i -= 1;
                ch[i] = false;
                while start > 0 && ch[start - 1] {
                    start -= 1;
                }
                j -= 1;
                while oc(j) {
                    j -= 1;
                }
            }
            corresponding = if oc(j - 1) { i } else { n };
            while i < n && eq[start] == eq[i] {
                ch[start] = false;
                start += 1;
                ch[i] = true;
                i += 1;
                while i < n && ch[i] {
                    i += 1;
                }
                j += 1;
                while oc(j) {
                    corresponding = i;
                    j += 1;
                }
            }
            if runlength == i - start {
                break;
            }
        }
        while corresponding < i {
            start -= 1;
            ch[start] = true;
            i -= 1;
            ch[i] = false;
            j -= 1;
            while oc(j) {
                j -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_aligns_with_other_side() {
        let a: Vec<&[u8]> = vec![b"o\n", b"o\n", b"i\n", b"e\n", b"f\n", b"i\n", b"{\n"];
        let b: Vec<&[u8]> = vec![b"{\n", b"o\n", b"i\n", b"e\n", b"f\n", b"i"];
        let c = changes(&a, &b, 3);
        assert_eq!(c.old, vec![true, false, false, false, false, true, true]);
        assert_eq!(c.new, vec![true, false, false, false, false, true]);
    }
}
