//! The rebase's classifier ([`classify`]): clean, offset, fuzz, upstream
//! (with how the change was found, [`Upstream`]) or conflict, from dry
//! runs of the engine on the new tree.

use std::path::Path;

use anyhow::{anyhow, Context, Result};

use super::present::additions_present;
use super::state::Class;
use crate::patches::engine::{
    check_patch, reverse_applies, ApplyError, ApplyOptions, ApplyReport, HunkOutcome, Patch,
};

/// Why a patch is `upstream`: how its changes were found in the new kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    /// It does not apply, but applies in reverse.
    Reversed,
    /// It applies forwards (somewhere) and in reverse: the change is there,
    /// and applying it would repeat it.
    BothWays,
    /// It applies forwards, but every line it adds is already next to
    /// where it matched ([`additions_present`]).
    AddedLinesPresent,
}

impl Upstream {
    /// The words a result's note gives for it.
    pub fn note(self) -> &'static str {
        match self {
            Upstream::Reversed => "applies in reverse: already in the new kernel",
            Upstream::BothWays => {
                "applies both ways (forwards elsewhere, and in reverse): already in the new kernel; applying it would repeat its change"
            }
            Upstream::AddedLinesPresent => {
                "applies forwards, but every line it adds is already there next to its context: already in the new kernel; applying it would add them twice"
            }
        }
    }
}

/// What the classifier says of one patch.
#[derive(Debug, Clone)]
pub struct ClassReport {
    /// Its class.
    pub class: Class,
    /// The dry run: of applying it (clean, offset, fuzz; conflict: the
    /// failed run); empty for `upstream`.
    pub report: ApplyReport,
    /// For `upstream`: how the change was found.
    pub upstream: Option<Upstream>,
}

impl ClassReport {
    fn upstream(why: Upstream) -> ClassReport {
        ClassReport {
            class: Class::Upstream,
            report: ApplyReport::default(),
            upstream: Some(why),
        }
    }
}

/// The rebase's classifier: how `patch` fares on `tree`, which is not
/// changed. `upstream` when every change of it is already there: it
/// applies in reverse (whether or not it also applies forwards somewhere,
/// as a patch whose old context survives elsewhere does; then without
/// fuzz, as a hunk that only deletes lines reverse-applies with fuzz
/// wherever its outer context lines meet), or it applies
/// forwards but only adds lines that are already next to its context
/// ([`additions_present`]); else `clean`, `offset` or `fuzz` (the largest
/// of any hunk) with the report of the dry run when it applies; `conflict`
/// with the failed report otherwise.
///
/// Errors: refusals of the engine (unsafe names, symbolic links, binary
/// diffs) and I/O errors.
pub fn classify(tree: &Path, patch: &Patch, opts: &ApplyOptions) -> Result<ClassReport> {
    let reverses = |opts: &ApplyOptions| -> Result<bool> {
        reverse_applies(tree, patch, opts)
            .map_err(|e| anyhow!(e))
            .context("checking whether it applies in reverse")
    };
    let failed = match check_patch(tree, patch, opts) {
        Ok(report) => {
            // Without fuzz: a hunk that only deletes lines reverse-applies
            // with fuzz wherever its outer context lines meet.
            if reverses(&ApplyOptions { fuzz: 0, ..*opts })? {
                return Ok(ClassReport::upstream(Upstream::BothWays));
            }
            if additions_present(tree, patch, &report, opts.fuzz)
                .context("checking whether its added lines are there")?
            {
                return Ok(ClassReport::upstream(Upstream::AddedLinesPresent));
            }
            let mut fuzz = 0;
            let mut offset = false;
            for h in report.files.iter().flat_map(|f| &f.hunks) {
                if let HunkOutcome::Applied {
                    fuzz: f, offset: o, ..
                } = *h
                {
                    fuzz = fuzz.max(f);
                    offset |= o != 0;
                }
            }
            let class = if fuzz > 0 {
                Class::Fuzz
            } else if offset {
                Class::Offset
            } else {
                Class::Clean
            };
            return Ok(ClassReport {
                class,
                report,
                upstream: None,
            });
        }
        Err(ApplyError::Reversed { .. }) => return Ok(ClassReport::upstream(Upstream::Reversed)),
        Err(ApplyError::Failed(report)) => report,
        Err(e) => return Err(anyhow!(e)),
    };
    if reverses(opts)? {
        return Ok(ClassReport::upstream(Upstream::Reversed));
    }
    Ok(ClassReport {
        class: Class::Conflict,
        report: failed,
        upstream: None,
    })
}
