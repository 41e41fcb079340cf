//! The applied-series state kept in the tree's top directory, as quilt keeps
//! `.pc/` (quilt 0.66 `backup-files`, `applied-patches`):
//!
//! ```text
//! <tree>/.xtask-pc/
//!   applied-patches          one patch name per line, bottom first
//!   <name>/.xtask-files      one line per file the patch touches:
//!                            "<existed 0|1> <sha256 after the patch, or -> <path>"
//!   <name>/<index>.orig      pre-image of the manifest's file number <index>
//!                            (0-based), when it existed
//!   journal                  the push, pop or refresh under way, if any
//!                            (see [`super::journal`])
//!   lock                     the tree's lock, with the holder's pid
//! ```
//!
//! `<name>` is the patch's path relative to `patches/` (it has slashes, so
//! `<name>/` is a nested directory, as in quilt). Pre-images are hard links
//! to the file that was in the tree before the push (the patch engine
//! replaces files by rename, so the old inode, often shared with the
//! pristine tree, is kept intact); copies where linking fails.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::util::fs::write_atomic;
use anyhow::{bail, Context, Result};

/// Name of the state directory at the top of the tree.
pub const STATE_DIR: &str = ".xtask-pc";
/// Manifest file name inside each patch's state directory.
pub const MANIFEST: &str = ".xtask-files";

/// One file a pushed patch touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Path relative to the tree.
    pub path: PathBuf,
    /// Whether the file existed before the patch (its pre-image is saved).
    pub existed: bool,
    /// sha256 (hex) of the file after the patch (or after the last
    /// refresh); `None` when the patch left no file there.
    pub after: Option<String>,
}

/// Paths of the state of one tree.
#[derive(Debug, Clone)]
pub struct State {
    /// The tree.
    pub tree: PathBuf,
    /// `<tree>/.xtask-pc`.
    pub dir: PathBuf,
}

impl State {
    /// The state of `tree` (nothing is created).
    pub fn new(tree: &Path) -> State {
        State {
            tree: tree.to_path_buf(),
            dir: tree.join(STATE_DIR),
        }
    }

    /// The applied patches, bottom first; empty when none were pushed.
    pub fn applied(&self) -> Result<Vec<String>> {
        let file = self.dir.join("applied-patches");
        match crate::util::fs::read_limited(
            &file,
            crate::util::fs::FileLimit::record("applied-patches"),
            "",
        ) {
            Ok(text) => Ok(text
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()),
            Err(e) if crate::util::fs::is_not_found(&e) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Rewrites `applied-patches` (temporary file + rename).
    pub fn set_applied(&self, names: &[String]) -> Result<()> {
        let mut text = String::new();
        for n in names {
            text.push_str(n);
            text.push('\n');
        }
        write_atomic(&self.dir.join("applied-patches"), text.as_bytes())
    }

    /// Appends `name` to `applied-patches` (as quilt's `echo >>` does: no
    /// rewrite, so a push costs one small append).
    pub fn push_applied(&self, name: &str) -> Result<()> {
        let file = self.dir.join("applied-patches");
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("creating {}", self.dir.display()))?;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .with_context(|| format!("opening {}", file.display()))?;
        f.write_all(format!("{name}\n").as_bytes())
            .with_context(|| format!("appending to {}", file.display()))
    }

    /// The state directory of patch `name`.
    pub fn patch_dir(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Where the pre-image of patch `name`'s file number `index` (0-based,
    /// manifest order) is kept: `<name>/<index>.orig`. Flat, so a push
    /// creates one directory, not one per path component (mkdir dominated
    /// the push time with quilt-style nested copies).
    pub fn backup(&self, name: &str, index: usize) -> PathBuf {
        self.patch_dir(name).join(format!("{index}.orig"))
    }

    /// Reads patch `name`'s manifest.
    ///
    /// Errors: missing or malformed manifest (names the file and line).
    pub fn files(&self, name: &str) -> Result<Vec<FileEntry>> {
        let file = self.patch_dir(name).join(MANIFEST);
        let text = crate::util::fs::read_limited(
            &file,
            crate::util::fs::FileLimit::record("patch manifest"),
            "",
        )?;
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let mut parts = line.splitn(3, ' ');
            let (Some(existed), Some(after), Some(path)) =
                (parts.next(), parts.next(), parts.next())
            else {
                bail!("{}:{}: malformed line {line:?}", file.display(), i + 1);
            };
            out.push(FileEntry {
                path: PathBuf::from(path),
                existed: existed == "1",
                after: (after != "-").then(|| after.to_string()),
            });
        }
        Ok(out)
    }

    /// Writes patch `name`'s manifest: a new file written in place on push
    /// (`fresh`: the patch is not in `applied-patches` yet, so a torn write
    /// is never read), replaced atomically otherwise (refresh).
    pub fn set_files(&self, name: &str, files: &[FileEntry], fresh: bool) -> Result<()> {
        let mut text = String::new();
        for f in files {
            text.push_str(&format!(
                "{} {} {}\n",
                u8::from(f.existed),
                f.after.as_deref().unwrap_or("-"),
                f.path.display()
            ));
        }
        let file = self.patch_dir(name).join(MANIFEST);
        if fresh {
            std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))
        } else {
            write_atomic(&file, text.as_bytes())
        }
    }
}
