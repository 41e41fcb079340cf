//! A minimal writer of the `newc` cpio format the kernel unpacks as an
//! initramfs (Documentation/driver-api/early-userspace/buffer-format.rst).
//!
//! Entries are written in the order given with fixed owners (root), times
//! (0) and inode numbers (counting from 1), so the same tree gives the
//! same bytes.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::util::fs::write_atomic;

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const S_IFCHR: u32 = 0o020000;

/// Writes a `newc` archive entry by entry.
pub struct Writer<W: Write> {
    out: W,
    ino: u32,
    written: u64,
}

impl<W: Write> Writer<W> {
    /// A writer appending to `out`.
    pub fn new(out: W) -> Writer<W> {
        Writer {
            out,
            ino: 0,
            written: 0,
        }
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8]) -> Result<()> {
        self.entry_dev(name, mode, data, (0, 0))
    }

    fn entry_dev(&mut self, name: &str, mode: u32, data: &[u8], rdev: (u32, u32)) -> Result<()> {
        self.ino += 1;
        let name_len = name.len() + 1;
        let header = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.ino,
            mode,
            0, // uid
            0, // gid
            1, // nlink
            0, // mtime
            data.len(),
            0, // devmajor
            0, // devminor
            rdev.0,
            rdev.1,
            name_len,
            0, // check
        );
        self.write(header.as_bytes())?;
        self.write(name.as_bytes())?;
        self.write(&[0])?;
        self.pad()?;
        self.write(data)?;
        self.pad()
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out
            .write_all(bytes)
            .context("writing the cpio archive")?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> Result<()> {
        let n = (4 - (self.written % 4) as usize) % 4;
        self.write(&[0u8; 3][..n])
    }

    /// A directory `name` (no leading `/`) with permission bits `perm`.
    pub fn dir(&mut self, name: &str, perm: u32) -> Result<()> {
        self.entry(name, S_IFDIR | (perm & 0o7777), &[])
    }

    /// A regular file.
    pub fn file(&mut self, name: &str, perm: u32, data: &[u8]) -> Result<()> {
        self.entry(name, S_IFREG | (perm & 0o7777), data)
    }

    /// A character device node (`major`, `minor`), e.g. `dev/console` (5, 1)
    /// so that init has a console before devtmpfs is mounted.
    pub fn char_device(&mut self, name: &str, perm: u32, major: u32, minor: u32) -> Result<()> {
        self.entry_dev(name, S_IFCHR | (perm & 0o7777), &[], (major, minor))
    }

    /// A symbolic link `name` → `target`.
    pub fn symlink(&mut self, name: &str, target: &str) -> Result<()> {
        self.entry(name, S_IFLNK | 0o777, target.as_bytes())
    }

    /// Every file, directory and symlink under `root`, sorted by path,
    /// named relative to `root`. Other file types are an error.
    pub fn tree(&mut self, root: &Path) -> Result<()> {
        let walk = walkdir::WalkDir::new(root)
            .min_depth(1)
            .sort_by_file_name()
            .follow_links(false);
        for entry in walk {
            let entry = entry.with_context(|| format!("walking {}", root.display()))?;
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .expect("walkdir yields paths under its root")
                .to_str()
                .with_context(|| format!("{}: file name is not UTF-8", path.display()))?;
            let meta = std::fs::symlink_metadata(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let perm = meta.permissions().mode();
            let ft = meta.file_type();
            if ft.is_dir() {
                self.dir(rel, perm)?;
            } else if ft.is_symlink() {
                let target = std::fs::read_link(path)
                    .with_context(|| format!("reading link {}", path.display()))?;
                let target = target
                    .to_str()
                    .with_context(|| format!("{}: link target is not UTF-8", path.display()))?
                    .to_string();
                self.symlink(rel, &target)?;
            } else if ft.is_file() {
                let data = crate::util::fs::read_bytes_limited(
                    path,
                    crate::util::fs::FileLimit::binary("guest file"),
                    "",
                )?;
                self.file(rel, perm, &data)?;
            } else {
                bail!(
                    "{}: not a file, directory or symlink (mode {:o})",
                    path.display(),
                    meta.mode()
                );
            }
        }
        Ok(())
    }

    /// Writes the trailer and returns the output.
    pub fn finish(mut self) -> Result<W> {
        self.entry("TRAILER!!!", 0, &[])?;
        self.out.flush().context("writing the cpio archive")?;
        Ok(self.out)
    }
}

/// Writes the tree `root` and `/dev/console` (the kernel opens it before
/// `/init` runs) as a `newc` archive to `archive`; returns its size in
/// bytes.
pub fn pack(root: &Path, archive: &Path) -> Result<u64> {
    let mut writer = Writer::new(Vec::new());
    writer.tree(root)?;
    if !root.join("dev").exists() {
        writer.dir("dev", 0o755)?;
    }
    writer.char_device("dev/console", 0o600, 5, 1)?;
    let bytes = writer.finish()?;
    write_atomic(archive, &bytes)?;
    Ok(bytes.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_aligned_and_end_with_the_trailer() {
        let mut w = Writer::new(Vec::new());
        w.dir("bin", 0o755).unwrap();
        w.file("init", 0o755, b"#!/bin/sh\n").unwrap();
        w.symlink("bin/sh", "busybox").unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len() % 4, 0);
        assert!(bytes.starts_with(b"070701"));
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("init\0"));
        assert!(text.contains("TRAILER!!!\0"));
        // The file's header says 10 bytes of data and mode 0100755.
        let at = text.find("init\0").unwrap();
        let header = &text[at - 110..at];
        assert_eq!(&header[14..22], "000081ed");
        assert_eq!(&header[54..62], "0000000a");
    }
}
