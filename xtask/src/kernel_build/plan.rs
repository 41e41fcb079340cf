//! The plan, made before anything builds: the jobs (targets × variants),
//! what each one is built from, and its build key ([`super::job`]).

use std::path::Path;

use anyhow::{Context, Result};
use xshell::Shell;

use super::backend::BuildBackend;
pub use super::job::{
    build_key, reuse_key, Job, JobInputs, KeyMaterial, PlannedJob, Unevaluated, RECIPE_VERSION,
};
use crate::inputs::targets::Target;
use crate::inputs::variants::Variant;
use crate::results::{PatchRecord, TargetRecord, UImageRecord, VariantRecord};
use crate::util::hash::sha256_file;
use crate::util::layout::Layout;

/// Every (target, variant) pair, targets outermost, in the order given.
pub fn jobs(targets: &[Target], variants: &[Variant]) -> Vec<Job> {
    targets
        .iter()
        .flat_map(|t| {
            variants.iter().map(|v| Job {
                target: t.clone(),
                variant: v.clone(),
            })
        })
        .collect()
}

/// Checks every job ([`BuildBackend::preflight`]), then resolves each one's
/// inputs and build key. Nothing is built.
pub fn plan(
    sh: &Shell,
    layout: &Layout,
    backend: &dyn BuildBackend,
    jobs: &[Job],
) -> Result<Vec<PlannedJob>> {
    backend.preflight(sh, jobs)?;
    jobs.iter()
        .map(|job| {
            let target = target_record(&job.target)?;
            let variant = variant_record(&job.variant, &layout.patches_dir())?;
            let inputs = backend
                .inputs(sh, job)
                .with_context(|| format!("planning {}", job.label()))?;
            let key = build_key(backend.name(), &target, &variant, &inputs);
            let reuse_key = reuse_key(backend.name(), &target, &variant, &inputs);
            Ok(PlannedJob {
                job: job.clone(),
                target,
                variant,
                inputs,
                key,
                reuse_key,
                unevaluated: backend.unevaluated(job),
            })
        })
        .collect()
}

/// The target as recorded in `result.json`: every field, fragments with
/// their sha256 (errors name a fragment that cannot be read).
pub fn target_record(target: &Target) -> Result<TargetRecord> {
    let fragments = target
        .kconfig
        .fragments
        .iter()
        .zip(target.fragment_paths())
        .map(|(name, path)| {
            Ok(PatchRecord {
                name: name.clone(),
                sha256: sha256_file(&path)
                    .with_context(|| format!("fragment of {}", target.file.display()))?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(TargetRecord {
        name: target.name.clone(),
        openwrt: target.openwrt.clone(),
        aliases: target.aliases.clone(),
        soc: target.soc.clone(),
        cpu: target.cpu.clone(),
        arch: target.arch.clone(),
        cross_compile: target.cross_compile.clone(),
        compiler_package: target.compiler_package.clone(),
        kernel: target.kernel.clone(),
        in_all: target.in_all,
        kconfig_base: target.kconfig.base.clone(),
        kconfig_fragments: fragments,
        make_targets: target.make_targets.clone(),
        artifacts: target
            .artifacts
            .iter()
            .map(|a| a.file_name().to_string())
            .collect(),
        uimage: target.uimage.as_ref().map(|u| UImageRecord {
            load_address: u.load_address.clone(),
            entry_symbol: u.entry_symbol.clone(),
            name: u.name.clone(),
        }),
    })
}

/// The variant as recorded in `result.json`: its own patches named relative
/// to `patches_dir`, with sha256.
pub fn variant_record(variant: &Variant, patches_dir: &Path) -> Result<VariantRecord> {
    let patches = variant
        .patches
        .iter()
        .map(|path| {
            let name = path
                .strip_prefix(patches_dir)
                .unwrap_or(path)
                .display()
                .to_string();
            Ok(PatchRecord {
                name,
                sha256: sha256_file(path)
                    .with_context(|| format!("patch of variant {}", variant.name))?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(VariantRecord {
        name: variant.name.clone(),
        description: variant.description.clone(),
        os_flags: variant.os_flags.clone(),
        o2_flags: variant.o2_flags.clone(),
        patches,
        kconfig: variant.kconfig.clone(),
    })
}
