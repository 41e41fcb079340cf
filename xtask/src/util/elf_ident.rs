//! An ELF file's identity from its first bytes (the ELF header's
//! `e_ident` and `e_machine`, as elf(5) lays them out): what a kernel and
//! the programs it runs must share.

use serde::Serialize;

/// A program's ELF identity: what a kernel must match to run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ElfKind {
    /// `e_machine` (8 MIPS, 40 ARM, 62 x86-64).
    pub machine: u16,
    /// `EI_DATA` is `ELFDATA2MSB`.
    pub big_endian: bool,
    /// `EI_CLASS` is `ELFCLASS64`.
    pub class64: bool,
}

impl std::fmt::Display for ElfKind {
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

/// The ELF identity of `header` (a file's first bytes), `None` when it is
/// not an ELF file.
pub fn elf_kind(header: &[u8]) -> Option<ElfKind> {
    if header.len() < 20 || &header[..4] != b"\x7fELF" {
        return None;
    }
    let big_endian = header[5] == 2;
    let m = [header[18], header[19]];
    Some(ElfKind {
        machine: if big_endian {
            u16::from_be_bytes(m)
        } else {
            u16::from_le_bytes(m)
        },
        big_endian,
        class64: header[4] == 2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elf_identity() {
        let mut h = b"\x7fELF\x01\x02\x01".to_vec();
        h.resize(18, 0);
        h.extend(8u16.to_be_bytes());
        let k = elf_kind(&h).unwrap();
        assert_eq!(k.to_string(), "MIPS big-endian 32-bit");
        assert_eq!(elf_kind(b"#!/bin/sh\n"), None);
    }
}
