//! The one check of a path read from a patch, a state file or a series
//! before it is joined to a tree: relative, no `..`, not empty.

use std::path::{Component, Path};

use anyhow::{bail, Result};

/// Why `rel` may not be used as a path inside a tree, if it may not:
/// empty, absolute, containing `..`, naming the tree itself, or holding a
/// newline (which would break the line-based state files).
pub fn unsafe_reason(rel: &Path) -> Option<&'static str> {
    if rel.as_os_str().is_empty() {
        return Some("empty file name");
    }
    if rel.to_string_lossy().contains('\n') {
        return Some("contains a newline");
    }
    for c in rel.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => return Some("absolute path"),
            Component::ParentDir => return Some("contains '..'"),
            Component::CurDir | Component::Normal(_) => {}
        }
    }
    if rel.components().all(|c| c == Component::CurDir) {
        return Some("names the tree itself");
    }
    None
}

/// [`unsafe_reason`] as an error naming the path.
pub fn check_relative(rel: &Path) -> Result<()> {
    match unsafe_reason(rel) {
        Some(reason) => bail!("refusing file name {:?}: {reason}", rel),
        None => Ok(()),
    }
}
