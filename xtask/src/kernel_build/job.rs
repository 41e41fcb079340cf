//! One job (a target with a variant), what it is built from, and its
//! build key: the data the plan ([`super::plan`]) makes and the backends
//! ([`super::backend`]) build.
//!
//! The **build key** is the sha256 of [`KeyMaterial`] serialised as JSON:
//! every input that can change the bytes of the artifacts, and nothing
//! else (names, descriptions, report headings and times are left out):
//!
//! * the backend and [`RECIPE_VERSION`] (how the workbench drives kbuild
//!   and makes images: the fixed `KBUILD_BUILD_*` values, `objcopy` flags,
//!   LZMA parameters, `mkimage` call);
//! * from the target: ARCH, CROSS_COMPILE, kernel series, kconfig base,
//!   each fragment's name and sha256, the `make` goals, the artifacts and
//!   the uImage parameters;
//! * from the variant: both KBUILD_CFLAGS branches, its kconfig lines, its
//!   patches' sha256;
//! * the kernel source: the tarball's sha256, or for an unpacked tree its
//!   path and version (edits in a tree are not seen: such jobs are never
//!   reported up to date);
//! * the compiler's `--version` line;
//! * every patch of the series, in order, with its sha256 (the generated
//!   `201-extra_optimization.patch` included).
//!
//! The **reuse key** is the same material without the patches (the
//! variant's and the series): two jobs with equal reuse keys configure and
//! compile alike and differ only in source files, so the second can start
//! from a copy of the first's build directory ([`super::reuse`]).

use serde::Serialize;

use crate::inputs::targets::Target;
use crate::inputs::variants::Variant;
use crate::results::{
    BuildResult, PatchRecord, SourceRecord, TargetRecord, UImageRecord, VariantRecord,
};
use crate::util::hash::sha256_bytes;

/// One thing to build: a target with a variant.
#[derive(Debug, Clone)]
pub struct Job {
    /// The target.
    pub target: Target,
    /// The variant.
    pub variant: Variant,
}

impl Job {
    /// `target/variant`, for messages.
    pub fn label(&self) -> String {
        format!("{}/{}", self.target.name, self.variant.name)
    }
}

/// Bumped whenever the workbench changes how it turns the same inputs into
/// bytes (kbuild environment, image recipes), so old results stop being
/// "up to date".
///
/// * 2: `vmlinux.lzma` (and the uImage's payload) with OpenWrt's 8 MiB
///   dictionary, LZMA SDK 4.65's default; 1 used 1 MiB.
/// * 3: ccache without `CCACHE_BASEDIR`, which had put
///   `../../../src/<tree>/` into every `__FILE__` of a ccache build.
pub const RECIPE_VERSION: u32 = 3;

/// What a backend resolves for one job before building: where the source
/// comes from, which compiler, and the series that will be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInputs {
    /// The kernel source.
    pub source: SourceRecord,
    /// First line of `<cross>gcc --version`.
    pub compiler: String,
    /// The series in application order, with sha256.
    pub patches: Vec<PatchRecord>,
}

/// An input a dry run leaves unevaluated because evaluating it runs code
/// from another input: the OpenWrt checkout's image Makefiles, which make
/// evaluates for a device's recipe (`$(shell …)` in them would run). Its
/// record in [`JobInputs::patches`] is a placeholder, so the build key is
/// not the build's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unevaluated {
    /// The placeholder's name in [`JobInputs::patches`].
    pub placeholder: String,
    /// How the record a build puts in its place begins
    /// (`openwrt-image:<device>:`).
    pub record_prefix: String,
    /// What it is, for the plan (`device …, target/linux/<board>/image`).
    pub what: String,
}

impl Unevaluated {
    /// The placeholder as a record of the series (no sha256).
    pub fn record(&self) -> PatchRecord {
        PatchRecord {
            name: self.placeholder.clone(),
            sha256: String::new(),
        }
    }
}

/// One job with everything recorded about it and its build key.
#[derive(Debug, Clone)]
pub struct PlannedJob {
    /// The job.
    pub job: Job,
    /// The target as resolved now.
    pub target: TargetRecord,
    /// The variant as resolved now.
    pub variant: VariantRecord,
    /// Source, compiler and series.
    pub inputs: JobInputs,
    /// sha256 of [`KeyMaterial`], lowercase hex.
    pub key: String,
    /// sha256 of [`KeyMaterial`] without the patches (see the module
    /// docs), lowercase hex.
    pub reuse_key: String,
    /// What a dry run left unevaluated ([`BuildBackend::unevaluated`]): then
    /// `key` is not the build's.
    pub unevaluated: Option<Unevaluated>,
}

impl PlannedJob {
    /// Whether `result` was built from exactly these inputs. Never for an
    /// unpacked tree, whose edits the key cannot see, nor for a job with
    /// an unevaluated input.
    pub fn is_up_to_date(&self, result: &BuildResult) -> bool {
        self.inputs.source.sha256.is_some()
            && self.unevaluated.is_none()
            && result.build_key == self.key
    }

    /// For a job with an unevaluated input: whether `result` was built
    /// from these inputs with, in the unevaluated one's place, the record
    /// it has there; so up to date unless that input changed since.
    pub fn up_to_date_unless_unevaluated_changed(&self, result: &BuildResult) -> bool {
        let Some(u) = &self.unevaluated else {
            return self.is_up_to_date(result);
        };
        let Some(at) = self
            .inputs
            .patches
            .iter()
            .position(|p| p.name == u.placeholder)
        else {
            return false;
        };
        let Some(recorded) = result
            .patches
            .get(at)
            .filter(|p| p.name.starts_with(&u.record_prefix))
        else {
            return false;
        };
        let mut inputs = self.inputs.clone();
        inputs.patches[at] = recorded.clone();
        self.inputs.source.sha256.is_some()
            && build_key(&result.backend, &self.target, &self.variant, &inputs) == result.build_key
    }
}

/// Every input that can change the output bytes (see the module docs).
#[derive(Debug, Serialize)]
pub struct KeyMaterial<'a> {
    backend: &'a str,
    recipe_version: u32,
    arch: &'a str,
    cross_compile: &'a str,
    kernel: &'a str,
    kconfig_base: &'a str,
    kconfig_fragments: &'a [PatchRecord],
    make_targets: &'a [String],
    artifacts: &'a [String],
    uimage: &'a Option<UImageRecord>,
    os_flags: &'a str,
    o2_flags: &'a str,
    variant_kconfig: &'a [String],
    variant_patches: &'a [PatchRecord],
    source_version: &'a str,
    source: &'a str,
    compiler: &'a str,
    series: &'a [PatchRecord],
}

/// sha256 (lowercase hex) of the [`KeyMaterial`] of these records.
pub fn build_key(
    backend: &str,
    target: &TargetRecord,
    variant: &VariantRecord,
    inputs: &JobInputs,
) -> String {
    let material = key_material(backend, target, variant, inputs);
    let json = serde_json::to_vec(&material).expect("key material serialises");
    sha256_bytes(&json)
}

/// sha256 (lowercase hex) of the [`KeyMaterial`] of these records without
/// the variant's patches and the series: the reuse key of the module docs.
pub fn reuse_key(
    backend: &str,
    target: &TargetRecord,
    variant: &VariantRecord,
    inputs: &JobInputs,
) -> String {
    let mut material = key_material(backend, target, variant, inputs);
    material.variant_patches = &[];
    material.series = &[];
    let json = serde_json::to_vec(&("reuse", material)).expect("key material serialises");
    sha256_bytes(&json)
}

fn key_material<'a>(
    backend: &'a str,
    target: &'a TargetRecord,
    variant: &'a VariantRecord,
    inputs: &'a JobInputs,
) -> KeyMaterial<'a> {
    KeyMaterial {
        backend,
        recipe_version: RECIPE_VERSION,
        arch: &target.arch,
        cross_compile: &target.cross_compile,
        kernel: &target.kernel,
        kconfig_base: &target.kconfig_base,
        kconfig_fragments: &target.kconfig_fragments,
        make_targets: &target.make_targets,
        artifacts: &target.artifacts,
        uimage: &target.uimage,
        os_flags: &variant.os_flags,
        o2_flags: &variant.o2_flags,
        variant_kconfig: &variant.kconfig,
        variant_patches: &variant.patches,
        source_version: &inputs.source.version,
        source: inputs
            .source
            .sha256
            .as_deref()
            .unwrap_or(&inputs.source.origin),
        compiler: &inputs.compiler,
        series: &inputs.patches,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records() -> (TargetRecord, VariantRecord, JobInputs) {
        let target = TargetRecord {
            name: "t".into(),
            openwrt: "x/y".into(),
            aliases: vec![],
            soc: "SoC".into(),
            cpu: "CPU".into(),
            arch: "arm".into(),
            cross_compile: "arm-linux-gnueabi-".into(),
            compiler_package: "gcc-arm-linux-gnueabi".into(),
            kernel: "6.12".into(),
            in_all: true,
            kconfig_base: "allnoconfig".into(),
            kconfig_fragments: vec![PatchRecord {
                name: "kconfig/a.config".into(),
                sha256: "1".repeat(64),
            }],
            make_targets: vec!["zImage".into()],
            artifacts: vec!["zImage".into()],
            uimage: None,
        };
        let variant = VariantRecord {
            name: "v".into(),
            description: "d".into(),
            os_flags: "-Os".into(),
            o2_flags: "-O2".into(),
            patches: vec![],
            kconfig: vec![],
        };
        let inputs = JobInputs {
            source: SourceRecord {
                version: "6.12.117".into(),
                origin: "/usr/src/linux-source-6.12.tar.xz".into(),
                sha256: Some("2".repeat(64)),
            },
            compiler: "gcc 12".into(),
            patches: vec![PatchRecord {
                name: "generic/pending-6.12/201-extra_optimization.patch".into(),
                sha256: "3".repeat(64),
            }],
        };
        (target, variant, inputs)
    }

    #[test]
    fn the_key_follows_the_bytes_not_the_names() {
        let (t, v, i) = records();
        let key = build_key("kernel-tree", &t, &v, &i);
        assert_eq!(key.len(), 64);

        // Presentation only: same key.
        let (mut t2, mut v2, mut i2) = (t.clone(), v.clone(), i.clone());
        t2.name = "other".into();
        t2.soc = "other".into();
        t2.aliases = vec!["alias".into()];
        v2.name = "other".into();
        v2.description = "other".into();
        i2.source.origin = "/elsewhere/linux.tar.xz".into();
        assert_eq!(build_key("kernel-tree", &t2, &v2, &i2), key);

        // Every input of the bytes: a new key.
        let mut changed = Vec::new();
        let mut c = |f: &dyn Fn(&mut TargetRecord, &mut VariantRecord, &mut JobInputs)| {
            let (mut t, mut v, mut i) = (t.clone(), v.clone(), i.clone());
            f(&mut t, &mut v, &mut i);
            changed.push(build_key("kernel-tree", &t, &v, &i));
        };
        c(&|t, _, _| t.arch = "mips".into());
        c(&|t, _, _| t.cross_compile = "mips-linux-gnu-".into());
        c(&|t, _, _| t.kconfig_base = "tinyconfig".into());
        c(&|t, _, _| t.kconfig_fragments[0].sha256 = "4".repeat(64));
        c(&|t, _, _| t.make_targets.clear());
        c(&|t, _, _| t.artifacts.push("vmlinux".into()));
        c(&|_, v, _| v.os_flags = "-Os -fno-tree-ch".into());
        c(&|_, v, _| v.o2_flags = "-O3".into());
        c(&|_, v, _| v.kconfig.push("CONFIG_SMP=y".into()));
        c(&|_, _, i| i.source.sha256 = Some("5".repeat(64)));
        c(&|_, _, i| i.compiler = "gcc 13".into());
        c(&|_, _, i| i.patches[0].sha256 = "6".repeat(64));
        for (n, k) in changed.iter().enumerate() {
            assert_ne!(*k, key, "change #{n} did not change the key");
        }
        assert_ne!(build_key("other-backend", &t, &v, &i), key);
    }

    #[test]
    fn the_reuse_key_ignores_the_patches_alone() {
        let (t, v, i) = records();
        let reuse = reuse_key("kernel-tree", &t, &v, &i);
        assert_ne!(reuse, build_key("kernel-tree", &t, &v, &i));
        // One more patch, in the variant and so in the series: same reuse key.
        let (mut v2, mut i2) = (v.clone(), i.clone());
        v2.patches.push(i.patches[0].clone());
        i2.patches.push(i.patches[0].clone());
        assert_eq!(reuse_key("kernel-tree", &t, &v2, &i2), reuse);
        // Anything that changes how every file compiles: another reuse key.
        let mut v3 = v.clone();
        v3.os_flags = "-Os -falign-functions=64".into();
        assert_ne!(reuse_key("kernel-tree", &t, &v3, &i), reuse);
        let mut i3 = i.clone();
        i3.compiler = "gcc 13".into();
        assert_ne!(reuse_key("kernel-tree", &t, &v, &i3), reuse);
    }

    /// A job of `records()` with `inputs`, keyed for `backend`.
    fn planned(backend: &str, inputs: JobInputs, unevaluated: Option<Unevaluated>) -> PlannedJob {
        let (target, variant, _) = records();
        let project = crate::util::layout::Layout::from_manifest_dir();
        let key = build_key(backend, &target, &variant, &inputs);
        PlannedJob {
            job: Job {
                target: crate::inputs::targets::Target::load(
                    &project.targets_dir().join("arm-tiny.toml"),
                )
                .unwrap(),
                variant: crate::inputs::variants::load(
                    &project.variants_file(),
                    &project.patches_dir(),
                )
                .unwrap()
                .remove(0),
            },
            target,
            variant,
            inputs,
            key,
            reuse_key: String::new(),
            unevaluated,
        }
    }

    /// The result.json a build of `planned` with `patches` would write.
    fn result(planned: &PlannedJob, backend: &str, patches: &[PatchRecord]) -> BuildResult {
        let inputs = JobInputs {
            patches: patches.to_vec(),
            ..planned.inputs.clone()
        };
        let key = build_key(backend, &planned.target, &planned.variant, &inputs);
        serde_json::from_value(serde_json::json!({
            "schema": 2, "build_key": key,
            "target": planned.target, "variant": planned.variant,
            "backend": backend, "kernel_source": planned.inputs.source,
            "compiler": "gcc 12",
            "kbuild_cflags": {"os": "", "o2": "", "effective": "os", "compile_command": ""},
            "patches": patches, "config_sha256": "", "artifacts": {},
            "vmlinux_sections": {"text": 0, "data": 0, "bss": 0},
            "started": "", "finished": "", "duration_seconds": 0.0
        }))
        .unwrap()
    }

    #[test]
    fn a_tree_source_is_never_up_to_date() {
        let (_, _, mut inputs) = records();
        inputs.source.sha256 = None;
        let planned = planned("kernel-tree", inputs, None);
        let result = result(&planned, "kernel-tree", &planned.inputs.patches);
        assert_eq!(result.build_key, planned.key);
        assert!(!planned.is_up_to_date(&result));
    }

    /// A dry run's job whose device recipe was not evaluated: never up to
    /// date outright; up to date unless the recipe changed when the result
    /// matches everything else and has a recipe where the placeholder is.
    #[test]
    fn an_unevaluated_recipe_is_up_to_date_only_unless_it_changed() {
        let u = Unevaluated {
            placeholder: "openwrt-image:d: (not evaluated on a dry run)".into(),
            record_prefix: "openwrt-image:d:".into(),
            what: "device d".into(),
        };
        let (_, _, mut inputs) = records();
        inputs.patches.push(u.record());
        let job = planned("openwrt", inputs, Some(u));
        let recipe = PatchRecord {
            name: "openwrt-image:d: kernel-bin | lzma".into(),
            sha256: "7".repeat(64),
        };
        let built = [job.inputs.patches[0].clone(), recipe.clone()];
        let r = result(&job, "openwrt", &built);
        assert!(!job.is_up_to_date(&r));
        assert!(job.up_to_date_unless_unevaluated_changed(&r));
        // Another series patch, or no recipe where the placeholder is.
        let mut other = built.clone();
        other[0].sha256 = "8".repeat(64);
        assert!(!job.up_to_date_unless_unevaluated_changed(&result(&job, "openwrt", &other)));
        let without = [built[0].clone()];
        assert!(!job.up_to_date_unless_unevaluated_changed(&result(&job, "openwrt", &without)));
        let renamed = [
            built[0].clone(),
            PatchRecord {
                name: "openwrt-image:other: x".into(),
                ..recipe
            },
        ];
        assert!(!job.up_to_date_unless_unevaluated_changed(&result(&job, "openwrt", &renamed)));
    }
}
