//! What the user declares: targets (`targets/*.toml`), variants
//! (`patches/variants.toml`), kconfig fragments, the kernel source, and the
//! host lab's runtime variants (`lab/runtime.toml`), and the SoCs' timing
//! tables the lab's core model costs runs with (`[lab.timing]`).

pub mod cflags;
pub mod kconfig;
pub mod kernel_source;
pub mod lab;
pub mod openwrt;
pub mod rootfs;
pub mod runtime;
pub mod ssh_lab;
pub mod steering;
pub mod targets;
pub mod timing;
pub mod variants;
