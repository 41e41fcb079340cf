//! An ELF file's identity from its first bytes (the ELF header's
//! `e_ident` and `e_machine`, as elf(5) lays them out): what a kernel and
//! the programs it runs must share.

use serde::Serialize;

/// A program's ELF identity: what a kernel must match to run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ElfIdent {
    /// `e_machine` (8 MIPS, 40 ARM, 62 x86-64).
    pub machine: u16,
    /// `EI_DATA` is `ELFDATA2MSB`.
    pub big_endian: bool,
    /// `EI_CLASS` is `ELFCLASS64`.
    pub class64: bool,
}

impl std::fmt::Display for ElfIdent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let machine = match self.machine {
            8 => "MIPS".to_string(),
            40 => "ARM".to_string(),
            62 => "x86-64".to_string(),
            183 => "AArch64".to_string(),
            m => format!("machine {m}"),
        };
        let endian = if self.big_endian { "big" } else { "little" };
        let bits = if self.class64 { 64 } else { 32 };
        write!(f, "{machine} {endian}-endian {bits}-bit")
    }
}

/// The ELF identity of `header` (a file's first bytes, at least the ELF
/// header's 52 or 64), `None` unless they are a whole, consistent ELF
/// header of a program or shared object: as object's `FileHeader::parse`
/// reads it (magic, class, data, `EI_VERSION`), then `e_version` 1,
/// `e_type` `ET_EXEC` or `ET_DYN`, and `e_ehsize` the header's own size.
/// Twenty bytes that begin like an ELF file are not one.
pub fn elf_kind(header: &[u8]) -> Option<ElfIdent> {
    use object::elf::{FileHeader32, FileHeader64, ET_DYN, ET_EXEC};
    use object::read::elf::FileHeader;
    use object::{Endian, Endianness};

    fn check<H: FileHeader<Endian = Endianness>>(header: &[u8]) -> Option<(u16, bool)> {
        let h = H::parse(header).ok()?;
        let e = h.endian().ok()?;
        let whole = usize::from(h.e_ehsize(e)) == std::mem::size_of::<H>();
        let program = matches!(h.e_type(e), ET_EXEC | ET_DYN);
        (whole && program && h.e_version(e) == 1).then(|| (h.e_machine(e).0, e.is_big_endian()))
    }
    let class64 = header.get(4) == Some(&2);
    let (machine, big_endian) = if class64 {
        check::<FileHeader64<Endianness>>(header)?
    } else {
        check::<FileHeader32<Endianness>>(header)?
    };
    Some(ElfIdent {
        machine,
        big_endian,
        class64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF32 header as a MIPS big-endian executable's: 52 bytes.
    fn header32_be(machine: u16) -> Vec<u8> {
        let mut h = b"\x7fELF\x01\x02\x01".to_vec();
        h.resize(16, 0);
        h.extend(2u16.to_be_bytes()); // e_type ET_EXEC
        h.extend(machine.to_be_bytes());
        h.extend(1u32.to_be_bytes()); // e_version
        h.resize(40, 0);
        h.extend(52u16.to_be_bytes()); // e_ehsize
        h.resize(52, 0);
        h
    }

    #[test]
    fn elf_identity() {
        let h = header32_be(8);
        let k = elf_kind(&h).unwrap();
        assert_eq!(k.to_string(), "MIPS big-endian 32-bit");
        assert_eq!(elf_kind(b"#!/bin/sh\n"), None);
    }

    #[test]
    fn twenty_bytes_that_begin_like_elf_are_not_a_program() {
        let h = header32_be(8);
        // The hostile trial's file: magic, class, data and e_machine only.
        assert_eq!(elf_kind(&h[..20]), None);
        assert_eq!(elf_kind(&h[..51]), None);
        let mut wrong_size = h.clone();
        wrong_size[40..42].copy_from_slice(&64u16.to_be_bytes());
        assert_eq!(elf_kind(&wrong_size), None);
        let mut relocatable = h.clone();
        relocatable[16..18].copy_from_slice(&1u16.to_be_bytes());
        assert_eq!(elf_kind(&relocatable), None);
        let mut version0 = h;
        version0[20..24].copy_from_slice(&0u32.to_be_bytes());
        assert_eq!(elf_kind(&version0), None);
    }

    #[test]
    fn the_identity_of_real_programs_is_read() {
        // This test binary itself: x86-64 little-endian 64-bit.
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let k = elf_kind(&exe[..64]).unwrap();
        assert_eq!(k.to_string(), "x86-64 little-endian 64-bit");
    }
}
