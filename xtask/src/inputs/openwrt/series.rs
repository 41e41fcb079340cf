//! The kernel patch series of an OpenWrt target, in the order OpenWrt
//! applies it, and the `files/` overlays copied into the tree before it.
//!
//! include/quilt.mk `Kernel/Patch/Default`:
//!
//! 1. copies `$(GENERIC_FILES_DIR)` then `$(FILES_DIR)` into the tree
//!    (`cp -fpR DIR/. $(LINUX_DIR)/`): `target/linux/generic/files`,
//!    `generic/files-<kver>`, then the board's `files` and `files-<kver>`,
//!    each when it exists (include/target.mk, include/kernel.mk); a later
//!    directory's file replaces an earlier one's;
//! 2. removes `*.rej` and `*.orig` files from the tree;
//! 3. fails when `generic/patches-<kver>` (or `generic/patches`) exists;
//! 4. applies `$(GENERIC_BACKPORT_DIR)`, `$(GENERIC_PATCH_DIR)`,
//!    `$(GENERIC_HACK_DIR)` and the board's `$(PATCH_DIR)`: `backport-<kver>`,
//!    `pending-<kver>`, `hack-<kver>`, `patches-<kver>`, each falling back to
//!    the name without `-<kver>` when that directory does not exist.
//!
//! Each directory goes through `PatchDir/Default`: skipped when missing or
//! when `ls` lists nothing; with a non-empty `series` file, its entries in
//! order (comments after `#` removed, lines without a letter or digit
//! dropped, split on white space as `xargs -n1` does); otherwise
//! scripts/patch-kernel.sh's `for i in $patchdir/*`: every entry not
//! starting with `.`, sorted in byte order (OpenWrt's top-level Makefile
//! exports `LC_ALL=C`), subdirectories skipped ("Ignoring subdirectory"),
//! `.gz`/`.bz`/`.bz2`/`.xz`/`.zst` decompressed, anything else applied as
//! plain text whatever its name.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::Checkout;

/// Which of OpenWrt's four patch directories a patch comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// `target/linux/generic/backport-<kver>`: upstream backports.
    GenericBackport,
    /// `target/linux/generic/pending-<kver>`: patches sent upstream.
    GenericPending,
    /// `target/linux/generic/hack-<kver>`: OpenWrt-only changes.
    GenericHack,
    /// `target/linux/<board>/patches-<kver>`: the board's own patches.
    Platform,
}

impl Group {
    /// The quilt subdirectory include/quilt.mk files the group's patches
    /// under (`generic-backport/`, `generic/`, `generic-hack/`, `platform/`).
    pub fn quilt_prefix(self) -> &'static str {
        match self {
            Group::GenericBackport => "generic-backport/",
            Group::GenericPending => "generic/",
            Group::GenericHack => "generic-hack/",
            Group::Platform => "platform/",
        }
    }
}

/// One patch directory of the series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchDirectory {
    /// Its group.
    pub group: Group,
    /// The directory (may not exist: then it contributes nothing).
    pub dir: PathBuf,
}

/// How a patch file is stored, from its name (scripts/patch-kernel.sh's `case`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Plain text (`cat`): every name not listed below.
    Plain,
    /// `.gz` (`gunzip -dc`).
    Gzip,
    /// `.bz`/`.bz2` (`bunzip2 -dc`).
    Bzip2,
    /// `.xz` (`xz -dc`).
    Xz,
    /// `.zst` (`zstd -dc`).
    Zstd,
}

impl Compression {
    /// The compression a file name says it has.
    pub fn of(name: &str) -> Compression {
        if name.ends_with(".gz") {
            Compression::Gzip
        } else if name.ends_with(".bz") || name.ends_with(".bz2") {
            Compression::Bzip2
        } else if name.ends_with(".xz") {
            Compression::Xz
        } else if name.ends_with(".zst") {
            Compression::Zstd
        } else {
            Compression::Plain
        }
    }

    /// The program that writes the plain text to stdout (`-dc FILE`);
    /// `None` for plain text.
    pub fn decompressor(self) -> Option<&'static str> {
        match self {
            Compression::Plain => None,
            Compression::Gzip => Some("gzip"),
            Compression::Bzip2 => Some("bzip2"),
            Compression::Xz => Some("xz"),
            Compression::Zstd => Some("zstd"),
        }
    }
}

/// One patch of the series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesEntry {
    /// Its directory's group.
    pub group: Group,
    /// The patch file in the checkout.
    pub file: PathBuf,
    /// Its quilt name, e.g. `platform/200-add-ralink-eth.patch` (include/quilt.mk).
    pub name: String,
    /// How to read it.
    pub compression: Compression,
}

/// The four patch directories of `board` for kernel series `kver`, in
/// application order (include/target.mk `GENERIC_*_DIR`, include/kernel.mk
/// `PATCH_DIR`).
///
/// Errors as include/quilt.mk does when `generic/patches-<kver>` (or
/// `generic/patches`) exists.
pub fn patch_directories(
    checkout: &Checkout,
    board: &str,
    kver: &str,
) -> Result<Vec<PatchDirectory>> {
    let generic = checkout.generic_dir();
    let versioned = |dir: &Path, base: &str| {
        let with = dir.join(format!("{base}-{kver}"));
        if with.is_dir() {
            with
        } else {
            dir.join(base)
        }
    };
    let stray = versioned(&generic, "patches");
    if stray.is_dir() {
        bail!(
            "{}: generic patches directory is present (include/quilt.mk refuses it); \
             move its patches to {}",
            stray.display(),
            versioned(&generic, "pending").display()
        );
    }
    Ok(vec![
        PatchDirectory {
            group: Group::GenericBackport,
            dir: versioned(&generic, "backport"),
        },
        PatchDirectory {
            group: Group::GenericPending,
            dir: versioned(&generic, "pending"),
        },
        PatchDirectory {
            group: Group::GenericHack,
            dir: versioned(&generic, "hack"),
        },
        PatchDirectory {
            group: Group::Platform,
            dir: versioned(&checkout.board_dir(board), "patches"),
        },
    ])
}

/// Names in `dir` that `ls` and the shell's `*` list: not starting with
/// `.`, sorted in byte order (`LC_ALL=C`).
fn visible_names(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let name = entry.file_name().into_string().map_err(|n| {
            anyhow::anyhow!("{}: file name {n:?} is not UTF-8; rename it", dir.display())
        })?;
        if !name.starts_with('.') {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// The entries of a `series` file as include/quilt.mk's `filter_series`
/// and `xargs -n1` produce them: text after `#` removed, lines without an
/// ASCII letter or digit dropped, the rest split on white space.
pub fn series_file_entries(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or_default())
        .filter(|l| l.bytes().any(|b| b.is_ascii_alphanumeric()))
        .flat_map(|l| l.split_whitespace().map(str::to_string))
        .collect()
}

/// The patches of one directory, in order, as `PatchDir/Default` and
/// scripts/patch-kernel.sh take them (see the module docs).
///
/// Errors name a `series` entry that does not exist in the directory.
pub fn directory_entries(pd: &PatchDirectory) -> Result<Vec<SeriesEntry>> {
    if !pd.dir.is_dir() {
        return Ok(Vec::new());
    }
    let visible = visible_names(&pd.dir)?;
    if visible.is_empty() {
        return Ok(Vec::new());
    }
    let series_file = pd.dir.join("series");
    let is_series = std::fs::metadata(&series_file).is_ok_and(|m| m.is_file() && m.len() > 0);
    let names = if is_series {
        let text = crate::util::fs::read_limited(
            &series_file,
            crate::util::fs::FileLimit::input("series file of an OpenWrt checkout"),
            "restore it in the OpenWrt checkout",
        )?;
        let names = series_file_entries(&text);
        for name in &names {
            if !pd.dir.join(name).exists() {
                bail!(
                    "{}: lists {name:?}, which is not in {}; fix the series file or add the patch",
                    series_file.display(),
                    pd.dir.display()
                );
            }
        }
        names
    } else {
        visible
    };
    Ok(names
        .into_iter()
        .map(|name| (pd.dir.join(&name), name))
        .filter(|(file, _)| !file.is_dir())
        .map(|(file, name)| SeriesEntry {
            group: pd.group,
            compression: Compression::of(&name),
            name: format!("{}{name}", pd.group.quilt_prefix()),
            file,
        })
        .collect())
}

/// The whole series of `board` for kernel series `kver`, in OpenWrt's order.
pub fn series(checkout: &Checkout, board: &str, kver: &str) -> Result<Vec<SeriesEntry>> {
    let mut all = Vec::new();
    for pd in patch_directories(checkout, board, kver)? {
        all.extend(directory_entries(&pd)?);
    }
    Ok(all)
}

/// The overlay directories, in copy order: generic `files`, `files-<kver>`,
/// then the board's (include/target.mk `GENERIC_FILES_DIR`, include/kernel.mk
/// `FILES_DIR`); only those that exist.
pub fn overlay_dirs(checkout: &Checkout, board: &str, kver: &str) -> Vec<PathBuf> {
    let files_kver = format!("files-{kver}");
    [checkout.generic_dir(), checkout.board_dir(board)]
        .iter()
        .flat_map(|d| [d.join("files"), d.join(&files_kver)])
        .filter(|d| d.is_dir())
        .collect()
}

/// Every file and symbolic link the overlays put into the tree, by path
/// relative to the tree, with the overlay file that wins (the last one).
pub fn overlay_files(dirs: &[PathBuf]) -> Result<BTreeMap<PathBuf, PathBuf>> {
    let mut files = BTreeMap::new();
    for dir in dirs {
        for entry in walkdir::WalkDir::new(dir).min_depth(1) {
            let entry = entry.with_context(|| format!("walking {}", dir.display()))?;
            if entry.file_type().is_dir() {
                continue;
            }
            let rel = entry
                .path()
                .strip_prefix(dir)
                .with_context(|| format!("{} outside {}", entry.path().display(), dir.display()))?
                .to_path_buf();
            files.insert(rel, entry.path().to_path_buf());
        }
    }
    Ok(files)
}

/// The largest overlay file copied into a kernel tree: OpenWrt's are
/// source files, the largest a few hundred KiB.
pub const MAX_OVERLAY_BYTES: u64 = 64 << 20;

/// Copies the overlays into `tree` as `cp -fpR DIR/. tree/` does for each
/// directory in order, then removes `*.rej` and `*.orig` files from the
/// tree (include/quilt.mk). Returns the number of files copied.
///
/// Safe on a hard-linked copy of a pristine tree: an existing file is
/// unlinked before the overlay's is written, never written through.
/// Permission bits are kept; modification times are not.
pub fn copy_overlays(dirs: &[PathBuf], tree: &Path) -> Result<usize> {
    let files = overlay_files(dirs)?;
    for (rel, src) in &files {
        let dest = tree.join(rel);
        // Nothing is written through a link: one an overlay copied before
        // (`zz-evil -> /tmp/x`, then `zz-evil/pwned`) or one of the tree.
        let mut at = tree.to_path_buf();
        for part in rel.parent().into_iter().flat_map(Path::components) {
            at.push(part);
            if at
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                bail!(
                    "{}: its place in the kernel tree, {}, is under the symbolic link {}; \
                     OpenWrt's overlay would be written wherever that link leads. Remove the \
                     link or the file from the checkout",
                    src.display(),
                    rel.display(),
                    at.display()
                );
            }
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        if dest.symlink_metadata().is_ok() {
            std::fs::remove_file(&dest).with_context(|| {
                format!(
                    "removing {} to replace it with {}",
                    dest.display(),
                    src.display()
                )
            })?;
        }
        let meta = src
            .symlink_metadata()
            .with_context(|| format!("reading {}", src.display()))?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(src)
                .with_context(|| format!("reading the link {}", src.display()))?;
            if let Some(why) = overlay_link_problem(rel, &target) {
                bail!(
                    "{} links to {}: {why}; a link an overlay copies into the kernel tree must \
                     stay in it. Remove or fix the link in the checkout",
                    src.display(),
                    target.display()
                );
            }
            std::os::unix::fs::symlink(&target, &dest)
                .with_context(|| format!("creating the link {}", dest.display()))?;
        } else {
            // Through the capped reader: a FIFO hung the copy, a 3 GB file
            // was copied whole.
            let mut from = crate::util::fs::open_limited(
                src,
                crate::util::fs::FileLimit {
                    what: "overlay file of an OpenWrt checkout",
                    max_bytes: MAX_OVERLAY_BYTES,
                },
                "remove or restore it in the OpenWrt checkout",
            )?;
            let mut to = std::fs::File::create(&dest)
                .with_context(|| format!("creating {}", dest.display()))?;
            std::io::copy(&mut (&mut from).take(MAX_OVERLAY_BYTES), &mut to)
                .with_context(|| format!("copying {} to {}", src.display(), dest.display()))?;
            std::fs::set_permissions(&dest, meta.permissions())
                .with_context(|| format!("setting the mode of {}", dest.display()))?;
        }
    }
    for entry in walkdir::WalkDir::new(tree) {
        let entry = entry.with_context(|| format!("walking {}", tree.display()))?;
        let name = entry.file_name().to_string_lossy();
        if !entry.file_type().is_dir() && (name.ends_with(".rej") || name.ends_with(".orig")) {
            std::fs::remove_file(entry.path())
                .with_context(|| format!("removing {}", entry.path().display()))?;
        }
    }
    Ok(files.len())
}

/// Why an overlay's link at `rel` (in the tree) to `target` may not be
/// made, if it may not: it must stay in the tree from where it is
/// ([`crate::util::path::link_target_in_tree`]), and its `..` must all
/// lead the target. A `..` after a name is resolved from wherever a link
/// by that name leads, and links of the overlays could combine to leave
/// the tree; with `..` only in front, every link leads down from a real
/// directory inside it.
fn overlay_link_problem(rel: &Path, target: &Path) -> Option<&'static str> {
    if let Err(why) = crate::util::path::link_target_in_tree(rel, target) {
        return Some(why);
    }
    let mut named = false;
    for c in target.components() {
        match c {
            std::path::Component::Normal(_) => named = true,
            std::path::Component::ParentDir if named => {
                return Some("a `..` follows a name (only leading `..` are allowed)")
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hostile trial's F4: an overlay link to /tmp/x, then an overlay
    /// file under it, wrote /tmp/x/pwned during a dry run.
    #[test]
    fn overlays_write_nothing_through_a_link_and_copy_no_link_out() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        let (generic, board) = (dir.path().join("generic"), dir.path().join("board"));
        std::fs::create_dir_all(generic.join("drivers")).unwrap();
        std::fs::create_dir_all(board.join("zz-evil")).unwrap();
        symlink(&victim, generic.join("zz-evil")).unwrap();
        std::fs::write(board.join("zz-evil/pwned"), "x").unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        let err = format!(
            "{:#}",
            copy_overlays(&[generic.clone(), board.clone()], &tree).unwrap_err()
        );
        assert!(
            err.contains("zz-evil") && err.contains("the target is absolute"),
            "{err}"
        );
        assert!(!victim.join("pwned").exists());
        // A relative link that stays in the tree is copied; one that
        // climbs out of a name, or above the tree, is not.
        std::fs::remove_file(generic.join("zz-evil")).unwrap();
        std::fs::remove_dir_all(&board).unwrap();
        symlink("../include/x.h", generic.join("drivers/x.h")).unwrap();
        let tree = dir.path().join("tree2");
        std::fs::create_dir(&tree).unwrap();
        copy_overlays(std::slice::from_ref(&generic), &tree).unwrap();
        assert_eq!(
            std::fs::read_link(tree.join("drivers/x.h")).unwrap(),
            Path::new("../include/x.h")
        );
        for bad in ["../../x", "sub/../../x"] {
            std::fs::remove_file(generic.join("drivers/x.h")).unwrap();
            symlink(bad, generic.join("drivers/x.h")).unwrap();
            let tree = tempfile::tempdir().unwrap();
            assert!(
                copy_overlays(std::slice::from_ref(&generic), tree.path()).is_err(),
                "{bad}"
            );
        }
        // A link already in the tree is not written through either.
        std::fs::remove_file(generic.join("drivers/x.h")).unwrap();
        std::fs::write(generic.join("drivers/y.c"), "y").unwrap();
        let tree = dir.path().join("tree3");
        std::fs::create_dir(&tree).unwrap();
        symlink(&victim, tree.join("drivers")).unwrap();
        let err = format!(
            "{:#}",
            copy_overlays(std::slice::from_ref(&generic), &tree).unwrap_err()
        );
        assert!(err.contains("under the symbolic link"), "{err}");
        assert!(!victim.join("y.c").exists());
        // A FIFO hung the copy (the second hostile trial).
        std::fs::remove_file(generic.join("drivers/y.c")).unwrap();
        let fifo = generic.join("drivers/zz-fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let tree = tempfile::tempdir().unwrap();
        let err = format!("{:#}", copy_overlays(&[generic], tree.path()).unwrap_err());
        assert!(err.contains("not a regular file"), "{err}");
    }

    #[test]
    fn series_files_as_filter_series_and_xargs_read_them() {
        let text = "# header\n001-a.patch\n\n  002-b.patch # why\n---\n003-c.patch 004-d.patch\n";
        assert_eq!(
            series_file_entries(text),
            ["001-a.patch", "002-b.patch", "003-c.patch", "004-d.patch"]
        );
    }

    #[test]
    fn directory_in_byte_order_without_hidden_files_and_subdirectories() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.patch", "B.patch", "a_x", "a-x", ".hidden", "z.gz"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let pd = PatchDirectory {
            group: Group::Platform,
            dir: dir.path().to_path_buf(),
        };
        let got = directory_entries(&pd).unwrap();
        let names: Vec<&str> = got.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "platform/B.patch",
                "platform/a-x",
                "platform/a_x",
                "platform/b.patch",
                "platform/z.gz"
            ]
        );
        assert_eq!(got[4].compression, Compression::Gzip);
        std::fs::write(dir.path().join("series"), "b.patch\nmissing.patch\n").unwrap();
        let err = directory_entries(&pd).unwrap_err().to_string();
        assert!(err.contains("missing.patch"), "{err}");
    }

    #[test]
    fn overlays_replace_hard_links_instead_of_writing_through_them() {
        let dir = tempfile::tempdir().unwrap();
        let pristine = dir.path().join("pristine");
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(pristine.join("drivers")).unwrap();
        std::fs::create_dir_all(tree.join("drivers")).unwrap();
        std::fs::write(pristine.join("drivers/x.c"), "pristine").unwrap();
        std::fs::hard_link(pristine.join("drivers/x.c"), tree.join("drivers/x.c")).unwrap();
        std::fs::write(tree.join("old.orig"), "").unwrap();
        let (g, t) = (dir.path().join("g"), dir.path().join("t"));
        std::fs::create_dir_all(g.join("drivers")).unwrap();
        std::fs::create_dir_all(t.join("drivers/new")).unwrap();
        std::fs::write(g.join("drivers/x.c"), "generic").unwrap();
        std::fs::write(t.join("drivers/x.c"), "target").unwrap();
        std::fs::write(t.join("drivers/new/y.c"), "y").unwrap();
        assert_eq!(copy_overlays(&[g, t], &tree).unwrap(), 2);
        assert_eq!(
            std::fs::read_to_string(tree.join("drivers/x.c")).unwrap(),
            "target"
        );
        assert_eq!(
            std::fs::read_to_string(pristine.join("drivers/x.c")).unwrap(),
            "pristine"
        );
        assert!(tree.join("drivers/new/y.c").is_file());
        assert!(!tree.join("old.orig").exists());
    }
}
