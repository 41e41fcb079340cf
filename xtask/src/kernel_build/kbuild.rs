//! The kernel-tree backend: patch a kernel source tree, configure it from
//! the target's base config and fragments, and run `make O=…`.
//!
//! Per job: source (tarball or tree) → pristine tree → patched tree (series
//! with the variant's 201-extra_optimization.patch) → `make <base>` →
//! merge fragments → `make alldefconfig` (as `merge_config.sh`) → check the
//! fragments took effect → `make vmlinux <make_targets>`, out of tree in
//! `target/xtask/build/<target>/<variant>/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use xshell::{cmd, Shell};

use super::backend::{BuildBackend, BuildOptions, Built};
use super::estimate;
use super::job::Job;
use super::plan::{JobInputs, PlannedJob};
use super::progress::run_logged;
use crate::inputs::kconfig;
use crate::inputs::kernel_source::{self, PristineTree, SourceInput};
use crate::kernel_build::artifacts::BuildOutputs;
use crate::kernel_build::{ccache, distcc, reuse, toolchain};
use crate::patches::patched_source::PatchedTree;
use crate::patches::series::SeriesPatch;
use crate::patches::{patched_source, series};
use crate::results::{Cflags, SourceRecord};
use crate::util::fs::{read_limited, FileLimit};
use crate::util::layout::Layout;

/// Fixed build identity, so that two builds of the same source and flags
/// give the same bytes (kbuild's reproducible-build variables).
pub const REPRODUCIBLE_ENV: &[(&str, &str)] = &[
    ("KBUILD_BUILD_TIMESTAMP", "Thu Jan  1 00:00:00 UTC 1970"),
    ("KBUILD_BUILD_USER", "xtask"),
    ("KBUILD_BUILD_HOST", "xtask"),
    ("KBUILD_BUILD_VERSION", "1"),
    ("LC_ALL", "C"),
];

/// Builds in a kernel tree from a tarball or a user's tree.
pub struct KbuildBackend {
    layout: Layout,
    /// `--kernel-src`, if given; otherwise Debian's tarball for each target's series.
    source_arg: Option<PathBuf>,
}

impl KbuildBackend {
    /// A backend using `source_arg` (`--kernel-src`) or Debian's tarballs.
    pub fn new(layout: Layout, source_arg: Option<PathBuf>) -> KbuildBackend {
        KbuildBackend { layout, source_arg }
    }

    fn input_for(&self, job: &Job) -> Result<SourceInput> {
        kernel_source::resolve_input(self.source_arg.as_deref(), &job.target.kernel)
    }

    /// The pristine tree (unpacked on first use, its pin checked) and the
    /// job's series generated against its Makefile.
    fn series(&self, sh: &Shell, job: &Job) -> Result<(PristineTree, Vec<SeriesPatch>)> {
        let input = self.input_for(job)?;
        let pristine = kernel_source::pristine_tree(sh, &self.layout, &input)?;
        job.target.ensure_series(&input, &pristine.version)?;
        let kver = kernel_source::series_of(&pristine.version);
        let makefile_path = pristine.dir.join("Makefile");
        let makefile = read_limited(
            &makefile_path,
            FileLimit::input("kernel Makefile"),
            "unpack the kernel source again",
        )?;
        let patches = series::collect(
            &self.layout.patches_dir(),
            &job.target,
            &job.variant,
            &kver,
            &makefile,
        )?;
        Ok((pristine, patches))
    }

    /// The patched tree of the job's series (cached, created on first use).
    pub fn source_tree(&self, sh: &Shell, job: &Job) -> Result<PatchedTree> {
        let (pristine, patches) = self.series(sh, job)?;
        patched_source::prepare(sh, &self.layout, &pristine, &patches)
    }

    /// `make` in `build` for `job`; with ccache on, `CC="ccache <cross>gcc"`
    /// and ccache's environment (the same for configuring and building, so
    /// kconfig's view of the compiler does not change between them).
    fn make<'a>(
        &self,
        sh: &'a Shell,
        job: &Job,
        src: &Path,
        build: &Path,
        options: &BuildOptions,
    ) -> xshell::Cmd<'a> {
        make_in(sh, &self.layout, job, src, build, options).arg(format!("O={}", build.display()))
    }
}

/// Runs a build's `make` logged to `log` under `label`. Only make's first
/// run in an emptied directory (`build` holds [`estimate`]'s empty mark)
/// compiles every object, so only it has a total to expect (from earlier
/// builds of `config`) and to remember.
pub(crate) fn run_counted(
    layout: &Layout,
    make: Command,
    build: &Path,
    config: &str,
    label: &str,
    log: &Path,
    options: &BuildOptions,
) -> Result<()> {
    let full = estimate::take_empty_mark(build)?;
    let expected = full
        .as_ref()
        .and_then(|_| estimate::expected_objects(layout, config));
    let objects = run_logged(
        make,
        label,
        log,
        options.verbose,
        expected,
        &options.control,
    )?;
    if let Some(full) = full {
        estimate::record_full_build(layout, full, config, objects)?;
    }
    Ok(())
}

/// `make -C tree ARCH=… CROSS_COMPILE=…` of `job`'s target with the fixed
/// `KBUILD_BUILD_*` identity and, with ccache or distcc on, `CC=…` and
/// their environment (stats log in `dir`): what the kernel-tree and
/// OpenWrt backends' makes share.
pub(crate) fn make_in<'a>(
    sh: &'a Shell,
    layout: &Layout,
    job: &Job,
    tree: &Path,
    dir: &Path,
    options: &BuildOptions,
) -> xshell::Cmd<'a> {
    let (arch, cross) = (&job.target.arch, &job.target.cross_compile);
    let mut make = cmd!(sh, "make -C {tree} ARCH={arch} CROSS_COMPILE={cross}");
    for (k, v) in REPRODUCIBLE_ENV {
        make = make.env(k, v);
    }
    if let Some((cc, env)) = distcc::compiler_setup(
        layout,
        options.ccache,
        &options.distcc,
        &job.target.cc(),
        dir,
    ) {
        make = make.arg(cc);
        for (k, v) in env {
            make = make.env(k, v);
        }
    }
    make
}

impl BuildBackend for KbuildBackend {
    fn name(&self) -> &'static str {
        "kernel-tree"
    }

    fn preflight(&self, sh: &Shell, jobs: &[Job]) -> Result<()> {
        let targets: Vec<_> = jobs.iter().map(|j| j.target.clone()).collect();
        let mut problems = Vec::new();
        if let Err(e) = toolchain::check_host_tools(&targets) {
            problems.push(format!("{e:#}"));
        }

        let mut compilers = BTreeMap::new();
        // Each source's version, read from its Makefile without unpacking.
        let mut versions: Vec<(SourceInput, String)> = Vec::new();
        for job in jobs {
            match self.input_for(job) {
                Err(e) => problems.push(format!("{e:#}")),
                Ok(input) => {
                    let checked = version_of(sh, &input, &mut versions)
                        .and_then(|v| job.target.ensure_series(&input, &v));
                    if let Err(e) = checked {
                        problems.push(format!("{e:#}"));
                    }
                }
            }
            let cc = job.target.cc();
            if !compilers.contains_key(&cc) {
                compilers.insert(cc.clone(), toolchain::compiler(sh, &job.target));
            }
            match &compilers[&cc] {
                Ok(compiler) => {
                    if let Err(e) = toolchain::check_flags(
                        sh,
                        compiler,
                        &job.variant.all_flags(),
                        toolchain::VARIANT_FLAGS_FIX,
                    ) {
                        problems.push(format!("variant {}: {e:#}", job.variant.name));
                    }
                }
                Err(e) => problems.push(format!("{e:#}")),
            }
        }
        // Sources and patch series last: a pin mismatch or a patch that
        // does not apply stops here, before hours of other builds. The
        // patched trees are cached, so the builds reuse them.
        if problems.is_empty() {
            for job in jobs {
                if let Err(e) = self.source_tree(sh, job) {
                    problems.push(format!("{}: {e:#}", job.label()));
                }
            }
        }
        super::backend::preflight_verdict(problems)
    }

    fn object_tree(&self, job: &Job) -> Option<std::path::PathBuf> {
        Some(self.layout.build_dir(&job.target.name, &job.variant.name))
    }

    fn inputs(&self, sh: &Shell, job: &Job) -> Result<JobInputs> {
        let (pristine, patches) = self.series(sh, job)?;
        Ok(JobInputs {
            source: SourceRecord {
                version: pristine.version,
                origin: pristine.origin.display().to_string(),
                sha256: pristine.tarball_sha256,
            },
            compiler: toolchain::compiler(sh, &job.target)?.version,
            patches: patches.iter().map(SeriesPatch::record).collect(),
        })
    }

    fn build(
        &self,
        sh: &Shell,
        planned: &PlannedJob,
        options: BuildOptions,
        log: &Path,
    ) -> Result<Built> {
        let job = &planned.job;
        let label = job.label();
        std::fs::write(log, format!("# cargo xtask build {label}\n"))
            .with_context(|| format!("writing {}", log.display()))?;
        let tree = self.source_tree(sh, job)?;
        let _in_use = patched_source::lock_for_use(&self.layout, &tree, options.wait)?;

        let build = self.layout.build_dir(&job.target.name, &job.variant.name);
        let incremental_from =
            reuse::start_from_sibling(sh, &self.layout, planned, &tree.dir, &build)?;
        reset_build_dir_for(&build, &tree.dir)?;

        let config = configure(self, sh, job, &tree.dir, &build, log, &options)?;
        ccache::reset_stats(&build)?;
        let mut goals = vec!["vmlinux".to_string()];
        goals.extend(job.target.make_targets.iter().cloned());
        let make = options.parallel(self.make(sh, job, &tree.dir, &build, &options).args(&goals));
        run_counted(&self.layout, make, &build, &config, &label, log, &options)?;

        let cflags = cflags_in_effect(job, &build, &config, &[])?;
        let zimage = build
            .join("arch")
            .join(&job.target.arch)
            .join("boot/zImage");
        Ok(Built {
            outputs: BuildOutputs {
                vmlinux: build.join("vmlinux"),
                zimage: zimage.is_file().then_some(zimage),
            },
            cflags,
            patches: tree.patches,
            config_sha256: crate::util::hash::sha256_bytes(config.as_bytes()),
            ccache: ccache::read_stats(options.ccache, &build)?,
            incremental_from,
            openwrt: None,
            extra_artifacts: Default::default(),
        })
    }
}

/// `input`'s kernel version, read from its Makefile once per source.
fn version_of(
    sh: &Shell,
    input: &SourceInput,
    versions: &mut Vec<(SourceInput, String)>,
) -> Result<String> {
    if let Some((_, version)) = versions.iter().find(|(known, _)| known == input) {
        return Ok(version.clone());
    }
    let version = kernel_source::input_version(sh, input)?;
    versions.push((input.clone(), version.clone()));
    Ok(version)
}

/// A build directory remembers its source tree; when the tree changes
/// (another series), the directory is emptied so no object of the other
/// tree survives with a misleading timestamp.
fn reset_build_dir_for(build: &Path, src: &Path) -> Result<()> {
    let marker = build.join(".xtask-source");
    let want = src.display().to_string();
    let have = read_limited(&marker, FileLimit::record("source marker"), "").unwrap_or_default();
    if have != want {
        if build.exists() {
            std::fs::remove_dir_all(build)
                .with_context(|| format!("emptying {}", build.display()))?;
        }
        std::fs::create_dir_all(build).with_context(|| format!("creating {}", build.display()))?;
        estimate::mark_empty(build)?;
    }
    std::fs::write(&marker, want).with_context(|| format!("writing {}", marker.display()))?;
    Ok(())
}

/// `make <base>`, merge the fragments and the variant's kconfig lines,
/// `make alldefconfig`, then check every requested symbol. Returns the
/// final `.config` text.
fn configure(
    backend: &KbuildBackend,
    sh: &Shell,
    job: &Job,
    src: &Path,
    build: &Path,
    log: &Path,
    options: &BuildOptions,
) -> Result<String> {
    let label = format!("{} (configuring)", job.label());
    let base = &job.target.kconfig.base;
    let run = |make: xshell::Cmd<'_>| {
        let command = Command::from(make);
        run_logged(
            command,
            &label,
            log,
            options.verbose,
            None,
            &options.control,
        )
    };
    run(backend.make(sh, job, src, build, options).arg(base))?;
    let config_file = build.join(".config");
    let base_config = read_limited(&config_file, FileLimit::record(".config"), "build again")
        .with_context(|| format!("after `make {base}`"))?;
    let settings = kconfig::read_fragments(
        &job.target.fragment_paths(),
        &job.variant.kconfig,
        &format!("variant {}", job.variant.name),
    )?;
    let merged = build.join(".xtask-merged.config");
    std::fs::write(&merged, kconfig::merge(&base_config, &settings))
        .with_context(|| format!("writing {}", merged.display()))?;
    run(backend
        .make(sh, job, src, build, options)
        .arg(format!("KCONFIG_ALLCONFIG={}", merged.display()))
        .arg("alldefconfig"))?;
    kconfig::ensure_applied(&config_file, &settings).with_context(|| {
        format!(
            "configuring {} from {}",
            job.label(),
            job.target.file.display()
        )
    })?;
    read_limited(&config_file, FileLimit::record(".config"), "build again")
}

/// The flags the build really used: the branch the `.config` selects, and
/// kbuild's recorded command for `init/main.o`, which must contain them and
/// every flag of `kcflags` (OpenWrt's KCFLAGS in OpenWrt mode, else none).
pub(crate) fn cflags_in_effect(
    job: &Job,
    build: &Path,
    config: &str,
    kcflags: &[String],
) -> Result<Cflags> {
    let size = config.lines().any(|l| l == "CONFIG_CC_OPTIMIZE_FOR_SIZE=y");
    let (effective, flags) = if size {
        ("os", &job.variant.os_flags)
    } else {
        ("o2", &job.variant.o2_flags)
    };
    let cmd_file = build.join("init/.main.o.cmd");
    let text = read_limited(
        &cmd_file,
        FileLimit::record("kbuild .cmd file"),
        "build again",
    )?;
    let command = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("savedcmd_init/main.o := ")
                .or_else(|| l.strip_prefix("cmd_init/main.o := "))
        })
        .with_context(|| format!("{}: no saved command for init/main.o", cmd_file.display()))?
        .to_string();
    let wanted: Vec<&str> = flags.split_whitespace().collect();
    let used: Vec<&str> = command.split_whitespace().collect();
    if !used.windows(wanted.len()).any(|w| w == wanted.as_slice()) {
        bail!(
            "the compiler was not called with the variant's flags {flags:?} \
             (see {}); is 201-extra_optimization.patch in the series?",
            cmd_file.display()
        );
    }
    if let Some(missing) = kcflags.iter().find(|f| !used.contains(&f.as_str())) {
        bail!(
            "the compiler was not called with OpenWrt's KCFLAGS flag {missing} (see {})",
            cmd_file.display()
        );
    }
    Ok(Cflags {
        os: job.variant.os_flags.clone(),
        o2: job.variant.o2_flags.clone(),
        effective: effective.to_string(),
        compile_command: command,
    })
}
