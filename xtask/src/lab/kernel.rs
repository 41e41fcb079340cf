//! The lab kernel: the variant's router kernel, rebuilt for the QEMU
//! machine of the target's `[lab]` table by the ordinary build pipeline.
//!
//! The lab target is the target with its SoC fragments
//! ([`LabSpec::replace_fragments`]) swapped for the lab's
//! ([`LabSpec::fragments`]); flags, patches (chosen by the OpenWrt target
//! name, which stays) and `router.config` are the target's. It is named
//! `<target>-lab`, so its results land in
//! `target/xtask/results/<target>-lab/<variant>/` like any build's.
//!
//! With `lab --openwrt PATH` ([`Recipe::Openwrt`]) the same jobs go to
//! OpenWrt mode's backend instead, built as OpenWrt builds its target for
//! the QEMU machine (`[lab] openwrt`) with the router's KCFLAGS
//! ([`crate::kernel_build::openwrt_lab`]), into OpenWrt mode's layout
//! (`target/xtask/openwrt/results/<target>-lab/<variant>/`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use xshell::Shell;

use crate::inputs::lab::LabSpec;
use crate::inputs::targets::{Artifact, Target};
use crate::inputs::variants::Variant;
use crate::kernel_build::openwrt::OpenwrtBackend;
use crate::kernel_build::openwrt_lab::OpenwrtLab;
use crate::kernel_build::{self, kbuild::KbuildBackend, BuildBackend, BuildOptions, Job};
use crate::results::BuildResult;
use crate::util::fs::{read_bytes_limited, write_atomic, FileLimit};
use crate::util::layout::Layout;

/// Appended to a target's name for its lab kernel's build and results.
pub const SUFFIX: &str = crate::results::lab::LAB_TARGET_SUFFIX;

/// A built lab kernel.
#[derive(Debug, Clone)]
pub struct LabKernel {
    /// The variant it was built with.
    pub variant: Variant,
    /// Its `result.json`.
    pub result: BuildResult,
    /// The image QEMU boots (in the results directory).
    pub image: PathBuf,
    /// The device tree QEMU passes (copied into the results directory).
    pub dtb: Option<PathBuf>,
}

/// The target's `[lab]` table, or an error naming the targets that have one.
pub fn spec_of(target: &Target) -> Result<&LabSpec> {
    target.lab.as_ref().with_context(|| {
        format!(
            "target {} has no [lab] table in {}; the lab runs targets whose file has one (brcm47xx)",
            target.name,
            target.file.display()
        )
    })
}

/// The lab target derived from `target` (see the module docs).
pub fn lab_target(target: &Target) -> Result<Target> {
    let spec = spec_of(target)?;
    let mut lab = target.clone();
    lab.name = format!("{}{SUFFIX}", target.name);
    lab.in_all = false;
    lab.kconfig.fragments = target
        .kconfig
        .fragments
        .iter()
        .filter(|f| !spec.replace_fragments.contains(f))
        .chain(spec.fragments.iter())
        .cloned()
        .collect();
    lab.uimage = None;
    lab.artifacts = vec![Artifact::Vmlinux];
    lab.make_targets = Vec::new();
    if spec.kernel_image.ends_with("zImage") {
        lab.make_targets.push("zImage".to_string());
        lab.artifacts.push(Artifact::ZImage);
    }
    if let Some(dtb) = &spec.dtb {
        lab.make_targets.push(dtb.clone());
    }
    lab.soc = format!("QEMU {} ({})", spec.machine, spec.cpu);
    Ok(lab)
}

/// How the lab kernels are built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recipe {
    /// From the workbench's hand-written profiles (the target's fragments
    /// with the lab's swapped in).
    Profiles,
    /// `lab --openwrt PATH`: as the OpenWrt checkout at this path builds
    /// its target for the QEMU machine ([`crate::kernel_build::openwrt_lab`]).
    Openwrt(PathBuf),
}

/// Builds the lab kernel of `target` for every variant (in order, without
/// repeating a variant) through [`kernel_build::run`] as `recipe` says, and
/// returns them. With [`Recipe::Openwrt`] `layout` is OpenWrt mode's
/// ([`Layout::openwrt_mode`]).
pub fn build_with(
    sh: &Shell,
    layout: &Layout,
    target: &Target,
    variants: &[Variant],
    options: BuildOptions,
    kernel_src: Option<PathBuf>,
    recipe: &Recipe,
) -> Result<Vec<LabKernel>> {
    let spec = spec_of(target)?;
    let lab = lab_target(target)?;
    let mut unique: Vec<Variant> = Vec::new();
    for v in variants {
        if !unique.iter().any(|u| u.name == v.name) {
            unique.push(v.clone());
        }
    }
    let jobs: Vec<Job> = unique
        .iter()
        .map(|v| Job {
            target: lab.clone(),
            variant: v.clone(),
        })
        .collect();
    let backend: Box<dyn BuildBackend> = match recipe {
        Recipe::Profiles => Box::new(KbuildBackend::new(layout.clone(), kernel_src)),
        Recipe::Openwrt(checkout) => Box::new(OpenwrtBackend::for_lab(
            layout.clone(),
            checkout,
            kernel_src,
            OpenwrtLab::of(target, &lab.name, &layout.targets_dir())?,
        )?),
    };
    let backend = backend.as_ref();
    let plan = kernel_build::plan::plan(sh, layout, backend, &jobs)
        .with_context(|| format!("planning the lab kernels of {}", target.name))?;
    // The makes stop on SIGINT/SIGTERM: their run's token is the lab's
    // (crate::util::cancel).
    let outcomes = kernel_build::run(sh, layout, backend, &plan, options);
    let results: Vec<BuildResult> = outcomes
        .with_context(|| format!("building the lab kernels of {}", target.name))?
        .into_iter()
        .map(|outcome| outcome.result().clone())
        .collect();
    let mut kernels = Vec::new();
    for (variant, result) in unique.into_iter().zip(results) {
        if let Some(goal) = &spec.dtb {
            // OpenWrt mode builds in the tree (`<build dir>/linux/`).
            let build_dir = layout.build_dir(&lab.name, &variant.name);
            let tree = match recipe {
                Recipe::Openwrt(_) => build_dir.join("linux"),
                Recipe::Profiles => build_dir,
            };
            let built = tree
                .join("arch")
                .join(&lab.arch)
                .join("boot/dts")
                .join(goal);
            let kept = dtb_in(layout, &lab.name, &variant.name, goal);
            keep_dtb(&built, &kept)?;
        }
        kernels.push(in_results(layout, &lab, spec, variant, result));
    }
    Ok(kernels)
}

/// Copies the built device tree `built` to `kept` beside the lab kernel's
/// results, unless `kept` already holds the same bytes; a new one is
/// written to a temporary file and renamed, so a lab that boots `kept`
/// at the same time (another lab or experiment on this kernel) never
/// reads a half-written file.
///
/// Errors: either file unreadable (naming it), or the write failing.
fn keep_dtb(built: &std::path::Path, kept: &std::path::Path) -> Result<()> {
    let limit = FileLimit::binary("a device tree blob");
    let fix = "rebuild the lab kernel (`cargo xtask lab --build-only`)";
    let bytes = read_bytes_limited(built, limit, fix)?;
    if kept.is_file() && read_bytes_limited(kept, limit, fix)? == bytes {
        return Ok(());
    }
    write_atomic(kept, &bytes)
        .with_context(|| format!("copying {} to {}", built.display(), kept.display()))
}

/// The lab kernel of `variant` for `target` as an earlier `lab` (or
/// `lab --build-only`) built it, from its results directory, without
/// planning or building anything: whether it is up to date with the
/// sources is not checked. An error says how to build it when it is
/// missing.
pub fn built(layout: &Layout, target: &Target, variant: &Variant) -> Result<LabKernel> {
    let spec = spec_of(target)?;
    let lab = lab_target(target)?;
    let dir = layout.results_dir(&lab.name, &variant.name);
    anyhow::ensure!(
        // Present in any form: BuildResult::read says what is wrong with
        // a result.json that is not a readable file.
        std::fs::symlink_metadata(dir.join(crate::results::FILE_NAME)).is_ok(),
        "no lab kernel of {} for {} in {}: build it with `cargo xtask lab --target {} --variant {} --build-only`",
        variant.name,
        target.name,
        dir.display(),
        target.name,
        variant.name
    );
    let result = BuildResult::read(&dir)?;
    let kernel = in_results(layout, &lab, spec, variant.clone(), result);
    for file in std::iter::once(&kernel.image).chain(kernel.dtb.as_ref()) {
        anyhow::ensure!(
            file.is_file(),
            "{} is missing; rebuild the lab kernel with `cargo xtask lab --target {} --variant {} --build-only`",
            file.display(),
            target.name,
            variant.name
        );
    }
    Ok(kernel)
}

/// The kernel `result` of `variant` for lab target `lab`, its image and
/// device tree in its results directory.
fn in_results(
    layout: &Layout,
    lab: &Target,
    spec: &LabSpec,
    variant: Variant,
    result: BuildResult,
) -> LabKernel {
    let image_name = std::path::Path::new(&spec.kernel_image)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| spec.kernel_image.clone());
    LabKernel {
        image: layout
            .results_dir(&lab.name, &variant.name)
            .join(image_name),
        dtb: spec
            .dtb
            .as_ref()
            .map(|goal| dtb_in(layout, &lab.name, &variant.name, goal)),
        variant,
        result,
    }
}

/// Where the device tree built as make goal `goal` is kept: the results
/// directory of (`lab_target`, `variant`).
fn dtb_in(layout: &Layout, lab_target: &str, variant: &str, goal: &str) -> PathBuf {
    let name = std::path::Path::new(goal)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| goal.to_string());
    layout.results_dir(lab_target, variant).join(name)
}
