//! What the guest's binaries are: class, byte order and machine from the
//! ELF header, and whether they are static (no `PT_INTERP`, no
//! `PT_DYNAMIC` program header), read with the `object` crate (fields of
//! the System V ABI's ELF header and program headers, `elf(5)`).

use std::path::Path;

use anyhow::{bail, Context, Result};
use object::elf::{FileHeader32, FileHeader64, PT_DYNAMIC, PT_INTERP};
use object::read::elf::{FileHeader, ProgramHeader};
use object::{Endian, Endianness, FileKind};

/// `e_machine` of MIPS (`EM_MIPS`).
pub const EM_MIPS: u16 = object::elf::EM_MIPS.0;
/// `e_machine` of 32-bit ARM (`EM_ARM`).
pub const EM_ARM: u16 = object::elf::EM_ARM.0;

/// An ELF file's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuestBinaryKind {
    /// 32 or 64 (`EI_CLASS`).
    pub bits: u8,
    /// `EI_DATA` is `ELFDATA2MSB`.
    pub big_endian: bool,
    /// `e_machine`.
    pub machine: u16,
    /// Neither an interpreter nor a dynamic section.
    pub is_static: bool,
}

/// The kind of ELF file `bytes`.
///
/// Errors: not an ELF file, or a header or program header table that
/// `object` cannot read (truncated, unknown byte order).
pub fn kind(bytes: &[u8]) -> Result<GuestBinaryKind> {
    match FileKind::parse(bytes).context("not an ELF file")? {
        FileKind::Elf32 => kind_of::<FileHeader32<Endianness>>(bytes, 32),
        FileKind::Elf64 => kind_of::<FileHeader64<Endianness>>(bytes, 64),
        other => bail!("not an ELF file ({other:?})"),
    }
}

fn kind_of<H: FileHeader<Endian = Endianness>>(bytes: &[u8], bits: u8) -> Result<GuestBinaryKind> {
    let header = H::parse(bytes).context("reading the ELF header")?;
    let endian = header.endian().context("reading the ELF byte order")?;
    let is_static = !header
        .program_headers(endian, bytes)
        .context("reading the ELF program headers")?
        .iter()
        .any(|p| matches!(p.p_type(endian), PT_INTERP | PT_DYNAMIC));
    Ok(GuestBinaryKind {
        bits,
        big_endian: endian.is_big_endian(),
        machine: header.e_machine(endian).0,
        is_static,
    })
}

/// The kind a Debian architecture's binaries have (`mips`, `mipsel`,
/// `armel`), static.
pub fn expected(arch: &str) -> Result<GuestBinaryKind> {
    let (big_endian, machine) = match arch {
        "mips" => (true, EM_MIPS),
        "mipsel" => (false, EM_MIPS),
        "armel" | "armhf" => (false, EM_ARM),
        _ => bail!("the static guest does not know Debian architecture {arch:?}'s ELF kind"),
    };
    Ok(GuestBinaryKind {
        bits: 32,
        big_endian,
        machine,
        is_static: true,
    })
}

/// Fails unless `path` is a static binary for Debian architecture `arch`.
pub fn check(path: &Path, arch: &str) -> Result<()> {
    let bytes = crate::util::fs::read_bytes_limited(
        path,
        crate::util::fs::FileLimit::binary("guest program"),
        "",
    )?;
    let found = kind(&bytes).with_context(|| format!("reading {}", path.display()))?;
    let want = expected(arch)?;
    if found != want {
        bail!(
            "{} is {found:?}, not a static {arch} binary ({want:?})",
            path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 32-bit big-endian MIPS header (ELF version 1) with one program
    /// header of `p_type`.
    fn mips_be(p_type: u32) -> Vec<u8> {
        let mut b = vec![0u8; 52 + 32];
        b[..7].copy_from_slice(b"\x7fELF\x01\x02\x01");
        b[18..20].copy_from_slice(&EM_MIPS.to_be_bytes());
        b[28..32].copy_from_slice(&52u32.to_be_bytes());
        b[42..44].copy_from_slice(&32u16.to_be_bytes());
        b[44..46].copy_from_slice(&1u16.to_be_bytes());
        b[52..56].copy_from_slice(&p_type.to_be_bytes());
        b
    }

    #[test]
    fn static_big_endian_mips_is_told_apart() {
        let load = kind(&mips_be(1)).unwrap();
        assert_eq!(load, expected("mips").unwrap());
        assert!(!kind(&mips_be(PT_INTERP.0)).unwrap().is_static);
        assert_ne!(load, expected("mipsel").unwrap());
        assert!(kind(b"#!/bin/sh\n").is_err());
    }

    /// This test program: dynamically linked (an interpreter), of the
    /// host's word size and byte order.
    #[test]
    fn the_test_program_is_a_dynamic_host_binary() {
        let bytes = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let k = kind(&bytes).unwrap();
        assert!(!k.is_static, "{k:?}");
        assert_eq!(usize::from(k.bits), 8 * std::mem::size_of::<usize>());
        assert_eq!(k.big_endian, cfg!(target_endian = "big"));
    }
}
