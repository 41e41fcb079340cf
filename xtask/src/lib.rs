//! Library behind `cargo xtask`: everything an OpenWrt kernel developer needs to
//! answer "what does this compiler flag or kernel patch do to my router images?".
//!
//! Data flows one way:
//! targets + variants + patches → kernel tree → build → results → reports.
//!
//! * [`targets`], [`variants`]: the project's TOML inputs.
//! * [`kernel_src`]: locate, verify and unpack the kernel source.
//! * [`patch`]: the unified-diff patch engine (GNU patch semantics);
//!   [`series`]: the OpenWrt-ordered patch series; [`stack`]: push/pop/refresh
//!   over a working tree, [`rebase`], [`openwrt_tree`]; [`flags`]: the generated
//!   `201-extra_optimization.patch`.
//! * [`kconfig`]: base config + fragments, and the check that they took effect.
//! * [`toolchain`]: cross compilers and their flag checks.
//! * [`build`]: build orchestration behind a backend trait.
//! * [`artifacts`], [`elf_size`], [`results`]: what a build produced, measured.
//! * [`measure`]: the QEMU router lab (forwarding throughput, CPU time per packet).

pub mod artifacts;
pub mod bloat;
pub mod build;
pub mod elf_size;
pub mod flags;
pub mod kconfig;
pub mod kernel_src;
pub mod measure;
pub mod openwrt_tree;
pub mod patch;
pub mod patched_tree;
pub mod paths;
pub mod rebase;
pub mod report;
pub mod results;
pub mod selftest;
pub mod series;
pub mod setup;
pub mod stack;
pub mod symbols;
pub mod targets;
pub mod toolchain;
pub mod unified_diff;
pub mod variants;
