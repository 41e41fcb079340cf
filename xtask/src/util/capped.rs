//! The one capped read of a file a user or an archive can replace
//! ([`read_limited`] and its kin): a regular file no larger than its
//! [`FileLimit`], else an error naming the file, what it is and the fix.
//! Its own file so that `util::lock` (which reads its pid file this way)
//! and `util::fs` (whose staging directories take locks) import it, not
//! each other. `util::fs` re-exports it.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};

/// The largest input file read (`targets/*.toml`, `variants.toml`,
/// `runtime.toml`, a lab file, the source pins): they hold a few KiB; the
/// cap keeps a device or a runaway file out of memory.
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// The largest record read back from `target/xtask/` or a work tree
/// (journals, rebase state, cache manifests, `classification.json`,
/// iperf3 reports): the largest real ones are a few hundred KiB.
pub const MAX_RECORD_BYTES: u64 = 64 << 20;

/// The largest log read back (`build.log`, a QEMU or daemon log): a
/// verbose (`V=1`) router build's is about 50 MB.
pub const MAX_LOG_BYTES: u64 = 256 << 20;

/// The largest binary read back from `target/xtask/` (a vmlinux, an
/// image, a guest's program): a router's vmlinux is 5–20 MB, one with
/// debug information a few hundred.
pub const MAX_BINARY_BYTES: u64 = 1 << 30;

/// What [`read_limited`] accepts: the kind of file, for messages
/// ("result.json"), and its largest size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileLimit {
    /// The kind of file, as messages name it: `result.json`, `variants file`.
    pub what: &'static str,
    /// The largest size read, in bytes.
    pub max_bytes: u64,
}

impl FileLimit {
    /// A record kept under `target/xtask/` ([`MAX_RECORD_BYTES`]).
    pub const fn record(what: &'static str) -> FileLimit {
        FileLimit {
            what,
            max_bytes: MAX_RECORD_BYTES,
        }
    }

    /// A log ([`MAX_LOG_BYTES`]).
    pub const fn log(what: &'static str) -> FileLimit {
        FileLimit {
            what,
            max_bytes: MAX_LOG_BYTES,
        }
    }

    /// A binary ([`MAX_BINARY_BYTES`]).
    pub const fn binary(what: &'static str) -> FileLimit {
        FileLimit {
            what,
            max_bytes: MAX_BINARY_BYTES,
        }
    }

    /// An input file ([`MAX_INPUT_BYTES`]).
    pub const fn input(what: &'static str) -> FileLimit {
        FileLimit {
            what,
            max_bytes: MAX_INPUT_BYTES,
        }
    }
}

/// Reads `file`, which a user or an archive can replace, as UTF-8 text,
/// refusing what would hang or fill memory: it must be a regular file (a
/// symlink to one is followed) of at most `limit.max_bytes`. The file is
/// opened without blocking (a FIFO put there after the check does not
/// hang the read) and its type checked again on the open file, and no
/// more than the limit is read even if it grows meanwhile.
///
/// Errors name the file, what is wrong with it and `fix` (what the user
/// should do): not a regular file (a directory, a FIFO, a device, naming
/// a symlink's target), larger than the limit (its size and the limit),
/// not UTF-8. A missing file is the [`std::io::Error`] (`NotFound`, see
/// [`is_not_found`]) with "reading FILE" as context, for the caller to say
/// what a missing file means.
pub fn read_limited(file: &Path, limit: FileLimit, fix: &str) -> Result<String> {
    let bytes = read_bytes_limited(file, limit, fix)?;
    String::from_utf8(bytes).map_err(|e| {
        refusal(
            file,
            limit,
            fix,
            format!(
                "not UTF-8 text (byte {} is not)",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// [`read_limited`] of any bytes (no UTF-8 check).
///
/// Errors: as [`read_limited`], but for UTF-8.
pub fn read_bytes_limited(file: &Path, limit: FileLimit, fix: &str) -> Result<Vec<u8>> {
    let opened = open_limited(file, limit, fix)?;
    let mut bytes = Vec::with_capacity(opened.metadata().map_or(0, |m| m.len()) as usize);
    opened
        .take(limit.max_bytes + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {}", file.display()))?;
    if bytes.len() as u64 > limit.max_bytes {
        return Err(refusal(
            file,
            limit,
            fix,
            format!(
                "it grew past {} while being read",
                describe_bytes(limit.max_bytes)
            ),
        ));
    }
    Ok(bytes)
}

/// Opens `file` for reading as [`read_limited`] reads it (a regular file
/// of at most `limit.max_bytes`, checked before and after a non-blocking
/// open), for readers that take a [`std::fs::File`] (an ELF reader reads
/// only the parts it needs). A reader of it must not read past
/// `limit.max_bytes`; [`read_bytes_limited`] does that for whole reads.
///
/// Errors: as [`read_limited`], but for UTF-8.
pub fn open_limited(file: &Path, limit: FileLimit, fix: &str) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let meta = std::fs::metadata(file).with_context(|| format!("reading {}", file.display()))?;
    check_limit(file, &meta, limit).map_err(|why| refusal(file, limit, fix, why))?;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(file)
        .with_context(|| format!("reading {}", file.display()))?;
    let meta = opened
        .metadata()
        .with_context(|| format!("reading {}", file.display()))?;
    check_limit(file, &meta, limit).map_err(|why| refusal(file, limit, fix, why))?;
    Ok(opened)
}

/// `FILE: not a WHAT: WHY; FIX` (`an` before a vowel; without `; FIX`
/// when `fix` is empty).
fn refusal(file: &Path, limit: FileLimit, fix: &str, why: String) -> anyhow::Error {
    let fix = if fix.is_empty() {
        String::new()
    } else {
        format!("; {fix}")
    };
    anyhow::anyhow!(
        "{}: not {}: {why}{fix}",
        file.display(),
        with_article(limit.what)
    )
}

/// `what` with its indefinite article (`an attribution.json`, `a
/// result.json`), unless it has one (`a device tree blob`, `the link map
/// ld wrote`).
fn with_article(what: &str) -> String {
    if ["a ", "an ", "the "].iter().any(|a| what.starts_with(a)) {
        return what.to_string();
    }
    let vowel = what
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c));
    format!("{} {what}", if vowel { "an" } else { "a" })
}

/// Why `meta` (of `file`) is not what `limit` accepts.
fn check_limit(
    file: &Path,
    meta: &std::fs::Metadata,
    limit: FileLimit,
) -> std::result::Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        if meta.len() <= limit.max_bytes {
            return Ok(());
        }
        return Err(format!(
            "it is {} bytes, more than the {} a {} may have",
            meta.len(),
            describe_bytes(limit.max_bytes),
            limit.what
        ));
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    };
    let link = match std::fs::read_link(file) {
        Ok(to) => format!("a symlink to {}, ", to.display()),
        Err(_) => String::new(),
    };
    Err(format!("it is {link}{what}, not a regular file"))
}

/// `16 MiB`, `512 KiB` or `100 bytes`.
pub fn describe_bytes(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// Whether `err` comes from a file that does not exist (an
/// [`std::io::ErrorKind::NotFound`] anywhere in its chain).
pub fn is_not_found(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_read_with_their_article() {
        assert_eq!(with_article("attribution.json"), "an attribution.json");
        assert_eq!(with_article("result.json"), "a result.json");
        assert_eq!(with_article("a device tree blob"), "a device tree blob");
        assert_eq!(with_article("OpenWrt make file"), "an OpenWrt make file");
    }
}
