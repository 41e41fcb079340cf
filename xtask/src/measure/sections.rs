//! Section sizes of an ELF file in binutils `size`'s Berkeley format.
//!
//! The rule is binutils' `berkeley_sum` (size.c), with BFD's ELF section
//! flags: only `SHF_ALLOC` sections count; a section that is executable
//! (`SHF_EXECINSTR`) or read-only (no `SHF_WRITE`) is *text*; otherwise a
//! section with contents (not `SHT_NOBITS`) is *data*, and the rest is *bss*.

use std::path::Path;

use anyhow::{Context, Result};
use object::elf;
use object::read::elf::{FileHeader, SectionHeader};
use object::read::ReadCache;
use object::{Endianness, ReadRef};
use serde::{Deserialize, Serialize};

/// text, data and bss in bytes, as `size` (Berkeley format) prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionSizes {
    /// Code and read-only data, in bytes.
    pub text: u64,
    /// Writable initialised data, in bytes.
    pub data: u64,
    /// Zero-initialised data (no file contents), in bytes.
    pub bss: u64,
}

impl SectionSizes {
    /// `dec`: text + data + bss, in bytes.
    pub fn dec(&self) -> u64 {
        self.text + self.data + self.bss
    }
}

/// Reads the ELF and section headers of `path` (through `object`'s
/// [`ReadCache`], not the whole file) and sums its sections as `size` does.
///
/// Errors when the file cannot be read or is not an ELF file (naming the file).
pub fn berkeley_sizes(path: &Path) -> Result<SectionSizes> {
    let file = crate::util::fs::open_limited(
        path,
        crate::util::fs::FileLimit::binary("ELF file"),
        "build it again",
    )?;
    let cache = ReadCache::new(file);
    berkeley_sizes_from(&cache)
        .with_context(|| format!("{}: not a readable ELF file", path.display()))
}

/// [`berkeley_sizes`] over an in-memory ELF image (32- or 64-bit, either endianness).
pub fn berkeley_sizes_of(elf: &[u8]) -> Result<SectionSizes> {
    berkeley_sizes_from(elf)
}

fn berkeley_sizes_from<'data, R: ReadRef<'data>>(elf: R) -> Result<SectionSizes> {
    match object::FileKind::parse(elf)? {
        object::FileKind::Elf32 => sum_sections::<elf::FileHeader32<Endianness>, R>(elf),
        object::FileKind::Elf64 => sum_sections::<elf::FileHeader64<Endianness>, R>(elf),
        other => anyhow::bail!("not an ELF file ({other:?})"),
    }
}

/// `size`'s class of an allocated section (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SectionClass {
    /// Executable or read-only.
    Text,
    /// Writable, with contents.
    Data,
    /// Writable, without contents (`SHT_NOBITS`).
    Bss,
}

/// One `SHF_ALLOC` section of an ELF file: what `size -A` lists (it also
/// lists the others), with the class `size`'s Berkeley format sums it in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocSection {
    /// Section name.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Text, data or bss.
    pub class: SectionClass,
}

/// Every `SHF_ALLOC` section of the ELF file at `path`, in section-header
/// order, with its class; their sizes by class add up to
/// [`berkeley_sizes`].
///
/// Errors when the file cannot be read or is not an ELF file (naming the file).
pub fn alloc_sections(path: &Path) -> Result<Vec<AllocSection>> {
    let file =
        crate::util::fs::open_limited(path, crate::util::fs::FileLimit::binary("an ELF file"), "")?;
    let cache = ReadCache::new(file);
    let read = || -> Result<Vec<AllocSection>> {
        match object::FileKind::parse(&cache)? {
            object::FileKind::Elf32 => list::<elf::FileHeader32<Endianness>, _>(&cache),
            object::FileKind::Elf64 => list::<elf::FileHeader64<Endianness>, _>(&cache),
            other => anyhow::bail!("not an ELF file ({other:?})"),
        }
    };
    read().with_context(|| format!("{}: not a readable ELF file", path.display()))
}

fn class_of<H: FileHeader<Endian = Endianness>>(
    section: &H::SectionHeader,
    endian: Endianness,
) -> Option<SectionClass> {
    let flags = section.sh_flags(endian).0;
    if flags & elf::SHF_ALLOC.0 == 0 {
        return None;
    }
    Some(
        if flags & elf::SHF_EXECINSTR.0 != 0 || flags & elf::SHF_WRITE.0 == 0 {
            SectionClass::Text
        } else if section.sh_type(endian) != elf::SHT_NOBITS {
            SectionClass::Data
        } else {
            SectionClass::Bss
        },
    )
}

fn list<'data, H: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    data: R,
) -> Result<Vec<AllocSection>> {
    let header = H::parse(data)?;
    let endian = header.endian()?;
    let table = header.sections(endian, data)?;
    let mut out = Vec::new();
    for section in table.iter() {
        let Some(class) = class_of::<H>(section, endian) else {
            continue;
        };
        let name = table
            .section_name(endian, section)
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        out.push(AllocSection {
            name,
            size: section.sh_size(endian).into(),
            class,
        });
    }
    Ok(out)
}

fn sum_sections<'data, H: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    data: R,
) -> Result<SectionSizes> {
    let header = H::parse(data)?;
    let endian = header.endian()?;
    let mut sizes = SectionSizes {
        text: 0,
        data: 0,
        bss: 0,
    };
    for section in header.sections(endian, data)?.iter() {
        let size: u64 = section.sh_size(endian).into();
        match class_of::<H>(section, endian) {
            Some(SectionClass::Text) => sizes.text += size,
            Some(SectionClass::Data) => sizes.data += size,
            Some(SectionClass::Bss) => sizes.bss += size,
            None => {}
        }
    }
    Ok(sizes)
}
