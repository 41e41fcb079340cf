//! The integration tests, as one test binary (`it`): each former test file
//! is a module here (`cargo test -p xtask --test it lab_host::` runs one
//! file's tests), so the crate is linked once, not once per file.
//! `common/` holds the helpers they share: the gate
//! ([`common::gate::Needs`]: what a test needs of the host, a failure under
//! CI and a counted skip elsewhere; slow tests, which build a kernel or boot
//! QEMU, run only with `XTASK_SLOW_TESTS=1`) and the fixtures.
//!
//! `cargo xtask test` runs this binary under cargo-nextest, a process per
//! test (`.config/nextest.toml`); under `cargo test` the modules share one
//! process. No test changes the environment or the
//! working directory (the helpers' child processes get theirs through
//! `Command`), the labs take one lock ([`common::leftovers`]: they name
//! their namespaces after the process id), and a test that runs this
//! binary again for a helper names it by its full path (`file::helper`,
//! [`common::helper_name`]).

mod common;

mod bloat_fixtures;
mod bloat_symbols;
mod bloat_synthetic;
mod bloat_vmlinux;
mod build_pipeline;
mod build_scheduler;
mod cli_refusals;
mod docs;
mod e2e_distcc;
mod e2e_patch_only;
mod e2e_reproducible;
mod e2e_tiny_build;
mod elf_size_cross;
mod experiment_files;
mod experiments_apply;
mod flags_patch;
mod flags_safety;
mod gate_ledgers;
mod kill_cleanup;
mod lab_cache_model;
mod lab_core_model;
mod lab_host;
mod lab_iperf_udp;
mod lab_malta;
mod lab_mesh;
mod lab_mtu;
mod lab_multicore;
mod lab_openwrt;
mod lab_ssh;
mod lab_static_guest;
mod openwrt_bump;
mod openwrt_device_fit;
mod openwrt_dry_run;
mod openwrt_image;
mod openwrt_image_steps;
mod openwrt_lab;
mod openwrt_mode;
mod openwrt_point_release;
mod openwrt_selection;
mod openwrt_steering;
mod openwrt_sync;
mod openwrt_whole_image;
mod optimization_level;
mod patch_engine;
mod patch_gnu;
mod patch_gnu_formats;
mod patch_props;
mod patch_regressions;
mod rebase_classes;
mod rebase_upstream;
mod report_agreement;
mod report_attribution;
mod report_cli;
mod report_device_fit;
mod report_device_image;
mod report_errors;
mod report_formats;
mod report_hostile_strings;
mod report_inputs;
mod report_lab;
mod report_lab_cache;
mod report_lab_caveats;
mod report_lab_checks;
mod report_lab_host;
mod report_lab_hostile;
mod report_lab_kernels;
mod report_lab_stats;
mod report_lab_timing;
mod report_levels;
mod report_percent;
mod report_sizes;
mod report_symbols;
mod report_whole_image;
mod results_archive;
mod results_archive_hostile;
mod setup_cli;
mod size_attribution;
mod size_bisect;
mod size_kconfig;
mod source_version;
mod stack_diff;
mod stack_quilt;
mod stack_safety;
mod stats_calibration;
mod stats_scipy;
mod tidy;
