//! Unified-diff patch engine with GNU patch 2.7 semantics.
//!
//! * [`parse_patch`] reads a patch file into a [`Patch`] (description,
//!   file diffs, hunks): plain unified diffs and `diff --git` with its
//!   extended headers (modes, creation, deletion, renames, copies).
//! * [`apply_patch`] applies it to a directory, all-or-nothing, locating
//!   hunks as GNU patch 2.7 does (offsets, fuzz) and reporting each hunk's
//!   outcome in GNU's words ([`ApplyReport::render`]).
//! * [`check_patch`], [`reverse_applies`], [`apply_patch_reverse`]: dry
//!   runs and `-R`; a patch that only applies the other way round is
//!   reported as [`ApplyError::Reversed`].
//! * [`apply_patch_forced`]: `patch -f`, as quilt and OpenWrt apply series.
//! * [`render_rejects`]/[`write_rejects`]: `.rej` files, on request.
//!
//! Submodules: `parse` (patch text → model), `headers` (file headers,
//! git extended headers), `locate` (where a hunk goes),
//! `text` (hunks applied to one file's bytes), `apply` (the tree, all or
//! nothing), `fsops` (safe writes into hard-linked trees), `report`,
//! `reject`, `error`.

mod apply;
mod context;
mod diagnostics;
mod error;
mod fsops;
mod headers;
mod links;
mod locate;
mod model;
mod parse;
mod reject;
mod report;
mod text;
mod unified;

use std::path::Path;

use anyhow::Context as _;

pub use apply::ApplyOptions;
pub use diagnostics::{ParseError, ParseErrorKind, ParseWarning, ParseWarningKind};
pub use error::ApplyError;
pub use model::{FileName, FileOp, FilePatch, Hunk, HunkLine, LineKind, Patch};
pub use parse::parse_patch;
pub use reject::{render_rejects, write_rejects};
pub use report::{hunk_message, ApplyReport, FileProblem, FileReport, HunkOutcome};

/// Applies one parsed patch to the directory `tree`, all-or-nothing: every
/// hunk of every file is located first; only when all succeed are files
/// written. On failure the tree is unchanged and the error names the file,
/// the hunk number and the line ("Hunk #2 FAILED at 120").
///
/// Hunks are located as GNU patch 2.7 locates them (see `locate`): at the
/// expected line plus the offset of the file's earlier hunks, then +1, −1,
/// +2, −2 … over the whole file, every position at fuzz 0 before any at
/// fuzz 1, never at or before the last line the previous hunk of the file
/// consumed (GNU 2.7.6 `last_frozen_line`), so repeated identical hunks go
/// to successive sites, not all to the first.
///
/// Files are never opened for writing: new content is written to a temporary
/// file in the same directory and renamed over the old name (breaking any
/// hard link to a pristine tree); the permission bits are kept, or set from
/// git's `new mode`/`new file mode`. A deletion unlinks the file and then its
/// parent directories while they are empty, as GNU patch does.
///
/// A git diff creating a symbolic link (`new file mode 120000`, the target
/// as its one line) creates the link, as GNU patch does, when the target
/// is relative and resolves inside the tree without passing a symbolic
/// link.
///
/// Errors: [`ApplyError::Failed`] (with the per-hunk report),
/// [`ApplyError::Reversed`] when every hunk applies the other way round
/// (reversed or already applied), and refusals with nothing written:
/// absolute or `..` names, a symbolic link anywhere on a path inside the tree,
/// binary diffs, links whose target leaves the tree, files turned into links
/// and other non-regular file types ([`ApplyError::SpecialFile`]).
pub fn apply_patch(
    tree: &Path,
    patch: &Patch,
    opts: &ApplyOptions,
) -> Result<ApplyReport, ApplyError> {
    apply::run(tree, patch, opts, false, true, false)
}

/// [`apply_patch`] as `patch -f` applies, which is how quilt's `push` and
/// OpenWrt's `scripts/patch-kernel.sh` run GNU patch: hunks are only tried
/// forwards, so a patch is never skipped as "Reversed (or previously
/// applied)"; a file whose hunks do not match fails like any other
/// ([`ApplyError::Failed`], never [`ApplyError::Reversed`]). A hunk that
/// matches backwards at fuzz 0 but forwards only with fuzz 1 or 2 applies
/// (without `-f`, GNU would have called the patch reversed).
///
/// When the patch applies, [`ApplyReport::applies_in_reverse`] says whether
/// it would also have applied the other way round, exactly, to the tree as
/// it was (a hint that it is already there); checking that costs a second
/// pass only when the first hunk of the first file matches backwards.
pub fn apply_patch_forced(
    tree: &Path,
    patch: &Patch,
    opts: &ApplyOptions,
) -> Result<ApplyReport, ApplyError> {
    apply::run(tree, patch, opts, false, true, true)
}

/// [`apply_patch`] of the reversed patch (`patch -R`). A patch that applies
/// forwards instead is [`ApplyError::Reversed`] with `reverse: true`.
pub fn apply_patch_reverse(
    tree: &Path,
    patch: &Patch,
    opts: &ApplyOptions,
) -> Result<ApplyReport, ApplyError> {
    apply::run(tree, patch, opts, true, true, false)
}

/// [`apply_patch`] without writing anything (`patch --dry-run`): the report,
/// or the error `apply_patch` would return.
pub fn check_patch(
    tree: &Path,
    patch: &Patch,
    opts: &ApplyOptions,
) -> Result<ApplyReport, ApplyError> {
    apply::run(tree, patch, opts, false, false, false)
}

/// [`apply_patch_forced`] without writing anything (`patch -f --dry-run`).
pub fn check_patch_forced(
    tree: &Path,
    patch: &Patch,
    opts: &ApplyOptions,
) -> Result<ApplyReport, ApplyError> {
    apply::run(tree, patch, opts, false, false, true)
}

/// Whether every hunk of every file of `patch` applies in reverse to `tree`,
/// i.e. the tree already contains the patch (it went upstream, or was applied
/// before). Writes nothing. Refusals (unsafe names, symlinks, binary diffs)
/// and I/O errors are errors; a mismatch is `Ok(false)`.
pub fn reverse_applies(
    tree: &Path,
    patch: &Patch,
    opts: &ApplyOptions,
) -> Result<bool, ApplyError> {
    apply::applies(tree, patch, opts, true)
}

/// `name` without its first `strip` leading components, as `patch -pN`
/// strips them (each run of slashes is one separator); `None` when it has
/// fewer components. Lets callers name the files a patch will touch
/// (e.g. to save their pre-images) before applying it.
pub fn strip_components(name: &Path, strip: usize) -> Option<std::path::PathBuf> {
    apply::strip_name(name, strip)
}

/// Reads, parses and applies the patch file `patch_file` to `tree` (see
/// [`apply_patch`]). Errors name the patch file and, for parse errors, its
/// line; for failed hunks, the target file, the hunk number and the line.
pub fn apply_patch_file(
    tree: &Path,
    patch_file: &Path,
    opts: &ApplyOptions,
) -> anyhow::Result<ApplyReport> {
    let bytes = std::fs::read(patch_file)
        .with_context(|| format!("reading patch {}", patch_file.display()))?;
    let patch = parse_patch(&bytes)
        .map_err(|e| anyhow::anyhow!("{}:{}: {}", patch_file.display(), e.line, e))?;
    apply_patch(tree, &patch, opts).with_context(|| {
        format!(
            "applying {} to {} (-p{}, fuzz {})",
            patch_file.display(),
            tree.display(),
            opts.strip,
            opts.fuzz
        )
    })
}
