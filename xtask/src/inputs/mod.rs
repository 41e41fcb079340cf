//! What the user declares: targets (`targets/*.toml`), variants
//! (`patches/variants.toml`), kconfig fragments, and the kernel source.

pub mod cflags;
pub mod kconfig;
pub mod kernel_source;
pub mod lab;
pub mod openwrt;
pub mod ssh_lab;
pub mod targets;
pub mod variants;
