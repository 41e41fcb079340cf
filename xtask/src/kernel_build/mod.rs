//! Build orchestration: every (target, variant) pair through a backend,
//! then artifacts, measurements and `result.json`.
//!
//! A [`BuildBackend`] turns one [`Job`] into a finished kernel build
//! ([`Built`]). [`kbuild::KbuildBackend`] configures and runs `make` on a
//! patched kernel tree; [`openwrt::OpenwrtBackend`] (`--openwrt PATH`) does
//! the same with an OpenWrt checkout's config, patches and KCFLAGS.

pub mod artifacts;
pub mod backend;
pub mod bisect_search;
pub mod build_job;
pub mod ccache;
pub mod command;
pub mod distcc;
pub mod distccd;
pub mod estimate;
pub mod job;
pub mod jobserver;
pub mod kbuild;
pub mod link_map;
pub mod openwrt;
pub mod openwrt_image;
pub mod openwrt_kconfig;
pub mod openwrt_lab;
pub mod plan;
pub mod progress;
pub mod reuse;
pub mod scheduler;
pub mod size_bisect;
pub mod toolchain;

pub use backend::{preflight_verdict, BuildBackend, BuildOptions, Built, Rebuild};
pub use build_job::{building_dir, summary_line, up_to_date, BuildOutcome};
pub use job::Job;
pub use scheduler::run;
