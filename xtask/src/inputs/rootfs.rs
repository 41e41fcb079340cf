//! A rootfs for whole images (`--rootfs FILE`): a squashfs as OpenWrt
//! makes `root.squashfs`, or one split out of an OpenWrt image of a device
//! of the same subtarget, recorded with its sha256 and where it came from.
//!
//! What is read ([`Rootfs::load`]):
//!
//! * a squashfs 4 (`hsqs`, the little-endian superblock of the kernel's
//!   fs/squashfs/squashfs_fs.h): the file itself, trimmed to its
//!   `bytes_used` (OpenWrt makes it with `-nopad`, so nothing is trimmed);
//! * a legacy uImage followed by a squashfs (ath79 and ramips sysupgrade
//!   images: `append-kernel | pad-to … | append-rootfs | pad-rootfs`): the
//!   first squashfs after the uImage's 64-byte header and `ih_size` bytes
//!   of data;
//! * a TRX (bcm47xx, bcm53xx: `HDR0`, three little-endian partition
//!   offsets at bytes 16–27, as firmware-utils' trx.c writes them): the
//!   squashfs at the last partition offset;
//! * a sysupgrade tar (`sysupgrade-tar`, scripts/sysupgrade-tar.sh):
//!   its `sysupgrade-<board>/root` member.
//!
//! Its architecture is read from a program inside it (`unsquashfs -cat`,
//! Debian's squashfs-tools); the report compares it with each build's
//! vmlinux and refuses another machine or endianness, naming both.

use std::io::Read;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::util::elf_ident::{elf_kind, ElfIdent};
use crate::util::fs::FileLimit;
use crate::util::hash::sha256_bytes;
use crate::util::text::printable;

/// The largest rootfs file or image read, bytes.
pub const LIMIT: FileLimit = FileLimit {
    what: "rootfs or firmware image",
    max_bytes: 256 << 20,
};

/// A squashfs 4 superblock's magic, as stored (little-endian `0x73717368`).
pub const SQUASHFS_MAGIC: &[u8; 4] = b"hsqs";

/// A legacy uImage's magic (u-boot's `IH_MAGIC`), big-endian at byte 0.
pub const UIMAGE_MAGIC: u32 = 0x2705_1956;

/// The programs whose ELF header tells the rootfs's architecture, tried in
/// order.
pub const PROBES: &[&str] = &["bin/busybox", "lib/libc.so", "sbin/procd"];

/// How long `unsquashfs -cat` may take.
pub const UNSQUASHFS_TIMEOUT: Duration = Duration::from_secs(60);

/// How the squashfs was found in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RootfsOrigin {
    /// The file is a squashfs.
    Squashfs,
    /// Split from a uImage + squashfs image; the uImage's length, bytes.
    UImage {
        /// Header and data of the uImage, bytes.
        kernel_bytes: u64,
    },
    /// Split from a TRX at this offset.
    Trx {
        /// The rootfs partition's offset, bytes.
        offset: u64,
    },
    /// The `root` member of a sysupgrade tar.
    SysupgradeTar {
        /// The member's path.
        member: String,
    },
}

impl std::fmt::Display for RootfsOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RootfsOrigin::Squashfs => f.write_str("a squashfs"),
            RootfsOrigin::UImage { kernel_bytes } => write!(
                f,
                "split from a uImage + squashfs image (kernel {kernel_bytes} bytes)"
            ),
            RootfsOrigin::Trx { offset } => write!(f, "split from a TRX (rootfs at {offset:#x})"),
            RootfsOrigin::SysupgradeTar { member } => write!(f, "{member} of a sysupgrade tar"),
        }
    }
}

/// A rootfs as read: the squashfs and where it came from.
#[derive(Debug, Clone, Serialize)]
pub struct Rootfs {
    /// The file given.
    pub source: String,
    /// How the squashfs was found in it.
    pub origin: RootfsOrigin,
    /// sha256 of the squashfs bytes.
    pub sha256: String,
    /// The squashfs's length, bytes.
    pub bytes: u64,
    /// Its programs' architecture, and which program told it.
    pub arch: Option<(ElfIdent, String)>,
    /// The squashfs.
    #[serde(skip)]
    pub squashfs: Vec<u8>,
}

impl Rootfs {
    /// Reads `file` (see the module docs) and its architecture.
    ///
    /// Errors name the file: not readable within [`LIMIT`], none of the
    /// layouts above, a squashfs that is not version 4 or claims more
    /// bytes than the file holds, or `unsquashfs` missing or failing.
    pub fn load(file: &Path) -> Result<Rootfs> {
        let fix = "give --rootfs a root.squashfs or an OpenWrt sysupgrade image";
        let named = || format!("--rootfs {}", printable(&file.display().to_string()));
        let raw = crate::util::fs::read_bytes_limited(file, LIMIT, fix).with_context(named)?;
        let (origin, squashfs) = split(&raw).with_context(named)?;
        let arch = probe_arch(&squashfs).with_context(named)?;
        Ok(Rootfs {
            source: file.display().to_string(),
            origin,
            sha256: sha256_bytes(&squashfs),
            bytes: squashfs.len() as u64,
            arch,
            squashfs,
        })
    }
}

/// The squashfs in `raw` and where it was found (see the module docs).
pub fn split(raw: &[u8]) -> Result<(RootfsOrigin, Vec<u8>)> {
    let be32 = |at: usize| {
        raw.get(at..at + 4)
            .map(|b| u32::from_be_bytes(b.try_into().unwrap()))
    };
    let le32 = |at: usize| {
        raw.get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    if raw.starts_with(SQUASHFS_MAGIC) {
        return Ok((RootfsOrigin::Squashfs, squashfs_at(raw, 0)?.to_vec()));
    }
    if be32(0) == Some(UIMAGE_MAGIC) {
        let data = u64::from(be32(12).unwrap_or(0));
        let kernel_bytes = 64 + data;
        let start = usize::try_from(kernel_bytes)
            .ok()
            .filter(|s| *s <= raw.len())
            .context("a uImage whose data runs past the end of the file")?;
        // The first `hsqs` after the kernel that starts a squashfs 4 (the
        // padding or a vendor header may hold the bytes by chance).
        let mut first_error = None;
        for at in memchr::memmem::find_iter(&raw[start..], SQUASHFS_MAGIC) {
            match squashfs_at(raw, start + at) {
                Ok(fs) => return Ok((RootfsOrigin::UImage { kernel_bytes }, fs.to_vec())),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => return Err(e.context(format!("after a uImage of {kernel_bytes} bytes"))),
            None => bail!("a uImage of {kernel_bytes} bytes with no squashfs after it"),
        }
    }
    if raw.starts_with(b"HDR0") {
        let offsets: Vec<u32> = (0..3).filter_map(|i| le32(16 + 4 * i)).collect();
        let Some(&offset) = offsets.iter().rev().find(|o| **o != 0) else {
            bail!("a TRX without partitions");
        };
        let fs = squashfs_at(raw, offset as usize).with_context(|| {
            format!("a TRX whose last partition (at {offset:#x}) is not a squashfs (UBI and JFFS2 are not read)")
        })?;
        return Ok((
            RootfsOrigin::Trx {
                offset: u64::from(offset),
            },
            fs.to_vec(),
        ));
    }
    if raw.starts_with(b"sqsh") {
        bail!(
            "a big-endian squashfs (version 3 or older), which OpenWrt no longer makes; give a \
             squashfs 4"
        );
    }
    if raw.get(257..262) == Some(b"ustar") {
        return from_tar(raw);
    }
    bail!(
        "neither a squashfs, a uImage + squashfs, a TRX nor a sysupgrade tar (it starts with {})",
        hex::encode(&raw[..raw.len().min(8)])
    )
}

/// The squashfs 4 whose superblock starts at `at` of `raw`, trimmed to its
/// `bytes_used`.
fn squashfs_at(raw: &[u8], at: usize) -> Result<&[u8]> {
    let sb = raw
        .get(at..at + 96)
        .context("a squashfs superblock cut short")?;
    anyhow::ensure!(&sb[..4] == SQUASHFS_MAGIC, "no squashfs at {at:#x}");
    let major = u16::from_le_bytes([sb[28], sb[29]]);
    anyhow::ensure!(
        major == 4,
        "a squashfs of version {major} (OpenWrt's are 4)"
    );
    let used = u64::from_le_bytes(sb[40..48].try_into().unwrap());
    let end = usize::try_from(used)
        .ok()
        .and_then(|u| at.checked_add(u))
        .filter(|e| *e <= raw.len() && used >= 96)
        .with_context(|| {
            format!(
                "the squashfs at {at:#x} says it is {used} bytes, but the file has {} from there",
                raw.len() - at
            )
        })?;
    Ok(&raw[at..end])
}

/// The `sysupgrade-<board>/root` member of a sysupgrade tar.
fn from_tar(raw: &[u8]) -> Result<(RootfsOrigin, Vec<u8>)> {
    let mut archive = tar::Archive::new(raw);
    for entry in archive.entries().context("reading the tar")? {
        let mut entry = entry.context("reading the tar")?;
        let path = entry
            .path()
            .context("a tar member's path")?
            .display()
            .to_string();
        let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
        if !matches!(parts.as_slice(), [dir, "root"] if dir.starts_with("sysupgrade-")) {
            continue;
        }
        let mut member = Vec::new();
        (&mut entry)
            .take(LIMIT.max_bytes)
            .read_to_end(&mut member)
            .with_context(|| format!("reading {path}"))?;
        let fs = squashfs_at(&member, 0).with_context(|| format!("{path} of the tar"))?;
        return Ok((RootfsOrigin::SysupgradeTar { member: path }, fs.to_vec()));
    }
    bail!("a tar without a sysupgrade-<board>/root member")
}

/// The architecture of the first of [`PROBES`] in `squashfs` that is an
/// ELF file, read with `unsquashfs -cat` (its first 64 bytes); `None`
/// when none is.
///
/// The bytes reach unsquashfs as an anonymous memory file
/// (`memfd_create(2)`, read as `/proc/self/fd/N` in the child): nothing
/// is written to disk, so a run killed meanwhile leaves no copy behind.
///
/// Errors: the memory file cannot be made, unsquashfs cannot be started,
/// or it takes longer than [`UNSQUASHFS_TIMEOUT`].
pub fn probe_arch(squashfs: &[u8]) -> Result<Option<(ElfIdent, String)>> {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let memfd = rustix::fs::memfd_create("xtask-rootfs", rustix::fs::MemfdFlags::CLOEXEC)
        .context("memfd_create(2) for the rootfs unsquashfs reads")?;
    let mut file = std::fs::File::from(memfd);
    file.write_all(squashfs)
        .context("writing the rootfs to its memory file")?;
    let fd = file.as_raw_fd();
    for program in PROBES {
        let head = cat_head(fd, program)?;
        if let Some(kind) = elf_kind(&head) {
            return Ok(Some((kind, program.to_string())));
        }
    }
    Ok(None)
}

/// The first 64 bytes `unsquashfs -cat /proc/self/fd/<image_fd> program`
/// writes (fewer for a short or missing file). The child is stopped once
/// they are read.
fn cat_head(image_fd: i32, program: &str) -> Result<Vec<u8>> {
    use crate::util::process::{Output, Supervisor};
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new("unsquashfs");
    command
        .args(["-no-progress", "-cat"])
        .arg(format!("/proc/self/fd/{image_fd}"))
        .arg(program);
    // SAFETY: fcntl(2) is async-signal-safe; it clears close-on-exec on
    // the memory file in the child only, so that unsquashfs (and no
    // program another thread starts) inherits it.
    unsafe {
        command.pre_exec(move || {
            if libc::fcntl(image_fd, libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = Supervisor::new(command, "unsquashfs")
        .output(Output::Pipes)
        .grace(Duration::ZERO)
        .hint("`apt-get install squashfs-tools`, or `cargo xtask setup`")
        .spawn()?;
    let (mut stdout, mut stderr) = child.take_pipes().context("unsquashfs's pipes")?;
    // stderr is drained so that the child never blocks on it; its text
    // is not needed (a missing file reads as no ELF).
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut head = Vec::new();
        let _ = (&mut stdout).take(64).read_to_end(&mut head);
        let _ = tx.send(head);
    });
    let head = rx.recv_timeout(UNSQUASHFS_TIMEOUT).map_err(|_| {
        anyhow::anyhow!(
            "unsquashfs -cat {program} took more than {} s",
            UNSQUASHFS_TIMEOUT.as_secs()
        )
    });
    child.stop();
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    fn superblock(bytes_used: u64) -> Vec<u8> {
        let mut sb = vec![0u8; 96];
        sb[..4].copy_from_slice(SQUASHFS_MAGIC);
        sb[28..30].copy_from_slice(&4u16.to_le_bytes());
        sb[40..48].copy_from_slice(&bytes_used.to_le_bytes());
        sb.resize(bytes_used as usize, 0x5a);
        sb
    }

    #[test]
    fn a_squashfs_is_found_in_each_layout() {
        let fs = superblock(200);
        let mut plain = fs.clone();
        plain.extend([0xff; 50]);
        let (o, got) = split(&plain).unwrap();
        assert_eq!((o, got.as_slice()), (RootfsOrigin::Squashfs, fs.as_slice()));

        let mut uimage = UIMAGE_MAGIC.to_be_bytes().to_vec();
        uimage.resize(12, 0);
        uimage.extend(100u32.to_be_bytes());
        uimage.resize(64 + 100, 1);
        uimage.resize(256, 0);
        uimage.extend(&fs);
        uimage.extend([0xde, 0xad, 0xc0, 0xde]);
        let (o, got) = split(&uimage).unwrap();
        assert_eq!(o, RootfsOrigin::UImage { kernel_bytes: 164 });
        assert_eq!(got, fs);

        let mut trx = b"HDR0".to_vec();
        trx.resize(16, 0);
        for off in [28u32, 100, 512] {
            trx.extend(off.to_le_bytes());
        }
        trx.resize(512, 0);
        trx.extend(&fs);
        let (o, got) = split(&trx).unwrap();
        assert_eq!(o, RootfsOrigin::Trx { offset: 512 });
        assert_eq!(got, fs);

        // A stray `hsqs` after the uImage is passed over; a big-endian
        // squashfs is named.
        let mut stray = uimage[..256].to_vec();
        stray[164..168].copy_from_slice(SQUASHFS_MAGIC);
        stray.extend(&fs);
        assert_eq!(split(&stray).unwrap().1, fs);
        let err = split(b"sqsh and more bytes than that").unwrap_err();
        assert!(
            format!("{err:#}").contains("big-endian squashfs"),
            "{err:#}"
        );
        let short = superblock(200)[..150].to_vec();
        let err = split(&short).unwrap_err();
        assert!(
            format!("{err:#}").contains("says it is 200 bytes"),
            "{err:#}"
        );
        assert!(split(b"not an image at all, no").is_err());
    }
}
