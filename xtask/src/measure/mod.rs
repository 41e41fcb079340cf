//! Measurements of built kernels: vmlinux sections as binutils `size`
//! counts them ([`sections`]), the ELF symbol table as `nm` reads it
//! ([`symbols`]), bloat-o-meter's symbol diff ([`bloat`]), and which object
//! file put each byte in vmlinux, from ld's link map ([`linkmap`]), and
//! which kconfig symbol built each object, from the tree's kbuild files
//! ([`kbuild_makefile`], [`kconfig_map`]).

pub mod bloat;
pub mod calibration;
pub mod flash_layout;
pub mod image_sink;
pub mod kbuild_makefile;
pub mod kconfig_map;
pub mod linkmap;
pub mod padjffs2;
pub mod sections;
pub mod stats;
pub mod symbols;
pub mod whole_image;
