//! Helpers of the integration tests, one module each; a test file uses
//! them as `crate::common::gate` and so on.

pub mod elf_fixtures;
pub mod elf_tools;
pub mod gate;
pub mod guest_checks;
pub mod lab_build;
pub mod lab_fixture;
pub mod leftovers;
pub mod mount_ns;
pub mod openwrt_fixture;
pub mod openwrt_image;
pub mod patch_harness;
pub mod planted;
pub mod pristine;
pub mod report_fixture;

/// The name libtest knows this binary's test `name` in the module whose
/// `module_path!()` is `module` by (`kill_cleanup::child_merge`), for a
/// test that runs this binary again with `--exact` for one helper.
pub fn helper_name(module: &str, name: &str) -> String {
    let file = module.split_once("::").map_or(module, |(_, rest)| rest);
    format!("{file}::{name}")
}
