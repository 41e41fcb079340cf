//! Safe file access inside the tree being patched.
//!
//! The tree may be a `cp -al` copy of a pristine tree: an existing file is
//! never opened for writing. New content goes to a temporary file in the
//! same directory which is then renamed over the old name, so the old inode
//! (shared with the pristine copy) is left alone. Paths must be relative,
//! without `..`, and no component inside the tree may be a symbolic link.

use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::error::ApplyError;

pub(crate) use crate::util::path::unsafe_reason;

/// Why a symbolic link `tree/rel` pointing to `target` may not be created,
/// if it may not: the target must be a relative path that, resolved from
/// the link's directory without following links, stays inside the tree,
/// and no existing component of the resolved path may be a symbolic link.
/// How the links of one patch combine is checked once the whole patch is
/// planned ([`super::links`]).
pub(crate) fn symlink_target_problem(
    tree: &Path,
    rel: &Path,
    target: &[u8],
) -> Option<&'static str> {
    if target.is_empty() || target.contains(&0) || target.contains(&b'\n') {
        return Some("not a usable link target");
    }
    let target = Path::new(std::ffi::OsStr::from_bytes(target));
    let inside = match crate::util::path::link_target_in_tree(rel, target) {
        Ok(inside) => inside,
        Err(why) => return Some(why),
    };
    match check_no_symlink(tree, &inside) {
        Ok(()) => None,
        Err(_) => Some("the target is reached through a symbolic link"),
    }
}

fn io_err(path: &Path, error: io::Error) -> ApplyError {
    ApplyError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// Refuses `rel` if any existing component of `tree/rel` is a symbolic link.
pub(crate) fn check_no_symlink(tree: &Path, rel: &Path) -> Result<(), ApplyError> {
    let mut p = tree.to_path_buf();
    for c in rel.components() {
        if let Component::Normal(name) = c {
            p.push(name);
            match fs::symlink_metadata(&p) {
                Ok(m) if m.file_type().is_symlink() => return Err(ApplyError::Symlink(p)),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(io_err(&p, e)),
            }
        }
    }
    Ok(())
}

/// Reads `tree/rel`: its bytes and permission bits (`mode & 0o777`), or
/// `None` if it does not exist. Symlinks and non-files are refused.
pub(crate) fn read_file(tree: &Path, rel: &Path) -> Result<Option<(Vec<u8>, u32)>, ApplyError> {
    check_no_symlink(tree, rel)?;
    let p = tree.join(rel);
    match fs::symlink_metadata(&p) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(&p, e)),
        Ok(m) if !m.is_file() => Err(ApplyError::NotAFile(p)),
        Ok(m) => {
            let bytes = fs::read(&p).map_err(|e| io_err(&p, e))?;
            Ok(Some((bytes, m.permissions().mode() & 0o777)))
        }
    }
}

/// A temporary file holding a target's new content, not yet in place.
pub(crate) struct Staged {
    tmp: PathBuf,
    target: PathBuf,
}

/// Changes made so far by [`stage`], undone by [`Staging::abort`].
#[derive(Default)]
pub(crate) struct Staging {
    staged: Vec<Staged>,
    created_dirs: Vec<PathBuf>,
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

impl Staging {
    /// Writes `data` to a new temporary file next to `tree/rel`, with
    /// permission bits `mode` (or the umask default for `None`), creating
    /// missing parent directories. A `mode` of type symbolic link
    /// (`0o120000`) makes the temporary a symbolic link to `data` instead.
    pub fn stage(
        &mut self,
        tree: &Path,
        rel: &Path,
        data: &[u8],
        mode: Option<u32>,
    ) -> Result<(), ApplyError> {
        check_no_symlink(tree, rel)?;
        let target = tree.join(rel);
        let dir = target.parent().unwrap_or(tree).to_path_buf();
        self.create_dirs(&dir)?;
        let base = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let tmp = dir.join(format!(".{base}.xtask-patch.{}.{n}", std::process::id()));
            if mode.is_some_and(|m| m & 0o170000 == 0o120000) {
                let link_to = std::ffi::OsStr::from_bytes(data);
                match std::os::unix::fs::symlink(link_to, &tmp) {
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(io_err(&tmp, e)),
                    Ok(()) => {}
                }
                self.staged.push(Staged {
                    tmp,
                    target: target.clone(),
                });
                return Ok(());
            }
            let file = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o666)
                .open(&tmp);
            let mut file = match file {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_err(&tmp, e)),
                Ok(f) => f,
            };
            self.staged.push(Staged {
                tmp: tmp.clone(),
                target: target.clone(),
            });
            file.write_all(data).map_err(|e| io_err(&tmp, e))?;
            if let Some(mode) = mode {
                fs::set_permissions(&tmp, fs::Permissions::from_mode(mode & 0o777))
                    .map_err(|e| io_err(&tmp, e))?;
            }
            return Ok(());
        }
    }

    fn create_dirs(&mut self, dir: &Path) -> Result<(), ApplyError> {
        let mut missing = Vec::new();
        let mut d = dir;
        while !d.exists() {
            missing.push(d.to_path_buf());
            match d.parent() {
                Some(p) => d = p,
                None => break,
            }
        }
        for d in missing.into_iter().rev() {
            fs::create_dir(&d).map_err(|e| io_err(&d, e))?;
            self.created_dirs.push(d);
        }
        Ok(())
    }

    /// Removes the temporary files and the directories created for them.
    pub fn abort(self) {
        for s in &self.staged {
            let _ = fs::remove_file(&s.tmp);
        }
        for d in self.created_dirs.iter().rev() {
            let _ = fs::remove_dir(d);
        }
    }

    /// Renames every temporary file over its target.
    pub fn commit(self) -> Result<(), ApplyError> {
        for (i, s) in self.staged.iter().enumerate() {
            if let Err(e) = fs::rename(&s.tmp, &s.target) {
                for rest in &self.staged[i..] {
                    let _ = fs::remove_file(&rest.tmp);
                }
                return Err(io_err(&s.target, e));
            }
        }
        Ok(())
    }
}

/// Unlinks `tree/rel`, then removes its parent directories inside the tree
/// while they are empty (as GNU patch's `removedirs` does).
pub(crate) fn delete(tree: &Path, rel: &Path) -> Result<(), ApplyError> {
    check_no_symlink(tree, rel)?;
    let p = tree.join(rel);
    fs::remove_file(&p).map_err(|e| io_err(&p, e))?;
    let mut dir = rel.parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
        if fs::remove_dir(tree.join(d)).is_err() {
            break;
        }
        dir = d.parent();
    }
    Ok(())
}
