//! A patch regenerated from pre-images and the tree, in the bytes that
//! OpenWrt's `make target/linux/refresh` writes: `quilt refresh -p ab
//! --no-index --no-timestamps` with `QUILT_DIFF_OPTS=-p` (quilt 0.66
//! `refresh` and `patchfns`: `patch_header`, `filenames_in_patch`,
//! `files_in_patch_ordered`, `diff_file`).

use std::path::{Path, PathBuf};

use crate::patches::diff;

/// quilt's `patch_header`: the lines before the first line matching
/// `^(---|\*\*\*|Index:)[ \t][^ \t]|^diff -`, each ending in `\n` (awk's
/// `print` adds one to a last line without it).
pub fn header(patch: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in patch.split_inclusive(|&b| b == b'\n') {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        if starts_file(text) {
            break;
        }
        out.extend_from_slice(text);
        out.push(b'\n');
    }
    out
}

fn starts_file(l: &[u8]) -> bool {
    if l.starts_with(b"diff -") {
        return true;
    }
    for lead in [&b"---"[..], b"***", b"Index:"] {
        if let Some(rest) = l.strip_prefix(lead) {
            if rest.len() >= 2
                && matches!(rest[0], b' ' | b'\t')
                && !matches!(rest[1], b' ' | b'\t')
            {
                return true;
            }
        }
    }
    false
}

/// quilt's `filenames_in_patch` for `-p ab`/`-p1`: the names on `---`,
/// `+++` and `***` lines anywhere in the patch (the description included),
/// with everything from the first tab cut, `/dev/null` skipped, the first
/// `dir/` component stripped, in order of first appearance.
pub fn filenames_in_patch(patch: &[u8]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for line in patch.split_inclusive(|&b| b == b'\n') {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let text = String::from_utf8_lossy(text);
        let fields: Vec<&str> = text.split([' ', '\t']).filter(|f| !f.is_empty()).collect();
        let f1 = fields.first().copied().unwrap_or("");
        let f3 = fields.get(2).copied().unwrap_or("");
        let wanted = f1 == "+++" || (f1 == "---" && f3 != "----") || (f1 == "***" && f3 != "****");
        if !wanted {
            continue;
        }
        let cut = text.split('\t').next().unwrap_or("");
        // sub(/^... /, ""): three characters and a space.
        if cut.len() < 4 || !cut.is_char_boundary(4) || cut.as_bytes()[3] != b' ' {
            continue;
        }
        let name = &cut[4..];
        if name.is_empty() || name == "/dev/null" {
            continue;
        }
        // sub(/^[^\/]+\//, ""): one leading component, if there is one.
        let name = match name.find('/') {
            Some(i) if i > 0 => &name[i + 1..],
            _ => name,
        };
        let p = PathBuf::from(name);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// quilt's `files_in_patch_ordered`: the patch's files in the order the
/// existing patch names them, then the others sorted (byte order, `LC_ALL=C`).
pub fn ordered(files: &[PathBuf], existing_patch: &[u8]) -> Vec<PathBuf> {
    let mut sorted = files.to_vec();
    sorted.sort();
    let mut out: Vec<PathBuf> = filenames_in_patch(existing_patch)
        .into_iter()
        .filter(|n| sorted.contains(n))
        .collect();
    for f in sorted {
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// One file of a refreshed patch.
#[derive(Debug, Clone)]
pub struct FileSides {
    /// Path relative to the tree.
    pub path: PathBuf,
    /// Content before the patch; `None` when the file did not exist.
    pub old: Option<Vec<u8>>,
    /// Content after the patch; `None` when the file does not exist.
    pub new: Option<Vec<u8>>,
}

/// quilt's `diff_file` with `-p ab`, no index, no timestamps, `diff -p -u`:
/// an old side that is missing *or empty* is `/dev/null` (quilt tests
/// `-s`), a missing new side is `/dev/null` (`-e`); empty when equal.
///
/// Errors: a side with a NUL byte when the sides differ (GNU diff would say
/// "Binary files … differ" and quilt refresh fails).
pub fn file_diff(f: &FileSides) -> Result<Vec<u8>, String> {
    let path = f.path.to_string_lossy();
    let (old_label, old) = match &f.old {
        Some(o) if !o.is_empty() => (format!("a/{path}"), o.as_slice()),
        _ => ("/dev/null".to_string(), &[][..]),
    };
    let (new_label, new) = match &f.new {
        Some(n) => (format!("b/{path}"), n.as_slice()),
        None => ("/dev/null".to_string(), &[][..]),
    };
    if old == new {
        return Ok(Vec::new());
    }
    if old.contains(&0) || new.contains(&0) {
        return Err(format!("{path}: binary file; quilt refresh cannot diff it"));
    }
    Ok(diff::unified(&old_label, &new_label, old, new))
}

/// The refreshed patch: `existing`'s quilt header, then each file's diff in
/// [`ordered`] order.
///
/// Errors: as [`file_diff`].
pub fn render(existing: &[u8], files: &[FileSides]) -> Result<Vec<u8>, String> {
    let mut out = header(existing);
    let paths: Vec<PathBuf> = files.iter().map(|f| f.path.clone()).collect();
    for p in ordered(&paths, existing) {
        if let Some(f) = files.iter().find(|f| f.path == p) {
            out.extend_from_slice(&file_diff(f)?);
        }
    }
    Ok(out)
}

/// Reads a file's content, `None` when it does not exist (or is not a
/// regular file).
pub fn read_optional(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => std::fs::read(path).map(Some),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_stops_where_quilt_does() {
        let p = b"Subject: x\n---\n--- \n--- a/x\n+++ b/x\n";
        assert_eq!(header(p), b"Subject: x\n---\n--- \n");
        assert_eq!(header(b"no newline"), b"no newline\n");
        assert_eq!(header(b"a\ndiff --git a/x b/x\n"), b"a\n");
        assert_eq!(header(b"Index: x\n"), b"");
    }

    #[test]
    fn names_in_patch_order() {
        let p = b"--- a/z.c\t2020\n+++ b/z.c\n--- /dev/null\n+++ b/a.c\n--- a/z.c\n";
        assert_eq!(
            filenames_in_patch(p),
            vec![PathBuf::from("z.c"), PathBuf::from("a.c")]
        );
        let files = vec![
            PathBuf::from("a.c"),
            PathBuf::from("m.c"),
            PathBuf::from("z.c"),
        ];
        assert_eq!(
            ordered(&files, p),
            vec![
                PathBuf::from("z.c"),
                PathBuf::from("a.c"),
                PathBuf::from("m.c")
            ]
        );
    }
}
