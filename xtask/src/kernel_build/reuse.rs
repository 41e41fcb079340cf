//! Patch-only variants start from a finished build: a variant with the same
//! flags and kconfig as another and one more patch (same reuse key,
//! [`super::plan`]) copies that variant's build directory and lets kbuild
//! recompile only what the patch changed.
//!
//! kbuild out of tree (`make -C src O=build`) records the absolute source
//! path in every `.cmd` file (the command line and the dependency list),
//! in the generated `Makefile` and `include/config/auto.conf.cmd`, and
//! compares the command line of each object with the recorded one. So a
//! copied directory is *retargeted*: every text file that names the old
//! tree names the new one (mtimes kept), `source` points at the new tree,
//! and in the new tree each file that is not the old tree's very inode
//! (the files some patch of either series changed) gets a private inode
//! whose mtime is the old file's when the bytes are equal and now when they
//! differ. make then sees exactly the files whose bytes changed as newer
//! than the objects built from the old ones, as it would after editing
//! those files by hand. The output equals a build from scratch
//! (`tests/it/e2e_patch_only.rs` compares the bytes).
//!
//! A build directory is a finished build of its variant while that
//! variant's `result.json` exists: a build removes the result before make
//! runs and writes it last, both under the build lock, so an interrupted
//! or failed build is never a base. The base's reuse key is computed from
//! its result's records, and its source tree is the one its
//! `.xtask-source` names.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result};
use xshell::Shell;

use super::plan::{self, JobInputs, PlannedJob};
use crate::results::BuildResult;
use crate::util::fs::{
    copy_tree, read_bytes_limited, read_limited, write_atomic, CopyKind, FileLimit,
};
use crate::util::layout::Layout;
use crate::util::lock::Lock;

/// A finished build of another variant that `planned` can start from.
struct Base {
    /// The variant.
    variant: String,
    /// Its build directory.
    dir: PathBuf,
    /// The patched tree it was built from.
    source: PathBuf,
    /// How many patches of its series `planned`'s series has too.
    shared: usize,
    /// How many it has that `planned`'s has not: kbuild recompiles what
    /// they changed too.
    extra: usize,
}

/// Fills `build` (the job's build directory, locked by the caller and
/// about to be built from the patched tree `tree`) with a copy of a sibling
/// variant's finished build with the same reuse key, retargeted at `tree`
/// (see the module docs): the one sharing the most patches and, of those,
/// with the fewest others (so `a b` starts from `a b`'s twin rather than
/// from `a b c d`), whose build lock is free. Returns that variant, or
/// `None` when `build` already belongs to `tree` or nothing can be reused
/// (the caller then builds as
/// usual).
///
/// Errors: I/O while copying or retargeting, naming the path; `build` then
/// names no tree in `.xtask-source` and the next build empties it.
pub fn start_from_sibling(
    sh: &Shell,
    layout: &Layout,
    planned: &PlannedJob,
    tree: &Path,
    build: &Path,
) -> Result<Option<String>> {
    if source_of(build).as_deref() == Some(tree) {
        return Ok(None);
    }
    let mut bases = siblings(layout, planned, build);
    order(&mut bases);
    let target = &planned.job.target.name;
    for base in bases {
        let Some(_lock) = Lock::try_acquire(&layout.build_lock(target, &base.variant))? else {
            continue;
        };
        // Checked again under its lock: another run may have rebuilt it.
        if finished_base(layout, planned, &base.dir).map(|b| b.source) != Some(base.source.clone())
        {
            continue;
        }
        if build.exists() {
            std::fs::remove_dir_all(build)
                .with_context(|| format!("emptying {}", build.display()))?;
        }
        copy_tree(sh, &base.dir, build, CopyKind::Full)?;
        // Without its marker until retargeted: if this stops half-way, the
        // next build empties the directory.
        let marker = build.join(SOURCE_MARKER);
        std::fs::remove_file(&marker).with_context(|| format!("removing {}", marker.display()))?;
        retarget(build, &base.source, tree)?;
        std::fs::write(&marker, tree.display().to_string())
            .with_context(|| format!("writing {}", marker.display()))?;
        return Ok(Some(base.variant));
    }
    Ok(None)
}

/// Best base first: most patches shared, then fewest others, then by name.
fn order(bases: &mut [Base]) {
    bases.sort_by(|a, b| {
        (std::cmp::Reverse(a.shared), a.extra, &a.variant).cmp(&(
            std::cmp::Reverse(b.shared),
            b.extra,
            &b.variant,
        ))
    });
}

/// The file in a build directory naming the tree it was built from (as
/// `kbuild::reset_build_dir_for` writes it).
const SOURCE_MARKER: &str = ".xtask-source";

/// The tree a build directory was built from (its `.xtask-source`).
fn source_of(build: &Path) -> Option<PathBuf> {
    let text = read_limited(
        &build.join(SOURCE_MARKER),
        FileLimit::record("source marker"),
        "",
    )
    .ok()?;
    Some(PathBuf::from(text))
}

/// Every other variant's build directory of `planned`'s target that is a
/// finished build with its reuse key.
fn siblings(layout: &Layout, planned: &PlannedJob, build: &Path) -> Vec<Base> {
    let Some(entries) = build.parent().and_then(|d| std::fs::read_dir(d).ok()) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|dir| dir != build && dir.is_dir())
        .filter_map(|dir| finished_base(layout, planned, &dir))
        .collect()
}

/// `dir` as a base for `planned`: its variant's `result.json` exists, has
/// `planned`'s reuse key, and the tree it was built from still exists.
fn finished_base(layout: &Layout, planned: &PlannedJob, dir: &Path) -> Option<Base> {
    let variant = dir.file_name()?.to_str()?.to_string();
    let result = BuildResult::read(&layout.results_dir(&planned.job.target.name, &variant)).ok()?;
    let inputs = JobInputs {
        source: result.kernel_source.clone(),
        compiler: result.compiler.clone(),
        patches: result.patches.clone(),
    };
    let key = plan::reuse_key(&result.backend, &result.target, &result.variant, &inputs);
    let source = source_of(dir)?;
    if key != planned.reuse_key || !source.is_dir() || !kbuild_agrees(dir, &source) {
        return None;
    }
    let shared = result
        .patches
        .iter()
        .filter(|p| planned.inputs.patches.contains(p))
        .count();
    Some(Base {
        variant,
        dir: dir.to_path_buf(),
        source,
        shared,
        extra: result.patches.len() - shared,
    })
}

/// Whether kbuild's own record of the tree `dir` was built from (the
/// `source` link it makes to its srctree) is `source`, which
/// `.xtask-source` names: a marker that lies would make the copy keep the
/// other tree's paths.
fn kbuild_agrees(dir: &Path, source: &Path) -> bool {
    let real = |p: &Path| std::fs::canonicalize(p).ok();
    match (real(&dir.join("source")), real(source)) {
        (Some(linked), Some(named)) => linked == named,
        _ => false,
    }
}

/// Points the build directory `build`, made from the tree `old`, at the
/// tree `new` (see the module docs). kbuild records each tree by its real
/// path (the top Makefile resolves symlinks); a path as given (through a
/// symlinked `target/`) is replaced too.
fn retarget(build: &Path, old: &Path, new: &Path) -> Result<()> {
    let real =
        |p: &Path| std::fs::canonicalize(p).with_context(|| format!("resolving {}", p.display()));
    let (old_real, new_real) = (real(old)?, real(new)?);
    let mut renames = vec![(old_real.as_path(), new_real.as_path())];
    if old != old_real {
        renames.push((old, new));
    }
    rewrite_paths(build, &renames)?;
    let link = build.join("source");
    if link.symlink_metadata().is_ok() {
        std::fs::remove_file(&link).with_context(|| format!("removing {}", link.display()))?;
    }
    std::os::unix::fs::symlink(&new_real, &link)
        .with_context(|| format!("linking {} to {}", link.display(), new_real.display()))?;
    sync_mtimes(&old_real, &new_real)
}

/// Object files, archives and images: never rewritten (they name the
/// source only in host tools' assertions, which kbuild does not read).
fn is_binary_name(name: &str) -> bool {
    const EXTENSIONS: &[&str] = &[
        ".o", ".a", ".ko", ".so", ".lzma", ".gz", ".xz", ".bin", ".dtb", ".elf",
    ];
    const NAMES: &[&str] = &["vmlinux", "zImage", "Image", "uImage", "vmlinux.unstripped"];
    EXTENSIONS.iter().any(|e| name.ends_with(e)) || NAMES.contains(&name)
}

/// Replaces each `(old, new)` path of `renames`, in order, in every text
/// file under `build`, keeping each file's mtime (kbuild compares mtimes,
/// and a rewritten `.cmd` file must not look newer than its object).
fn rewrite_paths(build: &Path, renames: &[(&Path, &Path)]) -> Result<()> {
    let renames: Vec<(String, String)> = renames
        .iter()
        .map(|(o, n)| (o.display().to_string(), n.display().to_string()))
        .collect();
    for entry in walkdir::WalkDir::new(build) {
        let entry = entry.with_context(|| format!("reading {}", build.display()))?;
        let name = entry.file_name().to_string_lossy();
        if !entry.file_type().is_file() || is_binary_name(&name) {
            continue;
        }
        let path = entry.path();
        let bytes = read_bytes_limited(path, FileLimit::binary("build file"), "")?;
        if bytes.contains(&0) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        if !renames.iter().any(|(old, _)| text.contains(old.as_str())) {
            continue;
        }
        let mut text = text.to_string();
        for (old, new) in &renames {
            text = text.replace(old.as_str(), new);
        }
        let mtime = std::fs::symlink_metadata(path)
            .and_then(|m| m.modified())
            .with_context(|| format!("reading the mtime of {}", path.display()))?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        set_mtime(path, mtime)?;
    }
    Ok(())
}

/// Gives each file of `new` that is not `old`'s inode at the same path a
/// private inode: with `old`'s mtime when the bytes are equal, else now.
fn sync_mtimes(old: &Path, new: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    for entry in walkdir::WalkDir::new(new) {
        let entry = entry.with_context(|| format!("reading {}", new.display()))?;
        if !entry.file_type().is_file() {
            continue;
        }
        let path = entry.path();
        let rel = path
            .strip_prefix(new)
            .expect("walkdir stays under its root");
        let Ok(theirs) = std::fs::symlink_metadata(old.join(rel)) else {
            continue;
        };
        let ours = entry
            .metadata()
            .with_context(|| format!("reading {}", path.display()))?;
        if (ours.dev(), ours.ino()) == (theirs.dev(), theirs.ino()) || !theirs.is_file() {
            continue;
        }
        let bytes = read_bytes_limited(path, FileLimit::binary("tree file"), "")?;
        let same = theirs.len() == ours.len()
            && read_bytes_limited(&old.join(rel), FileLimit::binary("tree file"), "")? == bytes;
        // A new inode through rename: the tree's other links (the pristine
        // tree, other series) keep theirs, and a build reading the file
        // sees either inode, both with these bytes.
        write_atomic(path, &bytes)?;
        std::fs::set_permissions(path, ours.permissions())
            .with_context(|| format!("setting the mode of {}", path.display()))?;
        if same {
            set_mtime(path, theirs.modified()?)?;
        }
    }
    Ok(())
}

fn set_mtime(path: &Path, mtime: SystemTime) -> Result<()> {
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(mtime))
        .with_context(|| format!("setting the mtime of {}", path.display()))
}

#[cfg(test)]
mod tests {

    /// A state of size-bisect with the first 21 patches starts from the
    /// state with exactly those, not from the one with all 42 (which shares
    /// as many and would make kbuild undo the other 21).
    #[test]
    fn the_base_with_the_fewest_other_patches_wins_a_tie() {
        let base = |variant: &str, shared, extra| Base {
            variant: variant.to_string(),
            dir: PathBuf::new(),
            source: PathBuf::new(),
            shared,
            extra,
        };
        let mut bases = vec![
            base("all-42", 22, 21),
            base("first-10", 11, 0),
            base("twin-21", 22, 0),
        ];
        order(&mut bases);
        let names: Vec<&str> = bases.iter().map(|b| b.variant.as_str()).collect();
        assert_eq!(names, ["twin-21", "all-42", "first-10"]);
    }

    use super::*;
    use std::os::unix::fs::MetadataExt;
    use std::time::Duration;

    fn mtime(path: &Path) -> SystemTime {
        std::fs::metadata(path).unwrap().modified().unwrap()
    }

    #[test]
    fn only_files_whose_bytes_changed_look_newer() {
        let tmp = tempfile::tempdir().unwrap();
        let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
        std::fs::create_dir_all(old.join("include")).unwrap();
        std::fs::create_dir_all(new.join("include")).unwrap();
        let past = SystemTime::now() - Duration::from_secs(3600);
        let older = past - Duration::from_secs(600);
        // Linked in both trees (no patch touched it).
        std::fs::write(old.join("include/a.h"), "a").unwrap();
        std::fs::hard_link(old.join("include/a.h"), new.join("include/a.h")).unwrap();
        // Patched alike in both series: equal bytes, two inodes.
        std::fs::write(old.join("b.c"), "b").unwrap();
        std::fs::write(new.join("b.c"), "b").unwrap();
        // Changed by the new series' extra patch.
        std::fs::write(old.join("c.c"), "c").unwrap();
        std::fs::write(new.join("c.c"), "c changed").unwrap();
        // Only in the new tree.
        std::fs::write(new.join("d.c"), "d").unwrap();
        for f in ["include/a.h", "b.c", "c.c"] {
            set_mtime(&old.join(f), past).unwrap();
        }
        for f in ["b.c", "c.c", "d.c"] {
            set_mtime(&new.join(f), older).unwrap();
        }
        let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
        let (a_ino, b_ino) = (ino(&new.join("include/a.h")), ino(&new.join("b.c")));

        sync_mtimes(&old, &new).unwrap();

        assert_eq!(ino(&new.join("include/a.h")), a_ino);
        assert_eq!(mtime(&new.join("include/a.h")), past);
        assert_eq!(mtime(&new.join("b.c")), past);
        assert_ne!(ino(&new.join("b.c")), b_ino, "b.c kept its inode");
        assert!(mtime(&new.join("c.c")) > past + Duration::from_secs(3000));
        assert_eq!(
            std::fs::read_to_string(new.join("c.c")).unwrap(),
            "c changed"
        );
        assert_eq!(mtime(&new.join("d.c")), older);
        assert_eq!(mtime(&old.join("c.c")), past, "the old tree changed");
    }

    #[test]
    fn a_marker_kbuild_does_not_agree_with_is_not_a_base() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, dir) = (
            tmp.path().join("a"),
            tmp.path().join("b"),
            tmp.path().join("build"),
        );
        for d in [&a, &b, &dir] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::os::unix::fs::symlink(&a, dir.join("source")).unwrap();
        assert!(kbuild_agrees(&dir, &a));
        assert!(!kbuild_agrees(&dir, &b));
        assert!(!kbuild_agrees(&tmp.path().join("none"), &a));
    }

    #[test]
    fn text_files_name_the_new_tree_and_keep_their_mtimes() {
        let tmp = tempfile::tempdir().unwrap();
        let build = tmp.path().join("build");
        std::fs::create_dir_all(build.join("init")).unwrap();
        let (old, new) = (Path::new("/src/6.12-aaaa"), Path::new("/src/6.12-bbbb"));
        let cmd = build.join("init/.main.o.cmd");
        std::fs::write(
            &cmd,
            "savedcmd_init/main.o := gcc -I/src/6.12-aaaa/include\n",
        )
        .unwrap();
        let object = build.join("init/main.o");
        std::fs::write(&object, b"\x7fELF\0/src/6.12-aaaa/x").unwrap();
        let past = SystemTime::now() - Duration::from_secs(3600);
        set_mtime(&cmd, past).unwrap();

        rewrite_paths(&build, &[(old, new)]).unwrap();

        assert_eq!(
            std::fs::read_to_string(&cmd).unwrap(),
            "savedcmd_init/main.o := gcc -I/src/6.12-bbbb/include\n"
        );
        assert_eq!(mtime(&cmd), past);
        assert_eq!(
            std::fs::read(&object).unwrap(),
            b"\x7fELF\0/src/6.12-aaaa/x"
        );
    }
}
