//! `attribution.json`: which object file put each byte of a result's
//! vmlinux there, by section ([`crate::measure::linkmap`]), as the build
//! read it from ld's link map.
//!
//! Written next to `result.json` after the build (and by a later `build`
//! for a result that is up to date but lacks it); it names the sha256 of
//! the vmlinux it describes, so a report refuses one left from another
//! build.

use std::path::Path;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::measure::linkmap::{Attribution, SectionAttribution};
use crate::util::fs::{write_atomic, FileLimit};

/// File name in a results directory.
pub const FILE_NAME: &str = "attribution.json";

/// Layout version of the file.
pub const SCHEMA: u32 = 1;

/// The largest file read: a router vmlinux has a few thousand objects in
/// a few dozen sections, about 1 MiB of JSON.
pub const LIMIT: FileLimit = FileLimit {
    what: FILE_NAME,
    max_bytes: 64 << 20,
};

/// The most bytes a section, or an object's part of one, may claim in
/// `attribution.json`: 4 GiB, a 32-bit address space.
pub const MAX_SECTION_BYTES: u64 = 1 << 32;

/// What `attribution.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttributionRecord {
    /// [`SCHEMA`].
    pub schema: u32,
    /// sha256 of the vmlinux described, lowercase hex (result.json's
    /// `artifacts.vmlinux.sha256`).
    pub vmlinux_sha256: String,
    /// Where the map came from: `CONFIG_VMLINUX_MAP` (the kernel's own
    /// `vmlinux.map`) or `ld -Map` (the final link run again with a map).
    pub map: String,
    /// Every allocated section with its objects' bytes.
    pub sections: Vec<SectionAttribution>,
}

impl AttributionRecord {
    /// The attribution as [`crate::measure::linkmap`] works with it.
    pub fn attribution(&self) -> Attribution {
        Attribution {
            sections: self.sections.clone(),
        }
    }

    /// Reads `dir/attribution.json`; `None` when there is none.
    ///
    /// Errors: not a regular file of at most [`LIMIT`], not JSON of this
    /// layout, or another schema (each naming the file and `fix`).
    pub fn read(dir: &Path, fix: &str) -> Result<Option<AttributionRecord>> {
        let file = dir.join(FILE_NAME);
        let Some(record) = super::read_json_record::<AttributionRecord>(
            dir,
            (FILE_NAME, "an attribution", LIMIT),
            (SCHEMA, |r| r.schema),
            fix,
        )?
        else {
            return Ok(None);
        };
        // A 32-bit kernel's sections are under 4 GiB; with every size
        // under that, the sums over at most LIMIT's bytes of entries stay
        // far below u64's range and the differences below i64's.
        for section in &record.sections {
            // Names are paths of the object tree: a control character
            // (a newline ends a Markdown fence) is not one ld wrote.
            let named = std::iter::once(&section.name).chain(section.objects.keys());
            if let Some(name) = named
                .into_iter()
                .find(|n| n.chars().any(char::is_control) || n.len() > 4096)
            {
                bail!(
                    "{}: section {}: the name {:?} holds control characters or is over 4 KiB; {fix}",
                    file.display(),
                    crate::util::text::printable(&section.name),
                    crate::util::text::printable(name)
                );
            }
            let too_big = std::iter::once(("its size", section.size))
                .chain(section.objects.iter().map(|(o, b)| (o.as_str(), *b)))
                .find(|(_, b)| *b > MAX_SECTION_BYTES);
            if let Some((what, bytes)) = too_big {
                bail!(
                    "{}: section {}: {} is {bytes} bytes, more than a vmlinux section holds ({MAX_SECTION_BYTES}); {fix}",
                    file.display(),
                    crate::util::text::printable(&section.name),
                    crate::util::text::printable(what)
                );
            }
        }
        Ok(Some(record))
    }

    /// [`AttributionRecord::read`], then that the record describes
    /// `result`'s vmlinux (its sha256): what the report and a merge accept.
    ///
    /// Errors: those of `read`, or another vmlinux (naming the file and
    /// `fix`).
    pub fn read_for(
        dir: &Path,
        result: &super::BuildResult,
        fix: &str,
    ) -> Result<Option<AttributionRecord>> {
        let Some(record) = Self::read(dir, fix)? else {
            return Ok(None);
        };
        super::check_vmlinux(&dir.join(FILE_NAME), result, &record.vmlinux_sha256, fix)?;
        Ok(Some(record))
    }

    /// Writes `dir/attribution.json` atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let mut json = serde_json::to_string(self)?;
        json.push('\n');
        write_atomic(&dir.join(FILE_NAME), json.as_bytes())
    }
}
