//! Measurements of built kernels: vmlinux sections as binutils `size`
//! counts them ([`sections`]), the ELF symbol table as `nm` reads it
//! ([`symbols`]), and bloat-o-meter's symbol diff ([`bloat`]).

pub mod bloat;
pub mod calibration;
pub mod sections;
pub mod stats;
pub mod symbols;
