//! Where the symbolic links a patch creates lead once the whole patch is
//! applied.
//!
//! Each link's target is checked alone when its file diff is applied
//! ([`super::fsops::symlink_target_problem`]: relative, inside the tree
//! lexically, not through a link already on disk). Links of one patch can
//! still combine: with `a/b/up → ../..` (the tree root) in the same patch,
//! `a/b/out → up/../../..` is inside lexically and leads to `/`, in
//! either order of the two diffs. So once every file diff is planned, each
//! new link is resolved as the kernel resolves a path
//! ([`leads_out`]): component by component from the link's directory,
//! following every link of the tree as the patch leaves it (created ones
//! and those on disk), each `..` from the directory a link led to. A link
//! that leaves the tree that way is refused.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Links followed on one path before giving up, as Linux's `ELOOP`
/// (`MAXSYMLINKS`, 40).
const MAX_LINKS: usize = 40;

/// Why the link `link` (relative to the tree) leads out of the tree, if
/// it does. `link_at(p)` says what the tree as the patch leaves it has at
/// `p` (relative): a link's target, or `None` for anything else (a file,
/// a directory, nothing).
pub(crate) fn leads_out(
    link: &Path,
    link_at: &mut dyn FnMut(&Path) -> Option<Vec<u8>>,
) -> Option<String> {
    let start: Vec<OsString> = link
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            _ => None,
        })
        .collect();
    let target = link_at(link)?;
    let mut followed = 0;
    resolve(start, &target, link_at, &mut followed).err()
}

fn resolve(
    mut at: Vec<OsString>,
    target: &[u8],
    link_at: &mut dyn FnMut(&Path) -> Option<Vec<u8>>,
    followed: &mut usize,
) -> Result<Vec<OsString>, String> {
    let target = Path::new(std::ffi::OsStr::from_bytes(target));
    for c in target.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("it reaches {}, an absolute path", target.display()))
            }
            Component::CurDir => {}
            Component::ParentDir => {
                if at.pop().is_none() {
                    return Err("it leads above the tree through the links on its way".to_string());
                }
            }
            Component::Normal(n) => {
                at.push(n.to_os_string());
                let here: PathBuf = at.iter().collect();
                if let Some(next) = link_at(&here) {
                    *followed += 1;
                    if *followed > MAX_LINKS {
                        return Err(format!(
                            "it goes through more than {MAX_LINKS} links (a loop at {})",
                            here.display()
                        ));
                    }
                    at.pop();
                    at = resolve(at, &next, link_at, followed)?;
                }
            }
        }
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn out(links: &[(&str, &str)], link: &str) -> Option<String> {
        let map: BTreeMap<PathBuf, Vec<u8>> = links
            .iter()
            .map(|(l, t)| (PathBuf::from(l), t.as_bytes().to_vec()))
            .collect();
        leads_out(Path::new(link), &mut |p| map.get(p).cloned())
    }

    #[test]
    fn links_are_followed_as_the_kernel_follows_them() {
        let up = ("a/b/up", "../..");
        let escape = ("a/b/out", "up/../../..");
        assert_eq!(out(&[up, escape], "a/b/up"), None);
        assert!(out(&[up, escape], "a/b/out")
            .unwrap()
            .contains("above the tree"));
        // Through a real directory, `..` is where it looks.
        assert_eq!(out(&[("d/l", "../sub/../x")], "d/l"), None);
        assert_eq!(out(&[up, ("a/b/in", "up/x/../y")], "a/b/in"), None);
        let lp = [("l1", "l2"), ("l2", "l1")];
        assert!(out(&lp, "l1").unwrap().contains("loop"));
        assert!(out(&[("x", "y"), ("y", "/etc")], "x")
            .unwrap()
            .contains("absolute"));
    }
}
