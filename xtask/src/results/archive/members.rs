//! A results archive's members, read with the `tar` crate: what a member
//! is (its type, name and size) comes from its header as the crate parses
//! it, never from `tar -tv`'s text, and the crate also writes what was
//! checked, so no second parser can read the archive differently.
//!
//! [`scan`] reads the headers and every `result.json` (nothing else is
//! read into memory, nothing is written) and decides whether every member
//! is one a build writes; [`extract`] then writes one result's members
//! into a staging directory, checking each artifact's sha256.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use sha2::{Digest, Sha256};
use tar::EntryType;

use crate::results::openwrt::CLASSIFICATION_FILE;
use crate::results::{attribution, device_fit, BuildResult, FILE_NAME, LIMIT};
use crate::util::fs::{describe_bytes, FileLimit, MAX_RECORD_BYTES};

/// The largest artifact merged, in bytes: a router's vmlinux is 5–20 MB,
/// one with debug information a few hundred.
pub const MAX_ARTIFACT_BYTES: u64 = 1 << 30;

/// The largest `build.log` merged: a verbose (`V=1`) router build's is
/// about 50 MB.
pub const MAX_LOG_BYTES: u64 = 256 << 20;

/// The largest GNU long-name or pax header read (the crate reads them
/// whole into memory): a member name is a few dozen bytes.
const MAX_EXTENSION_BYTES: u64 = 64 << 10;

/// One `<target>/<variant>/` of an archive: its parsed result and its
/// member files (file name → size in bytes).
#[derive(Debug)]
pub(super) struct ArchivedResult {
    pub(super) target: String,
    pub(super) variant: String,
    pub(super) result: BuildResult,
    /// The `result.json` bytes as read (and parsed) by [`scan`].
    pub(super) record: Vec<u8>,
    pub(super) files: BTreeMap<String, u64>,
}

/// A member must be `<target>/` or `<target>/<variant>/` (a directory) or
/// a regular file `<target>/<variant>/<file>`, each part a plain name
/// (not `..`, not absolute, not hidden), written canonically: no `.`
/// part, no empty part (`a//b`), no `/` after a file's name. A name that
/// is not canonical reads as another member's (`t/./v/zImage` is
/// `t/v/zImage` to a path library) and was skipped, unmerged and
/// unchecked. `kind` is the member's type as its tar header says; links,
/// devices, FIFOs and sparse files are refused.
pub fn check_member(name: &str, kind: EntryType) -> std::result::Result<(), String> {
    let directory = kind == EntryType::Directory;
    let body = match name.strip_suffix('/') {
        Some(body) if directory => body,
        _ => name,
    };
    let parts: Vec<&str> = body.split('/').collect();
    let escapes = name.starts_with('/') || parts.contains(&"..");
    let plain =
        !escapes && !body.is_empty() && parts.iter().all(|p| !p.is_empty() && !p.starts_with('.'));
    let depth = parts.len();
    match kind {
        _ if escapes => Err(format!(
            "member {name:?} would escape its results directory (absolute or `..`)"
        )),
        _ if parts.iter().any(|p| p.starts_with('.') && *p != ".") => Err(format!(
            "member {name:?} would escape its results directory (a hidden name)"
        )),
        _ if !plain => Err(format!(
            "member {name:?} is not a canonical path (a `.` part, an empty part or a `/` \
             after a file's name): it would read as another member; write \
             <target>/<variant>/<file>"
        )),
        // Target and variant names (and the files of a build) are plain
        // ASCII: anything else (an escape sequence) would reach the
        // terminal in what merge prints.
        _ if !parts.iter().all(|p| plain_part(p)) => Err(format!(
            "member {name:?} has a name part of characters no target, variant or build \
                 file has (only ASCII letters, digits and `._-~+`)"
        )),
        EntryType::Directory if (1..=2).contains(&depth) => Ok(()),
        EntryType::Regular if depth == 3 => Ok(()),
        EntryType::Directory | EntryType::Regular => {
            Err(format!("member {name:?} is not <target>/<variant>/<file>"))
        }
        EntryType::GNUSparse => Err(sparse(name)),
        _ => Err(format!(
            "member {name:?} is a link or special file, which could point outside the results"
        )),
    }
}

/// Whether `part` is a name a results directory holds: a target, a
/// variant (`baseline~control`, `baseline~bisect-…`) or a build's file,
/// ASCII letters, digits and `._-~+` only, not hidden, not an option.
pub fn plain_part(part: &str) -> bool {
    !part.is_empty()
        && !part.starts_with(['.', '-'])
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-~+".contains(&b))
}

/// Why a sparse member (any form: GNU's `S` type, PAX sparse 0.0, 0.1 or
/// 1.0) is refused: its stored bytes are not its contents, and no build
/// writes one.
fn sparse(name: &str) -> String {
    format!("member {name:?} is a sparse file, which no build writes")
}

/// The first `GNU.sparse.*` record of the PAX header in front of `entry`
/// (GNU tar's PAX sparse formats 0.0, 0.1 and 1.0 mark a member with
/// them; the `tar` crate reads such a member as its packed data, not its
/// contents), if any.
fn pax_sparse_key<R: Read>(entry: &mut tar::Entry<'_, R>) -> Result<Option<String>> {
    let Some(extensions) = entry
        .pax_extensions()
        .context("not a tar (a damaged pax header)")?
    else {
        return Ok(None);
    };
    for extension in extensions {
        let extension = extension.context("not a tar (a damaged pax header)")?;
        let key = String::from_utf8_lossy(extension.key_bytes());
        if key.starts_with("GNU.sparse.") {
            return Ok(Some(key.into_owned()));
        }
    }
    Ok(None)
}

/// Refuses `entry` when a PAX header marks it sparse ([`pax_sparse_key`]).
fn refuse_pax_sparse<R: Read>(entry: &mut tar::Entry<'_, R>, name: &str) -> Result<()> {
    if let Some(key) = pax_sparse_key(entry)? {
        bail!("{} (its pax header has {key})", sparse(name));
    }
    Ok(())
}

/// Opens `archive`: a regular file (a FIFO or a device would hang or
/// never end), opened without blocking, and not compressed ([`COMPRESSED`]:
/// the tar crate would say "numeric field did not have utf-8 text" of a
/// header checksum instead).
pub(super) fn open(archive: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(archive)
        .map_err(|e| anyhow!("not readable ({e})"))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        bail!("not a regular file");
    }
    let mut head = [0u8; 6];
    let n = file
        .read(&mut head)
        .map_err(|e| anyhow!("not readable ({e})"))?;
    if let Some((format, _, decompress)) =
        COMPRESSED.iter().find(|(_, m, _)| head[..n].starts_with(m))
    {
        bail!(
            "it is {format}-compressed, and results merge reads the plain tar `results export` \
             writes; decompress it first (`{decompress} {}`) and merge the .tar",
            archive.display()
        );
    }
    file.seek(SeekFrom::Start(0))?;
    Ok(file)
}

/// Compressed formats by their magic number (each format's
/// specification: RFC 1952 gzip, the .xz file format, bzip2's `BZh`, RFC
/// 8878 zstd, the LZ4 frame format, lzip, compress's `.Z`), with the
/// command that decompresses a file and keeps it.
pub const COMPRESSED: &[(&str, &[u8], &str)] = &[
    ("gzip", &[0x1f, 0x8b], "gzip -dk"),
    ("xz", &[0xfd, b'7', b'z', b'X', b'Z', 0x00], "xz -dk"),
    ("bzip2", b"BZh", "bzip2 -dk"),
    ("zstd", &[0x28, 0xb5, 0x2f, 0xfd], "zstd -d"),
    ("lz4", &[0x04, 0x22, 0x4d, 0x18], "lz4 -d"),
    ("lzip", b"LZIP", "lzip -dk"),
    (
        "compress",
        &[0x1f, 0x9d],
        "uncompress -c FILE > FILE.tar, for FILE =",
    ),
];

/// Reads every member header of `file` and every `result.json` (see the
/// module docs). Errors say why the archive is refused: a member outside
/// `<target>/<variant>/<file>` or not a regular file, a header too large,
/// a `result.json` larger than [`LIMIT`] or unreadable, a member no build
/// writes ([`expected`]), an artifact missing, no results at all.
pub(super) fn scan(file: &mut File) -> Result<Vec<ArchivedResult>> {
    check_extension_headers(file)?;
    file.seek(SeekFrom::Start(0))?;
    let mut archive = tar::Archive::new(&*file);
    let mut records: BTreeMap<(String, String), (Vec<u8>, BuildResult)> = BTreeMap::new();
    let mut files: BTreeMap<(String, String), BTreeMap<String, u64>> = BTreeMap::new();
    let mut dirs = Vec::new();
    for entry in archive.entries_with_seek().context("not a tar")? {
        let mut entry = entry.context("not a tar (a damaged member header)")?;
        let name = member_name(&entry)?;
        refuse_pax_sparse(&mut entry, &name)?;
        check_member(&name, entry.header().entry_type()).map_err(|e| anyhow!(e))?;
        let parts: Vec<&str> = name.split('/').filter(|p| !p.is_empty()).collect();
        let [target, variant, file_name] = parts[..] else {
            if let [target, variant] = parts[..] {
                dirs.push((target.to_string(), variant.to_string()));
            }
            continue;
        };
        let key = (target.to_string(), variant.to_string());
        let size = entry.size();
        let listed = files.entry(key.clone()).or_default();
        if listed.insert(file_name.to_string(), size).is_some() {
            bail!("member {name:?} appears twice");
        }
        if file_name == FILE_NAME {
            if size > LIMIT.max_bytes {
                bail!(
                    "{name} is {size} bytes, more than the {} a result.json may have",
                    describe_bytes(LIMIT.max_bytes)
                );
            }
            let mut bytes = Vec::with_capacity(size as usize);
            entry
                .read_to_end(&mut bytes)
                .with_context(|| format!("reading {name}"))?;
            let result = std::str::from_utf8(&bytes)
                .map_err(|e| anyhow!("not UTF-8 text ({e})"))
                .and_then(|text| BuildResult::from_json(text, Path::new(&name)))
                .map_err(|e| anyhow!("{name} is unreadable: {e:#}"))?;
            records.insert(key, (bytes, result));
        }
    }
    for dir in dirs {
        files.entry(dir).or_default();
    }
    let mut found = Vec::new();
    for ((target, variant), files) in files {
        let dir = format!("{target}/{variant}");
        let Some((record, result)) = records.remove(&(target.clone(), variant.clone())) else {
            bail!("{dir} has no {FILE_NAME}");
        };
        if (result.target.name.as_str(), result.variant.name.as_str()) != (&target, &variant) {
            bail!(
                "{dir} holds the result of {}/{}",
                result.target.name,
                result.variant.name
            );
        }
        for (file, size) in &files {
            expected(&result, file, *size).map_err(|why| anyhow!("{dir}/{file} {why}"))?;
        }
        if let Some(missing) = result.artifacts.keys().find(|a| !files.contains_key(*a)) {
            bail!("{dir}/{FILE_NAME} lists the artifact {missing}, which is not in the archive");
        }
        found.push(ArchivedResult {
            target,
            variant,
            result,
            record,
            files,
        });
    }
    if found.is_empty() {
        bail!("it holds no results");
    }
    Ok(found)
}

/// Whether `file` (of `size` bytes) is a member a build of `result`
/// writes into its results directory; `Err` says why not, after the
/// member's name: `result.json`; each artifact it lists, of the recorded
/// size (1 byte to [`MAX_ARTIFACT_BYTES`]); `build.log` (at most
/// [`MAX_LOG_BYTES`]); `openwrt-patches.json` and `device-fit.json` of an
/// OpenWrt-mode build; `attribution.json` (at most [`attribution::LIMIT`]); `vmlinux.bin`, made on the side for `vmlinux.lzma` or a uImage; a lab
/// kernel's device tree (a `.dtb` make goal's file name).
pub fn expected(result: &BuildResult, file: &str, size: u64) -> std::result::Result<(), String> {
    let within = |max: u64| {
        if size <= max {
            Ok(())
        } else {
            Err(format!(
                "is {size} bytes, more than the {} a {file} may have",
                describe_bytes(max)
            ))
        }
    };
    if file == FILE_NAME {
        return Ok(());
    }
    if let Some(record) = result.artifacts.get(file) {
        if record.size == 0 || record.size > MAX_ARTIFACT_BYTES {
            return Err(format!(
                "is recorded as {} bytes in {FILE_NAME}; an artifact has 1 byte to {}",
                record.size,
                describe_bytes(MAX_ARTIFACT_BYTES)
            ));
        }
        if record.size != size {
            return Err(format!(
                "is {size} bytes, but {FILE_NAME} records {}",
                record.size
            ));
        }
        return Ok(());
    }
    let made_on_the_side = file == "vmlinux.bin"
        && ["vmlinux.lzma", "uImage"]
            .iter()
            .any(|a| result.artifacts.contains_key(*a));
    let device_tree = result.target.make_targets.iter().any(|goal| {
        goal.ends_with(".dtb") && Path::new(goal).file_name().is_some_and(|n| n == file)
    });
    match file {
        "build.log" => within(MAX_LOG_BYTES),
        CLASSIFICATION_FILE if result.openwrt.is_some() => within(MAX_RECORD_BYTES),
        device_fit::FILE_NAME if result.openwrt.is_some() => within(device_fit::LIMIT.max_bytes),
        attribution::FILE_NAME => within(attribution::LIMIT.max_bytes),
        _ if made_on_the_side => within(MAX_ARTIFACT_BYTES),
        _ if device_tree => within(16 << 20),
        _ => {
            let artifacts: Vec<&str> = result.artifacts.keys().map(String::as_str).collect();
            Err(format!(
                "is not a file a build writes ({FILE_NAME}, build.log, {}, or an \
                 artifact {FILE_NAME} lists: {})",
                attribution::FILE_NAME,
                artifacts.join(", ")
            ))
        }
    }
}

/// Checks the JSON records beside `dir`'s `result.json` (`result`) as
/// their readers check them: `attribution.json` and `device-fit.json`
/// as the report reads them (each for `result`'s vmlinux, and target),
/// `openwrt-patches.json` as JSON. A missing one is fine.
///
/// Errors: the first record that fails, naming the file and `fix`.
pub fn check_records(dir: &Path, result: &BuildResult, fix: &str) -> Result<()> {
    attribution::AttributionRecord::read_for(dir, result, fix)?;
    device_fit::DeviceFitRecord::read_for(dir, result, fix)?;
    let file = dir.join(CLASSIFICATION_FILE);
    match crate::util::fs::read_limited(&file, FileLimit::record(CLASSIFICATION_FILE), fix) {
        Ok(text) => {
            serde_json::from_str::<serde_json::Value>(&text)
                .map_err(|e| anyhow!("{}: not JSON ({e}); {fix}", file.display()))?;
        }
        Err(e) if crate::util::fs::is_not_found(&e) => {}
        Err(e) => return Err(e),
    }
    Ok(())
}

/// Writes the members of `found` from `file` into `into` (an empty
/// directory): `result.json` as [`scan`] read it, every other member
/// checked again against what [`scan`] saw (the archive may have been
/// rewritten since), each artifact's sha256 against its record, then the
/// JSON records as their readers check them ([`check_records`]).
pub(super) fn extract(file: &mut File, found: &ArchivedResult, into: &Path) -> Result<()> {
    file.seek(SeekFrom::Start(0))?;
    let mut archive = tar::Archive::new(&*file);
    let prefix = format!("{}/{}/", found.target, found.variant);
    let mut written = 0;
    for entry in archive.entries_with_seek()? {
        let mut entry = entry?;
        let name = member_name(&entry)?;
        refuse_pax_sparse(&mut entry, &name)?;
        check_member(&name, entry.header().entry_type()).map_err(|e| anyhow!(e))?;
        let Some(file_name) = name.strip_prefix(&prefix).filter(|f| !f.is_empty()) else {
            continue;
        };
        let size = entry.size();
        if found.files.get(file_name) != Some(&size)
            || entry.header().entry_type() != EntryType::Regular
        {
            bail!("{name} changed while the archive was being merged");
        }
        let path = into.join(file_name);
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        if file_name == FILE_NAME {
            out.write_all(&found.record)
                .with_context(|| format!("writing {}", path.display()))?;
        } else {
            let mut hasher = Sha256::new();
            let mut buf = vec![0u8; 1 << 20];
            let mut copied = 0u64;
            loop {
                let n = entry
                    .read(&mut buf)
                    .with_context(|| format!("reading {name}"))?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
                out.write_all(&buf[..n])
                    .with_context(|| format!("writing {}", path.display()))?;
                copied += n as u64;
            }
            if copied != size {
                bail!("{name} is cut short: {copied} of {size} bytes");
            }
            if let Some(record) = found.result.artifacts.get(file_name) {
                let digest = hex::encode(hasher.finalize());
                if digest != record.sha256 {
                    bail!(
                        "{name} has sha256 {digest}, but {prefix}{FILE_NAME} records {}",
                        record.sha256
                    );
                }
            }
        }
        out.sync_all()
            .with_context(|| format!("writing {}", path.display()))?;
        written += 1;
    }
    if written != found.files.len() {
        bail!("{prefix} changed while the archive was being merged");
    }
    check_records(into, &found.result, "export the result again")
        .map_err(|e| anyhow!("{prefix}: {e:#}"))
}

/// Refuses GNU long-name and pax headers larger than
/// [`MAX_EXTENSION_BYTES`] (the crate would read them whole) and pax
/// global headers (which xtask's exports never hold), reading headers
/// only.
fn check_extension_headers(file: &mut File) -> Result<()> {
    file.seek(SeekFrom::Start(0))?;
    let mut archive = tar::Archive::new(&*file);
    for entry in archive.entries_with_seek().context("not a tar")?.raw(true) {
        let entry = entry.context("not a tar (a damaged member header)")?;
        let kind = entry.header().entry_type();
        if kind.is_gnu_sparse() {
            // Its extended sparse headers would throw this raw reading off.
            bail!("{}", sparse(&String::from_utf8_lossy(&entry.path_bytes())));
        }
        if kind.is_pax_global_extensions() {
            bail!("it holds a pax global header, which `results export` never writes");
        }
        let extension =
            kind.is_gnu_longname() || kind.is_gnu_longlink() || kind.is_pax_local_extensions();
        if extension && entry.size() > MAX_EXTENSION_BYTES {
            bail!(
                "a member's name or pax header is {} bytes, more than {}",
                entry.size(),
                describe_bytes(MAX_EXTENSION_BYTES)
            );
        }
    }
    Ok(())
}

/// The member's name as UTF-8 (results paths are UTF-8).
fn member_name<R: Read>(entry: &tar::Entry<'_, R>) -> Result<String> {
    let bytes = entry.path_bytes();
    String::from_utf8(bytes.into_owned()).map_err(|e| {
        anyhow!(
            "member name {:?} is not UTF-8",
            String::from_utf8_lossy(e.as_bytes())
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member whose header claims 3 GB is refused from the header, before
    /// anything is read (here the archive holds no data at all).
    #[test]
    fn a_huge_result_json_is_refused_from_its_header() {
        let mut header = tar::Header::new_gnu();
        header.set_path("t/v/result.json").unwrap();
        header.set_size(3 << 30);
        header.set_entry_type(EntryType::Regular);
        header.set_cksum();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.tar");
        std::fs::write(&path, header.as_bytes()).unwrap();
        let err = scan(&mut open(&path).unwrap()).unwrap_err().to_string();
        assert!(
            err.contains("t/v/result.json is 3221225472 bytes, more than the 16 MiB"),
            "{err}"
        );
    }

    #[test]
    fn members_stay_in_their_results_directory() {
        assert!(check_member("t/v/", EntryType::Directory).is_ok());
        assert!(check_member("t/", EntryType::Directory).is_ok());
        assert!(check_member("t/v/result.json", EntryType::Regular).is_ok());
        assert!(check_member("t/v/vmlinux", EntryType::Regular).is_ok());
        for (name, kind) in [
            ("/etc/passwd", EntryType::Regular),
            ("t/../../x", EntryType::Regular),
            ("../t/v/result.json", EntryType::Regular),
            ("t/v/sub/file", EntryType::Regular),
            ("t/result.json", EntryType::Regular),
            ("t/v/link", EntryType::Symlink),
            ("t/v/hard", EntryType::Link),
            ("t/.hidden/x", EntryType::Regular),
            ("t/v/sparse", EntryType::GNUSparse),
            ("t/v/fifo", EntryType::Fifo),
            ("t/v/dev", EntryType::Char),
            ("./t/v/x", EntryType::Regular),
            ("t/./v/x", EntryType::Regular),
            ("t//v/x", EntryType::Regular),
            ("t/v/x/", EntryType::Regular),
            ("t/v/./", EntryType::Directory),
            ("t//", EntryType::Directory),
            ("", EntryType::Directory),
            // The hostile trial's F8: merge printed this raw.
            ("t\u{1b}]0;PWNED\u{7}/v/x", EntryType::Regular),
            ("t/v\u{202e}/x", EntryType::Regular),
            ("t/v w/x", EntryType::Regular),
        ] {
            assert!(check_member(name, kind).is_err(), "{name} accepted");
        }
    }
}
