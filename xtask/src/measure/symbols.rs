//! ELF symbol tables as binutils `nm --size-sort` lists them.
//!
//! [`read_symbols`] reads the static symbol table (`.symtab`) with the
//! `object` crate and keeps exactly the symbols that `nm --size-sort` prints,
//! each with its size in bytes and nm's one-letter type. The rules are those
//! of binutils 2.40:
//!
//! * Which symbols (nm.c `filter_symbols`, `sort_symbols_by_size`): not the
//!   null symbol, not section or file symbols (BFD marks them
//!   `BSF_DEBUGGING`), not undefined or absolute symbols (dropped by
//!   `--size-sort`), not the target's "special" symbols (ARM and AArch64
//!   mapping symbols `$a`, `$t`, `$d`, `$x`, …), and not symbols whose
//!   `st_size` is 0.
//! * Which section a symbol is in (bfd elfcode.h `elf_slurp_symbol_table`,
//!   elfxx-mips.c `_bfd_mips_elf_symbol_processing`): `SHN_UNDEF` is
//!   undefined, `SHN_ABS` absolute, `SHN_COMMON` common; an index of a
//!   section BFD does not represent as a section (the symbol table, its
//!   string tables, reloc sections of relocatable files, out-of-range
//!   indices) counts as absolute; on MIPS `SHN_MIPS_SCOMMON` is small
//!   common, `SHN_MIPS_ACOMMON` an allocated `.acommon` section,
//!   `SHN_MIPS_TEXT`/`SHN_MIPS_DATA` the `.text`/`.data` sections and
//!   `SHN_MIPS_SUNDEFINED` undefined.
//! * The letter (bfd syms.c `bfd_decode_symclass`, `coff_section_type`,
//!   `decode_section_type`, with section flags from elf.c
//!   `_bfd_elf_make_section_from_shdr`): common `C` (`c` if small); GNU
//!   ifunc `i`; weak `V` (object) or `W`; `STB_GNU_UNIQUE` `u`; otherwise
//!   the section's letter — `t` executable, `r` read-only data, `d` data,
//!   `b` bss (no contents), `N` debugging, `n` other read-only, `?` else —
//!   upper-cased for `STB_GLOBAL` symbols. (BFD's small-data letters `g`
//!   and `s` need `SEC_SMALL_DATA`, which reading an ELF section never
//!   sets — not even MIPS `SHF_MIPS_GPREL` `.sdata`/`.sbss`, checked
//!   against nm 2.40.)
//!
//! `nm` sorts by size, then by name with `strcoll`; [`SymbolTable::symbols`]
//! is sorted by size, then by the bytes of the name (nm's order under
//! `LC_ALL=C`).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};
use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::read::ReadCache;
use object::{Endianness, ReadRef};

/// One line of `nm --size-sort`: `SIZE TYPE NAME`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NmSymbol {
    /// The symbol's name as stored in the string table (invalid UTF-8 is
    /// replaced with U+FFFD).
    pub name: String,
    /// `st_size`, in bytes; never 0 (nm's `--size-sort` drops size 0).
    pub size: u64,
    /// nm's one-letter type (`T`, `t`, `D`, `d`, `B`, `b`, `R`, `r`, `V`,
    /// `W`, `C`, …), from bfd's `bfd_decode_symclass`.
    pub kind: char,
}

/// The symbols of one ELF file, as `nm --size-sort` lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolTable {
    /// 32 or 64: nm prints sizes with 8 or 16 hex digits accordingly.
    pub address_bits: u32,
    /// Sorted by size, then by name bytes.
    pub symbols: Vec<NmSymbol>,
}

impl SymbolTable {
    /// The text `LC_ALL=C nm --size-sort` prints for this file: one
    /// `%08x TYPE NAME` line per symbol (`%016x` for 64-bit files).
    pub fn to_nm_text(&self) -> String {
        let width = if self.address_bits == 64 { 16 } else { 8 };
        let mut out = String::new();
        for sym in &self.symbols {
            let _ = writeln!(out, "{:0width$x} {} {}", sym.size, sym.kind, sym.name);
        }
        out
    }
}

/// Reads the symbol table of the ELF file at `path` (32- or 64-bit, either
/// endianness) as `nm --size-sort` would list it.
///
/// Errors, naming the file, when it cannot be read, is not ELF, or is
/// truncated (headers, the symbol table, or a section's contents reaching
/// past the end of the file). A file without `.symtab` has no symbols.
pub fn read_symbols(path: &Path) -> Result<SymbolTable> {
    let bytes = read_tables(path)?;
    read_symbols_of(&bytes).with_context(|| format!("{}: not a readable ELF file", path.display()))
}

/// The symbols [`read_symbols`] lists, in the symbol table's order rather
/// than nm's: for [`crate::measure::bloat::diff`], which sums sizes by
/// name and sorts its own rows. Leaving out nm's sort by size and name
/// (most symbols share a size with others, so most comparisons compare
/// names) saves about a fifth of `size-report --symbols`'s CPU time on a
/// bcm53xx pair (`perf record`; `cargo xtask bench symbols` times it).
///
/// Errors: as [`read_symbols`].
pub fn read_unsorted(path: &Path) -> Result<Vec<NmSymbol>> {
    let bytes = read_tables(path)?;
    listed(&bytes)
        .map(|(_, symbols)| nm_symbols(symbols))
        .with_context(|| format!("{}: not a readable ELF file", path.display()))
}

/// The file at `path` as a buffer of its length that holds only what
/// [`read_symbols_of`] reads: the ELF header, the section headers and the
/// symbol, string and extended-index tables, each at its offset; the rest
/// stays zero and is never paged in (a router vmlinux is 5–10 MB, these
/// tables under a fifth of it). A file `object` cannot parse this far is
/// read whole, so [`read_symbols_of`] reports what is wrong with it. It
/// must be a regular file of at most [`crate::util::fs::MAX_BINARY_BYTES`]
/// ([`crate::util::fs::open_limited`]: a symlink to `/dev/zero` or a FIFO put in a
/// results directory is refused, not read for ever).
fn read_tables(path: &Path) -> Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let limit = crate::util::fs::FileLimit::binary("ELF file");
    let file = crate::util::fs::open_limited(path, limit, "build it again")?;
    let len = file
        .metadata()
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    let ranges = {
        let cache = ReadCache::new(&file);
        match object::FileKind::parse(&cache) {
            Ok(object::FileKind::Elf32) => table_ranges::<elf::FileHeader32<Endianness>, _>(&cache),
            Ok(object::FileKind::Elf64) => table_ranges::<elf::FileHeader64<Endianness>, _>(&cache),
            _ => None,
        }
    };
    let Some(ranges) = ranges else {
        return crate::util::fs::read_bytes_limited(path, limit, "build it again");
    };
    let mut data = vec![0u8; usize::try_from(len)?];
    for range in ranges {
        let end = range.end.min(len);
        if range.start < end {
            file.read_exact_at(&mut data[range.start as usize..end as usize], range.start)
                .with_context(|| format!("reading {}", path.display()))?;
        }
    }
    Ok(data)
}

/// The byte ranges [`read_tables`] reads, or `None` when the headers do
/// not parse.
fn table_ranges<'data, H: FileHeader<Endian = Endianness>, R: ReadRef<'data>>(
    data: R,
) -> Option<Vec<std::ops::Range<u64>>> {
    let header = H::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, data).ok()?;
    let shoff: u64 = header.e_shoff(endian).into();
    let table = sections.len() as u64 * u64::from(header.e_shentsize(endian));
    let mut ranges = vec![
        0..std::mem::size_of::<H>() as u64,
        shoff..shoff.saturating_add(table),
    ];
    for section in sections.iter() {
        let sh_type = section.sh_type(endian);
        if sh_type == elf::SHT_SYMTAB
            || sh_type == elf::SHT_STRTAB
            || sh_type == elf::SHT_SYMTAB_SHNDX
        {
            let offset: u64 = section.sh_offset(endian).into();
            let size: u64 = section.sh_size(endian).into();
            ranges.push(offset..offset.saturating_add(size));
        }
    }
    Some(ranges)
}

/// [`read_symbols`] over an in-memory ELF image.
pub fn read_symbols_of(data: &[u8]) -> Result<SymbolTable> {
    let (address_bits, mut symbols) = listed(data)?;
    symbols.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    Ok(SymbolTable {
        address_bits,
        symbols: nm_symbols(symbols),
    })
}

/// A symbol nm lists: its size in bytes, its name's bytes, its letter.
type Listed<'data> = (u64, &'data [u8], char);

/// The ELF class in bits (32 or 64) and the symbols nm lists, in the
/// symbol table's order.
fn listed(data: &[u8]) -> Result<(u32, Vec<Listed<'_>>)> {
    match object::FileKind::parse(data)? {
        object::FileKind::Elf32 => Ok((32, symbols::<elf::FileHeader32<Endianness>>(data)?)),
        object::FileKind::Elf64 => Ok((64, symbols::<elf::FileHeader64<Endianness>>(data)?)),
        other => bail!("not an ELF file ({other:?})"),
    }
}

/// Where BFD puts a symbol (the part of `asymbol::section` nm looks at).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Undefined,
    Absolute,
    /// Common; `true` for MIPS small common (`.scommon`).
    Common(bool),
    /// A BFD section, with its lower-case letter.
    Section(char),
}

const SHN_MIPS_ACOMMON: u16 = 0xff00;
const SHN_MIPS_TEXT: u16 = 0xff01;
const SHN_MIPS_DATA: u16 = 0xff02;
const SHN_MIPS_SCOMMON: u16 = 0xff03;
const SHN_MIPS_SUNDEFINED: u16 = 0xff04;
const SHT_MIPS_DEBUG: u32 = 0x7000_0005;
const SHT_MIPS_DWARF: u32 = 0x7000_001e;

fn symbols<H: FileHeader<Endian = Endianness>>(data: &[u8]) -> Result<Vec<Listed<'_>>> {
    let header = H::parse(data)?;
    let endian = header.endian()?;
    let machine = header.e_machine(endian);
    let is_mips = machine == elf::EM_MIPS;
    let relocatable = header.e_type(endian) == elf::ET_REL;
    let sections = header.sections(endian, data)?;
    let shstrndx = header.shstrndx(endian, data)? as usize;

    for (index, section) in sections.enumerate() {
        if section.sh_type(endian) == elf::SHT_NOBITS || section.sh_type(endian) == elf::SHT_NULL {
            continue;
        }
        let offset: u64 = section.sh_offset(endian).into();
        let size: u64 = section.sh_size(endian).into();
        if offset
            .checked_add(size)
            .is_none_or(|end| end > data.len() as u64)
        {
            bail!(
                "truncated: section {} ends at {}, past the end of the file ({} bytes)",
                index.0,
                offset.saturating_add(size),
                data.len()
            );
        }
    }

    let symtab = sections.symbols(endian, data, elf::SHT_SYMTAB)?;
    let symtab_index = symtab.section().0;
    let symtab_strings = if symtab.is_empty() {
        None
    } else {
        Some(symtab.string_section().0)
    };

    // Section index → where BFD puts symbols defined there.
    let headers: Vec<&H::SectionHeader> = sections.iter().collect();
    let mut places = Vec::with_capacity(headers.len());
    for (index, section) in headers.iter().enumerate() {
        let is_section = is_bfd_section::<H>(
            endian,
            &headers,
            index,
            shstrndx,
            symtab_index,
            symtab_strings,
            relocatable,
        );
        places.push(if is_section {
            let name = sections.section_name(endian, section).unwrap_or(&[]);
            Place::Section(section_letter::<H>(endian, section, name, is_mips))
        } else {
            Place::Absolute
        });
    }
    let section_named = |wanted: &[u8]| -> Place {
        headers
            .iter()
            .enumerate()
            .find(|(i, s)| {
                matches!(places[*i], Place::Section(_))
                    && sections.section_name(endian, s).ok() == Some(wanted)
            })
            .map_or(Place::Absolute, |(i, _)| places[i])
    };

    let mut out = Vec::new();
    for (index, sym) in symtab.enumerate().skip(1) {
        let size: u64 = sym.st_size(endian).into();
        if size == 0 {
            continue;
        }
        let st_type = sym.st_type();
        if st_type == elf::STT_SECTION || st_type == elf::STT_FILE {
            continue; // BSF_DEBUGGING: nm shows these only with -a.
        }
        let raw = sym.st_shndx(endian).0;
        let shndx = if raw == elf::SHN_XINDEX.0 {
            symtab
                .shndx(endian, index)
                .context("missing extended section index")? as usize
        } else {
            raw as usize
        };
        let place = match raw {
            0 => Place::Undefined,
            r if r == elf::SHN_ABS.0 => Place::Absolute,
            r if r == elf::SHN_COMMON.0 => Place::Common(false),
            SHN_MIPS_SCOMMON if is_mips => Place::Common(true),
            SHN_MIPS_SUNDEFINED if is_mips => Place::Undefined,
            SHN_MIPS_ACOMMON if is_mips => Place::Section('b'),
            SHN_MIPS_TEXT if is_mips => section_named(b".text"),
            SHN_MIPS_DATA if is_mips => section_named(b".data"),
            _ if shndx == 0 => Place::Undefined,
            _ => places.get(shndx).copied().unwrap_or(Place::Absolute),
        };
        if matches!(place, Place::Undefined | Place::Absolute) {
            continue;
        }
        let name = symtab.symbol_name(endian, sym)?;
        if is_target_special(machine, name) {
            continue;
        }
        let bind = sym.st_bind();
        let weak = bind == elf::STB_WEAK;
        let global = bind == elf::STB_GLOBAL && !matches!(place, Place::Common(_));
        let local = bind == elf::STB_LOCAL;
        let object = st_type == elf::STT_OBJECT || st_type == elf::STT_COMMON;
        let kind = match place {
            Place::Common(small) => {
                if small {
                    'c'
                } else {
                    'C'
                }
            }
            _ if st_type == elf::STT_GNU_IFUNC => 'i',
            _ if weak => {
                if object {
                    'V'
                } else {
                    'W'
                }
            }
            _ if bind == elf::STB_GNU_UNIQUE => 'u',
            _ if !global && !local => '?',
            Place::Section(c) if global => c.to_ascii_uppercase(),
            Place::Section(c) => c,
            Place::Undefined | Place::Absolute => unreachable!("filtered above"),
        };
        out.push((size, name, kind));
    }
    Ok(out)
}

/// `listed` with owned names (invalid UTF-8 replaced with U+FFFD).
fn nm_symbols(listed: Vec<Listed<'_>>) -> Vec<NmSymbol> {
    listed
        .into_iter()
        .map(|(size, name, kind)| NmSymbol {
            name: match std::str::from_utf8(name) {
                Ok(name) => name.to_owned(),
                Err(_) => String::from_utf8_lossy(name).into_owned(),
            },
            size,
            kind,
        })
        .collect()
}

/// Whether bfd's `bfd_section_from_shdr` makes section `index` a BFD
/// section (symbols in other sections end up absolute).
fn is_bfd_section<H: FileHeader<Endian = Endianness>>(
    endian: Endianness,
    headers: &[&H::SectionHeader],
    index: usize,
    shstrndx: usize,
    symtab_index: usize,
    symtab_strings: Option<usize>,
    relocatable: bool,
) -> bool {
    let section = headers[index];
    let sh_type = section.sh_type(endian);
    if index == 0 {
        return false;
    }
    if sh_type == elf::SHT_NULL || sh_type == elf::SHT_SYMTAB || sh_type == elf::SHT_SYMTAB_SHNDX {
        return false;
    }
    if sh_type == elf::SHT_STRTAB {
        return index != shstrndx && Some(index) != symtab_strings;
    }
    if sh_type == elf::SHT_REL || sh_type == elf::SHT_RELA {
        // bfd_section_from_shdr: a reloc section applying to a section
        // through the main symbol table is folded into its target section.
        let flags: u64 = section.sh_flags(endian).0;
        let alloc = flags & elf::SHF_ALLOC.0 != 0;
        let link = section.sh_link(endian) as usize;
        let info = section.sh_info(endian) as usize;
        let plain = (!relocatable && alloc)
            || link == 0
            || link != symtab_index
            || info == 0
            || info >= headers.len()
            || matches!(headers[info].sh_type(endian), elf::SHT_REL | elf::SHT_RELA);
        return plain;
    }
    true
}

/// nm's lower-case letter for a symbol in `section` (bfd syms.c
/// `coff_section_type`, then `decode_section_type`).
fn section_letter<H: FileHeader<Endian = Endianness>>(
    endian: Endianness,
    section: &H::SectionHeader,
    name: &[u8],
    is_mips: bool,
) -> char {
    for (prefix, letter) in [
        (&b".drectve"[..], 'i'),
        (b".edata", 'e'),
        (b".idata", 'i'),
        (b".pdata", 'p'),
    ] {
        if let Some(rest) = name.strip_prefix(prefix) {
            if rest.first().is_none_or(|c| b".$0123456789".contains(c)) {
                return letter;
            }
        }
    }
    let sh_type = section.sh_type(endian);
    let flags: u64 = section.sh_flags(endian).0;
    let has_contents = sh_type != elf::SHT_NOBITS;
    let alloc = flags & elf::SHF_ALLOC.0 != 0;
    let readonly = flags & elf::SHF_WRITE.0 == 0;
    let code = flags & elf::SHF_EXECINSTR.0 != 0;
    let data = !code && alloc && has_contents;
    let debugging = (!alloc
        && (name.starts_with(b".debug")
            || name.starts_with(b".gnu.debuglto_.debug_")
            || name.starts_with(b".gnu.linkonce.wi.")
            || name.starts_with(b".zdebug")
            || name.starts_with(b".line")
            || name.starts_with(b".stab")
            || name == b".gdb_index"))
        || (is_mips && (sh_type.0 == SHT_MIPS_DWARF || sh_type.0 == SHT_MIPS_DEBUG));
    if code {
        't'
    } else if data {
        if readonly {
            'r'
        } else {
            'd'
        }
    } else if !has_contents {
        'b'
    } else if debugging {
        'N'
    } else if readonly {
        'n'
    } else {
        '?'
    }
}

/// bfd's `bfd_is_target_special_symbol`: ARM (`bfd_is_arm_special_symbol_name`)
/// and AArch64 mapping and tag symbols: `$` + a lower-case letter, then the
/// end of the name or a `.`.
fn is_target_special(machine: elf::Machine, name: &[u8]) -> bool {
    (machine == elf::EM_ARM || machine == elf::EM_AARCH64)
        && name.len() >= 2
        && name[0] == b'$'
        && name[1].is_ascii_lowercase()
        && (name.len() == 2 || name[2] == b'.')
}
