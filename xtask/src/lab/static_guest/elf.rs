//! What the guest's binaries are: class, byte order and machine from the
//! ELF header, and whether they are static (no `PT_INTERP`, no
//! `PT_DYNAMIC` program header). Offsets: the System V ABI's ELF header
//! and program header (`elf(5)`, `/usr/include/elf.h`).

use std::path::Path;

use anyhow::{bail, Context, Result};

/// `e_machine` of MIPS (`EM_MIPS`).
pub const EM_MIPS: u16 = 8;
/// `e_machine` of 32-bit ARM (`EM_ARM`).
pub const EM_ARM: u16 = 40;

const PT_DYNAMIC: u32 = 2;
const PT_INTERP: u32 = 3;

/// An ELF file's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElfKind {
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
pub fn kind(bytes: &[u8]) -> Result<ElfKind> {
    if bytes.len() < 52 || &bytes[..4] != b"\x7fELF" {
        bail!("not an ELF file");
    }
    let bits = match bytes[4] {
        1 => 32,
        2 => 64,
        c => bail!("ELF class {c}"),
    };
    let big_endian = match bytes[5] {
        1 => false,
        2 => true,
        d => bail!("ELF data encoding {d}"),
    };
    let u16_at = |o: usize| -> Result<u16> {
        let b: [u8; 2] = bytes.get(o..o + 2).context("truncated ELF")?.try_into()?;
        Ok(if big_endian {
            u16::from_be_bytes(b)
        } else {
            u16::from_le_bytes(b)
        })
    };
    let u32_at = |o: usize| -> Result<u32> {
        let b: [u8; 4] = bytes.get(o..o + 4).context("truncated ELF")?.try_into()?;
        Ok(if big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    };
    let u64_at = |o: usize| -> Result<u64> {
        let b: [u8; 8] = bytes.get(o..o + 8).context("truncated ELF")?.try_into()?;
        Ok(if big_endian {
            u64::from_be_bytes(b)
        } else {
            u64::from_le_bytes(b)
        })
    };
    let machine = u16_at(18)?;
    // e_phoff, e_phentsize, e_phnum.
    let (phoff, phentsize, phnum) = if bits == 32 {
        (u32_at(28)? as u64, u16_at(42)?, u16_at(44)?)
    } else {
        (u64_at(32)?, u16_at(54)?, u16_at(56)?)
    };
    let mut is_static = true;
    for i in 0..phnum as u64 {
        let at = usize::try_from(phoff + i * phentsize as u64).context("ELF offset")?;
        let p_type = u32_at(at)?;
        if p_type == PT_INTERP || p_type == PT_DYNAMIC {
            is_static = false;
        }
    }
    Ok(ElfKind {
        bits,
        big_endian,
        machine,
        is_static,
    })
}

/// The kind a Debian architecture's binaries have (`mips`, `mipsel`,
/// `armel`), static.
pub fn expected(arch: &str) -> Result<ElfKind> {
    let (big_endian, machine) = match arch {
        "mips" => (true, EM_MIPS),
        "mipsel" => (false, EM_MIPS),
        "armel" | "armhf" => (false, EM_ARM),
        _ => bail!("the static guest does not know Debian architecture {arch:?}'s ELF kind"),
    };
    Ok(ElfKind {
        bits: 32,
        big_endian,
        machine,
        is_static: true,
    })
}

/// Fails unless `path` is a static binary for Debian architecture `arch`.
pub fn check(path: &Path, arch: &str) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
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

    /// A 32-bit big-endian MIPS header with one program header of `p_type`.
    fn mips_be(p_type: u32) -> Vec<u8> {
        let mut b = vec![0u8; 52 + 32];
        b[..6].copy_from_slice(b"\x7fELF\x01\x02");
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
        assert!(!kind(&mips_be(PT_INTERP)).unwrap().is_static);
        assert_ne!(load, expected("mipsel").unwrap());
        assert!(kind(b"#!/bin/sh\n").is_err());
    }
}
