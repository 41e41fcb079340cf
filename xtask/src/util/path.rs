//! The one check of a path read from a patch, a state file or a series
//! before it is joined to a tree: relative, no `..`, not empty.

use std::path::{Component, Path, PathBuf};

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

/// Where a symbolic link at `link` (relative to a tree) pointing to
/// `target` leads, resolved from the link's directory without following
/// any link: the path relative to the tree, or why it leaves the tree
/// (an absolute target, more `..` than the link is deep).
pub fn link_target_in_tree(link: &Path, target: &Path) -> Result<PathBuf, &'static str> {
    let mut resolved: Vec<&std::ffi::OsStr> = link
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    for c in target.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => return Err("the target is absolute"),
            Component::ParentDir => {
                if resolved.pop().is_none() {
                    return Err("the target is outside the tree");
                }
            }
            Component::CurDir => {}
            Component::Normal(n) => resolved.push(n),
        }
    }
    Ok(resolved.iter().collect())
}

/// [`unsafe_reason`] as an error naming the path.
pub fn check_relative(rel: &Path) -> Result<()> {
    match unsafe_reason(rel) {
        Some(reason) => bail!("refusing file name {:?}: {reason}", rel),
        None => Ok(()),
    }
}

/// Checks that `value` (a file's `field`) is non-empty and made
/// only of ASCII letters, digits and the characters in `extra`, and does not
/// start with `-`: every field ends up on make's command line or in a path,
/// where `$`, `=`, a space or a leading `-` would be make syntax or an
/// option (`make_targets = ["KCFLAGS=$(shell …)"]`), and has no `.` or
/// `..` component. Target files' fields and names are checked so
/// (`targets/*.toml`), and so are the names a `lab.json` joins to
/// a path.
pub fn check_plain(field: &str, value: &str, extra: &str) -> Result<()> {
    if value.is_empty() {
        bail!("{field} is empty");
    }
    if value.starts_with('-') {
        bail!("{field} = {value:?} starts with '-', which make would take as an option");
    }
    if let Some(c) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || extra.contains(*c)))
    {
        bail!(
            "{field} = {value:?} contains {c:?}; only letters, digits and {extra:?} are allowed \
             (the value reaches make's command line or a path)"
        );
    }
    if value.split('/').any(|part| part == ".." || part == ".") {
        bail!("{field} = {value:?} has a '.' or '..' component");
    }
    Ok(())
}
