//! The lab kernel: the variant's router kernel, rebuilt for the QEMU
//! machine of the target's `[lab]` table by the ordinary build pipeline.
//!
//! The lab target is the target with its SoC fragments
//! ([`LabSpec::replace_fragments`]) swapped for the lab's
//! ([`LabSpec::fragments`]); flags, patches (chosen by the OpenWrt target
//! name, which stays) and `router.config` are the target's. It is named
//! `<target>-lab`, so its results land in
//! `target/xtask/results/<target>-lab/<variant>/` like any build's.

use std::path::PathBuf;

use anyhow::{Context, Result};
use xshell::Shell;

use crate::build::{self, kbuild::KernelTree, BuildOptions, Job};
use crate::inputs::lab::LabSpec;
use crate::inputs::targets::{Artifact, Target};
use crate::inputs::variants::Variant;
use crate::results::BuildResult;
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

/// Builds the lab kernel of `target` for every variant (in order, without
/// repeating a variant) through [`build::run`], and returns them.
pub fn build_all(
    sh: &Shell,
    layout: &Layout,
    target: &Target,
    variants: &[Variant],
    options: BuildOptions,
    kernel_src: Option<PathBuf>,
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
    let backend = KernelTree::new(layout.clone(), kernel_src);
    let plan = build::plan::plan(sh, layout, &backend, &jobs)
        .with_context(|| format!("planning the lab kernels of {}", target.name))?;
    // The lab's SIGINT/SIGTERM handler only sets a flag: pass it on to the
    // makes, or a `kill` of this process alone would wait for the builds.
    let control = options.control.clone();
    let building = std::sync::atomic::AtomicBool::new(true);
    let outcomes = std::thread::scope(|s| {
        s.spawn(|| {
            while building.load(std::sync::atomic::Ordering::SeqCst) {
                if super::process::interrupted() {
                    control.stop();
                    break;
                }
                std::thread::sleep(super::process::POLL);
            }
        });
        let outcomes = build::run(sh, layout, &backend, &plan, options);
        building.store(false, std::sync::atomic::Ordering::SeqCst);
        outcomes
    });
    let results: Vec<BuildResult> = outcomes
        .with_context(|| format!("building the lab kernels of {}", target.name))?
        .into_iter()
        .map(|outcome| outcome.result().clone())
        .collect();
    let image_name = std::path::Path::new(&spec.kernel_image)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| spec.kernel_image.clone());
    let mut kernels = Vec::new();
    for (variant, result) in unique.into_iter().zip(results) {
        let results_dir = layout.results_dir(&lab.name, &variant.name);
        let dtb = match &spec.dtb {
            Some(goal) => {
                let built = layout
                    .build_dir(&lab.name, &variant.name)
                    .join("arch")
                    .join(&lab.arch)
                    .join("boot/dts")
                    .join(goal);
                let kept = results_dir.join(built.file_name().unwrap_or_default());
                std::fs::copy(&built, &kept).with_context(|| {
                    format!("copying {} to {}", built.display(), kept.display())
                })?;
                Some(kept)
            }
            None => None,
        };
        kernels.push(LabKernel {
            image: results_dir.join(&image_name),
            dtb,
            variant,
            result,
        });
    }
    Ok(kernels)
}
