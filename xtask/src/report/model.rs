//! The report model: what was compared and the arithmetic of every change.
//!
//! A [`Report`] holds one [`TargetReport`] per target, each with one
//! [`Comparison`] per variant: artifact sizes and vmlinux sections before
//! and after, in bytes ([`Change`]), and the printed percent
//! ([`format_percent`]).

use std::path::{Path, PathBuf};

use super::load::SymbolOptions;
use crate::measure::bloat::BloatDiff;
use crate::results::BuildResult;

/// A size before and after, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// Size in the base build, bytes.
    pub before: u64,
    /// Size in the variant build, bytes.
    pub after: u64,
}

impl Change {
    /// `after - before`, in bytes (negative when the variant is smaller).
    pub fn delta(&self) -> i64 {
        (self.after as i128 - self.before as i128) as i64
    }

    /// `(after - before) * 100 / before`, in percent; `None` when `before`
    /// is 0 and `after` is not (no meaningful percentage), `Some(0.0)` when
    /// both are 0.
    pub fn percent(&self) -> Option<f64> {
        match (self.before, self.after) {
            (0, 0) => Some(0.0),
            (0, _) => None,
            (b, _) => Some(self.delta() as f64 * 100.0 / b as f64),
        }
    }

    /// [`format_percent`] of this change.
    pub fn percent_text(&self, decimal_comma: bool) -> String {
        format_percent(self.before, self.after, decimal_comma)
    }
}

/// The percent change from `before` to `after` bytes as developers post it:
/// sign always shown, two decimals, `%` appended — `+1.68%`, `-0.37%`.
///
/// Computed exactly in integers (`|after - before| * 10000 / before`
/// hundredths of a percent), rounded half away from zero, so the printed
/// digits are the decimal rounding of the true ratio (C's `%+.2f` rounds
/// the nearest binary double instead and can differ on exact ties such as
/// 0.125%). The sign is the sign of the byte change: a change too small to
/// show prints `+0.00%` or `-0.00%`, which tells growth from shrinkage; no
/// change prints `+0.00%` (as `%+.2f` prints 0.0). When `before` is 0 and
/// `after` is not, there is no percentage and the text is `n/a`.
/// `decimal_comma` writes the decimal separator as `,` (`+1,68%`).
pub fn format_percent(before: u64, after: u64, decimal_comma: bool) -> String {
    if before == 0 {
        return if after == 0 {
            with_separator("+0.00%".to_string(), decimal_comma)
        } else {
            "n/a".to_string()
        };
    }
    let delta = after as i128 - before as i128;
    let sign = if delta < 0 { '-' } else { '+' };
    let magnitude = delta.unsigned_abs();
    let before = before as u128;
    // floor(magnitude * 10000 / before + 1/2): hundredths of a percent.
    let hundredths = (magnitude * 20_000 + before) / (2 * before);
    with_separator(
        format!("{sign}{}.{:02}%", hundredths / 100, hundredths % 100),
        decimal_comma,
    )
}

fn with_separator(text: String, decimal_comma: bool) -> String {
    if decimal_comma {
        text.replace('.', ",")
    } else {
        text
    }
}

/// vmlinux's sections before and after, as binutils `size` (Berkeley
/// format) counts them; all in bytes. `hex` is `dec` printed in hex.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionsChange {
    /// Code and read-only data.
    pub text: Change,
    /// Writable initialised data.
    pub data: Change,
    /// Zero-initialised data.
    pub bss: Change,
    /// text + data + bss.
    pub dec: Change,
}

impl SectionsChange {
    /// The four numeric rows, labelled as `size` labels its columns:
    /// `text`, `data`, `bss`, `dec`.
    pub fn rows(&self) -> [(&'static str, Change); 4] {
        [
            ("text", self.text),
            ("data", self.data),
            ("bss", self.bss),
            ("dec", self.dec),
        ]
    }
}

/// One artifact's size before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactChange {
    /// File name as in `result.json` (`zImage`, `vmlinux`, `vmlinux.lzma`, …).
    pub name: String,
    /// Its size, bytes.
    pub change: Change,
}

/// One base → variant comparison of one target.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The variant's `result.json`.
    pub variant: BuildResult,
    /// The variant's results directory.
    pub dir: PathBuf,
    /// Artifacts present in both builds, in the recorded target's
    /// `artifacts` order (then any others by name).
    pub artifacts: Vec<ArtifactChange>,
    /// Artifacts only one side has: (name, variant that has it).
    pub unpaired_artifacts: Vec<(String, String)>,
    /// vmlinux sections.
    pub sections: SectionsChange,
    /// Differences that make the builds not comparable, reported because
    /// `allow_mismatch` was set (otherwise loading fails). Each is a
    /// sentence naming both values.
    pub warnings: Vec<String>,
    /// Expected differences worth a line (a config changed by the
    /// variant's kconfig lines).
    pub notes: Vec<String>,
    /// The symbol diff base vmlinux → variant vmlinux, when requested.
    pub symbols: Option<BloatDiff>,
}

/// All comparisons of one target against its base build.
#[derive(Debug, Clone)]
pub struct TargetReport {
    /// Target name (its results directory under `target/xtask/results/`).
    pub name: String,
    /// The base build's `result.json`.
    pub base: BuildResult,
    /// The base build's results directory.
    pub base_dir: PathBuf,
    /// One per variant, in the order asked for (default: by name).
    pub comparisons: Vec<Comparison>,
}

/// Everything a report shows.
#[derive(Debug, Clone)]
pub struct Report {
    /// The base variant's name.
    pub base: String,
    /// Workspace root; results paths are shown relative to it.
    pub root: PathBuf,
    /// One per target, in the order asked for (`all`: by name).
    pub targets: Vec<TargetReport>,
    /// Under `all`: targets or variants left out for lack of results, each a
    /// sentence with the command that builds them.
    pub skipped: Vec<String>,
    /// Whether (and how) symbol diffs were computed.
    pub symbols: Option<SymbolOptions>,
}

impl Report {
    /// `path` relative to the workspace root when it is inside it.
    pub fn display_path(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }
}
