//! The OpenWrt backend (`cargo xtask build --openwrt PATH`): build each
//! target as its OpenWrt checkout configures and patches it, from the
//! workbench's kernel source.
//!
//! Per job: source → pristine tree → OpenWrt tree (overlays, then the
//! target's OpenWrt series, each patch classified on this point release:
//! upstream ones dropped, conflicts left out and listed;
//! [`openwrt_series::prepare_cached`]) → the variant's
//! `201-extra_optimization.patch` (generated against that tree's Makefile)
//! and its own patches → `.config` as OpenWrt's `Kernel/Configure/Default`
//! writes it ([`kconfig::kernel_dot_config`]) plus the variant's kconfig
//! lines → `make olddefconfig` → `make vmlinux <make_targets>` with
//! OpenWrt's `KCFLAGS` ([`flags::kernel_flags`]), in the tree as OpenWrt
//! builds (a full copy per job in `target/xtask/build/<target>/<variant>/linux/`).
//!
//! Each results directory also gets `openwrt-patches.json`: every OpenWrt
//! patch with its class (dropped and left-out ones included).
//!
//! Builds and results go to `target/xtask/openwrt/`
//! ([`Layout::openwrt_mode`]), apart from the default mode's;
//! `size-report --openwrt` compares them. `result.json`'s `openwrt` field
//! records the OpenWrt target, the patches left out and what olddefconfig
//! changed ([`crate::results::openwrt::OpenwrtRecord`]).

mod build_copy;
mod record;
mod resolved;
use record::write_classification;
use resolved::Resolved;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use xshell::Shell;

use super::backend::{BuildBackend, BuildOptions, Built};
use super::job::Job;
use super::openwrt_lab::{self, LabResolved, OpenwrtLab};
use super::plan::{JobInputs, PlannedJob, Unevaluated};
use super::progress::run_logged;
use crate::inputs::kconfig::{self as fragments, Setting};
use crate::inputs::kernel_source::{self, PristineTree};
use crate::inputs::openwrt::{flags, kconfig, optimization, select_for, Checkout, Wanted};
use crate::kernel_build::artifacts::BuildOutputs;
use crate::kernel_build::{ccache, openwrt_image, toolchain};
use crate::patches::extra_optimization;
use crate::patches::openwrt_series::{self, OpenwrtSeries};
use crate::patches::patched_source::{self, PatchedTree};
use crate::patches::rebase::Class;
use crate::patches::series::SeriesPatch;
use crate::results::openwrt::{KconfigChanges, LabSymbol};
use crate::results::{ArtifactRecord, PatchRecord, SourceRecord};
use crate::util::hash::sha256_bytes;
use crate::util::layout::Layout;

/// Builds kernels as an OpenWrt checkout configures and patches them.
pub struct OpenwrtBackend {
    layout: Layout,
    checkout: Checkout,
    source_arg: Option<PathBuf>,
    /// Builds a router target's lab kernels ([`super::openwrt_lab`]).
    lab: Option<OpenwrtLab>,
    /// Whether make evaluates the image Makefiles ([`Self::without_image_makefiles`]).
    image_makefiles: bool,
}

impl OpenwrtBackend {
    /// A backend reading the OpenWrt checkout at `openwrt`, building from
    /// `source_arg` (`--kernel-src`) or Debian's tarballs.
    pub fn new(layout: Layout, openwrt: &Path, source_arg: Option<PathBuf>) -> Result<Self> {
        Ok(OpenwrtBackend {
            layout,
            checkout: Checkout::open(openwrt)?,
            source_arg,
            lab: None,
            image_makefiles: true,
        })
    }

    /// For a dry run: no make on the checkout's image Makefiles (their
    /// `$(shell …)` ran during one); a device's recipe stands in as
    /// [`openwrt_image::unevaluated`], and the backend builds nothing.
    pub fn without_image_makefiles(mut self) -> Self {
        self.image_makefiles = false;
        self
    }

    /// A backend building `lab`'s kernels (jobs of target `lab.lab_target`)
    /// as OpenWrt builds its target for the QEMU machine, with the router's
    /// KCFLAGS ([`super::openwrt_lab`]).
    pub fn for_lab(
        layout: Layout,
        openwrt: &Path,
        source_arg: Option<PathBuf>,
        lab: OpenwrtLab,
    ) -> Result<Self> {
        Ok(OpenwrtBackend {
            lab: Some(lab),
            ..OpenwrtBackend::new(layout, openwrt, source_arg)?
        })
    }

    fn resolve(&self, sh: &Shell, job: &Job) -> Result<Resolved> {
        let input = kernel_source::resolve_input(self.source_arg.as_deref(), &job.target.kernel)?;
        let pristine = kernel_source::pristine_tree(sh, &self.layout, &input)?;
        let kver = kernel_source::series_of(&pristine.version);
        let (selection, flags_target) = match &self.lab {
            None => {
                let s = select_for(
                    &self.checkout,
                    &self.layout.targets_dir(),
                    &job.target.name,
                    Wanted::Source {
                        series: &kver,
                        version: &pristine.version,
                    },
                )?;
                let t = s.target.clone();
                (s, t)
            }
            Some(lab) => {
                anyhow::ensure!(
                    job.target.name == lab.lab_target,
                    "{}: this backend builds {}'s lab kernels only",
                    job.label(),
                    lab.router.name
                );
                lab.select(&self.checkout, &kver, &pristine.version)?
            }
        };
        let series = OpenwrtSeries::load(&self.checkout, &selection.target, &kver)?;
        let openwrt = openwrt_series::prepare_cached(sh, &self.layout, &pristine, &series)?;
        let makefile_path = openwrt.dir.join("Makefile");
        let makefile = crate::util::fs::read_limited(
            &makefile_path,
            crate::util::fs::FileLimit::input("kernel Makefile"),
            "remove the patched tree and build again",
        )?;
        let generated = extra_optimization::patch_text(
            extra_optimization::DEFAULT_HEADER,
            &makefile,
            &job.variant,
        )
        .with_context(|| {
            format!(
                "generating {} for variant {} against OpenWrt's Makefile",
                extra_optimization::PATCH_NAME,
                job.variant.name
            )
        })?;
        let mut variant_series = vec![SeriesPatch {
            name: format!("openwrt-mode/{}", extra_optimization::PATCH_NAME),
            bytes: generated.into_bytes(),
        }];
        let patches_dir = self.layout.patches_dir();
        for file in &job.variant.patches {
            variant_series.push(SeriesPatch {
                name: file
                    .strip_prefix(&patches_dir)
                    .unwrap_or(file)
                    .display()
                    .to_string(),
                bytes: std::fs::read(file)
                    .with_context(|| format!("reading {}", file.display()))?,
            });
        }
        let config_files = kconfig::config_files(&self.checkout, &selection.target, &kver);
        // The level OpenWrt builds the router with (a lab kernel's too).
        let level = optimization::default_level(&self.checkout, &flags_target)?;
        let dot_config = kconfig::kernel_dot_config(
            &self.checkout,
            &config_files,
            level.as_ref().map(|d| d.level),
        )?;
        let kcflags = flags::kernel_flags(&self.checkout, &flags_target)?;
        let (image, lab) = match &self.lab {
            None if !self.image_makefiles => (None, None),
            None => (
                openwrt_image::plan(
                    &self.checkout,
                    &selection.target,
                    &job.target,
                    &openwrt.dir,
                    &pristine.version,
                )?,
                None,
            ),
            Some(lab) => (
                None,
                Some(lab.resolve(&self.checkout, &selection, &flags_target, &kcflags)?),
            ),
        };
        Ok(Resolved {
            pristine,
            selection,
            openwrt,
            variant_series,
            kcflags,
            dot_config,
            image,
            image_unevaluated: self.unevaluated(job),
            config_files,
            lab,
        })
    }

    /// The variant's patches on the OpenWrt tree (cached, created on first use).
    fn source_tree(&self, sh: &Shell, r: &Resolved) -> Result<PatchedTree> {
        let base = PristineTree {
            dir: r.openwrt.dir.clone(),
            version: r.pristine.version.clone(),
            tarball_sha256: r
                .pristine
                .tarball_sha256
                .as_ref()
                .map(|_| r.openwrt.key.clone()),
            origin: r.pristine.origin.clone(),
        };
        patched_source::prepare(sh, &self.layout, &base, &r.variant_series)
    }

    /// Everything recorded as the job's series, in order: the OpenWrt
    /// patches applied, the generated flags patch and the variant's
    /// patches, then the OpenWrt `.config` input and KCFLAGS as
    /// `openwrt-config:<target>` and `openwrt-kcflags:<flags>` (so that
    /// they are part of the build key and of `result.json`).
    fn records(r: &Resolved) -> Vec<PatchRecord> {
        let mut all = r.openwrt.applied.clone();
        all.extend(r.variant_series.iter().map(SeriesPatch::record));
        all.push(PatchRecord {
            name: format!("openwrt-config:{}", r.selection.target),
            sha256: sha256_bytes(&r.dot_config),
        });
        let kcflags = r.kcflags.kcflags_string();
        all.push(PatchRecord {
            name: format!("openwrt-kcflags:{kcflags}"),
            sha256: sha256_bytes(kcflags.as_bytes()),
        });
        all.extend(r.image.as_ref().map(openwrt_image::record));
        all.extend(r.image_unevaluated.as_ref().map(Unevaluated::record));
        all.extend(r.lab.as_ref().map(LabResolved::patch_record));
        all
    }

    /// `make` in the tree itself, as OpenWrt builds (no `O=`), with ccache
    /// (and distcc) as the kernel-tree backend sets them up, the stats log
    /// in the tree.
    fn make<'a>(
        &self,
        sh: &'a Shell,
        job: &Job,
        tree: &Path,
        kcflags: &str,
        options: &BuildOptions,
    ) -> xshell::Cmd<'a> {
        super::kbuild::make_in(sh, &self.layout, job, tree, tree, options)
            .arg(format!("KCFLAGS={kcflags}"))
    }

    /// Configures `job`'s tree `build` (resolved as `r`, built with
    /// `kcflags`; the shell, options and log in `tools`): OpenWrt's
    /// `.config`, a lab kernel's additions and the variant's lines after
    /// them (a later line wins), through `make olddefconfig`. Returns the
    /// final `.config`, what olddefconfig changed of the input, and what
    /// the lab changed of OpenWrt's config alone (empty without a lab).
    ///
    /// Errors: an unreadable variant fragment, make's failure, a setting
    /// the final `.config` does not have, I/O on `.config`.
    fn configure(
        &self,
        (sh, options, log): (&Shell, &BuildOptions, &Path),
        job: &Job,
        r: &Resolved,
        build: &Path,
        kcflags: &str,
    ) -> Result<(String, KconfigChanges, Vec<LabSymbol>)> {
        let label = job.label();
        // OpenWrt's .config, a lab kernel's additions, the variant's lines
        // after them (a later line wins).
        let variant_settings = fragments::read_fragments(
            &[],
            &job.variant.kconfig,
            &format!("variant {}", job.variant.name),
        )?;
        let lab_settings = r.lab.as_ref().map_or(&[][..], |l| &l.settings[..]);
        let config_file = build.join(".config");
        let configuring = format!("{label} (configuring)");
        let olddefconfig = |lines: &[&[Setting]]| -> Result<Vec<u8>> {
            let mut config = r.dot_config.clone();
            for s in lines.iter().flat_map(|l| l.iter()) {
                config.extend_from_slice(s.config_line().as_bytes());
                config.push(b'\n');
            }
            std::fs::write(&config_file, &config)
                .with_context(|| format!("writing {}", config_file.display()))?;
            let make = self
                .make(sh, job, build, kcflags, options)
                .arg("olddefconfig");
            run_logged(
                Command::from(make),
                &configuring,
                log,
                options.verbose,
                None,
                &options.control,
            )?;
            Ok(config)
        };
        // A lab kernel: first what OpenWrt's config (with the variant's
        // lines) alone becomes, to record what the lab changes.
        let openwrt_only = match &r.lab {
            Some(_) => {
                olddefconfig(&[&variant_settings])?;
                Some(crate::util::fs::read_limited(
                    &config_file,
                    crate::util::fs::FileLimit::record(".config"),
                    "build again",
                )?)
            }
            None => None,
        };
        let config = olddefconfig(&[lab_settings, &variant_settings])?;
        let settings: Vec<Setting> = lab_settings
            .iter()
            .chain(&variant_settings)
            .cloned()
            .collect();
        fragments::ensure_applied(&config_file, &settings).with_context(|| {
            format!("configuring {label} from OpenWrt's {}", r.selection.target)
        })?;
        let final_config = crate::util::fs::read_limited(
            &config_file,
            crate::util::fs::FileLimit::record(".config"),
            "build again",
        )?;
        let kconfig = super::openwrt_kconfig::changes(
            &String::from_utf8_lossy(&config),
            &final_config,
            build,
        )?;
        let added = openwrt_only.map_or_else(Vec::new, |o| {
            openwrt_lab::added(&o, &final_config, lab_settings)
        });
        if r.lab.is_some() {
            eprintln!(
                "{label}: the lab changed {} symbols of OpenWrt's {} config ({} set by its fragments)",
                added.len(),
                r.selection.target,
                added.iter().filter(|a| a.set_by.is_some()).count()
            );
        }
        eprintln!(
            "{label}: olddefconfig: {} symbols the source does not know ({} of them set), {} with unmet dependencies, {} values changed",
            kconfig.unknown.len(),
            kconfig.unknown.iter().filter(|s| r.dot_config_sets(s)).count(),
            kconfig.unmet.len(),
            kconfig.changed.len()
        );
        Ok((final_config, kconfig, added))
    }

    /// The OpenWrt image of `job`'s built kernel (in `build_dir/linux`,
    /// resolved as `r`; the shell, options and log in `tools`), made in
    /// `build_dir/openwrt-image` and copied beside `log`, and, with an
    /// image recipe, every device's fit as `device-fit.json` there: the
    /// image's artifact records (none without a recipe).
    ///
    /// Errors: those of [`openwrt_image::produce`]; a device fit that
    /// fails is a warning, since the kernel itself was built.
    fn images(
        &self,
        (sh, options, log): (&Shell, &BuildOptions, &Path),
        job: &Job,
        r: &Resolved,
        build_dir: &Path,
    ) -> Result<BTreeMap<String, ArtifactRecord>> {
        let label = job.label();
        let build = build_dir.join("linux");
        let recipe = r
            .image
            .as_ref()
            .map(|i| i.with_linux_dir(&r.openwrt.dir, &build));
        let image_tree = openwrt_image::KernelTree {
            linux_dir: &build,
            vmlinux: &build.join("vmlinux"),
            cross_compile: &job.target.cross_compile,
            karch: &job.target.arch,
            linux_version: &r.pristine.version,
        };
        let kdir = build_dir.join("openwrt-image");
        let results_dir = log.parent().unwrap_or(Path::new("."));
        let extra_artifacts =
            openwrt_image::produce(sh, recipe.as_ref(), &image_tree, &kdir, results_dir)?;
        if recipe.is_some() {
            // Every device of the target: device-fit.json beside result.json.
            // A failure here is a warning: the kernel itself was built.
            let fit = device_fit(&self.checkout, r, &image_tree, build_dir, options.jobs)
                .and_then(|record| record.write(results_dir));
            if let Err(e) = fit {
                eprintln!("warning: {label}: device fit: {e:#}");
            }
        }
        Ok(extra_artifacts)
    }
}

impl BuildBackend for OpenwrtBackend {
    fn name(&self) -> &'static str {
        "openwrt"
    }

    fn preflight(&self, sh: &Shell, jobs: &[Job]) -> Result<()> {
        let targets: Vec<_> = jobs.iter().map(|j| j.target.clone()).collect();
        toolchain::check_host_tools(&targets)?;
        let mut problems = Vec::new();
        for job in jobs {
            let checked = (|| -> Result<()> {
                let r = self.resolve(sh, job)?;
                let compiler = toolchain::compiler(sh, &job.target)?;
                toolchain::check_flags(
                    sh,
                    &compiler,
                    &job.variant.all_flags(),
                    toolchain::VARIANT_FLAGS_FIX,
                )?;
                let kcflags: Vec<&str> = r.kcflags.kcflags.iter().map(String::as_str).collect();
                toolchain::check_flags(
                    sh,
                    &compiler,
                    &kcflags,
                    &format!(
                        "They are OpenWrt's KCFLAGS: fix CONFIG_EXTRA_OPTIMIZATION ({}) or CONFIG_KERNEL_CFLAGS ({}) in the checkout {}.",
                        r.kcflags.extra_optimization.origin,
                        r.kcflags.kernel_cflags.origin,
                        self.checkout.root().display()
                    ),
                )?;
                let c = &r.openwrt.classification;
                eprintln!(
                    "{}: OpenWrt {} on Linux {}: {}",
                    job.label(),
                    r.selection.target,
                    r.pristine.version,
                    c.summary()
                );
                for w in kconfig::missing_config_warnings(
                    &self.checkout,
                    &r.selection.target,
                    &r.selection.kernel,
                ) {
                    eprintln!("warning: {}: {w}", job.label());
                }
                for p in c.of_class(Class::Conflict) {
                    eprintln!("  left out (conflict): {}", p.name);
                }
                self.source_tree(sh, &r)?;
                Ok(())
            })();
            if let Err(e) = checked {
                problems.push(format!("{}: {e:#}", job.label()));
            }
        }
        super::backend::preflight_verdict(problems)
    }

    fn object_tree(&self, job: &Job) -> Option<PathBuf> {
        Some(
            self.layout
                .build_dir(&job.target.name, &job.variant.name)
                .join("linux"),
        )
    }

    fn inputs(&self, sh: &Shell, job: &Job) -> Result<JobInputs> {
        let r = self.resolve(sh, job)?;
        Ok(JobInputs {
            source: SourceRecord {
                version: r.pristine.version.clone(),
                origin: r.pristine.origin.display().to_string(),
                sha256: r.pristine.tarball_sha256.clone(),
            },
            compiler: toolchain::compiler(sh, &job.target)?.version,
            patches: Self::records(&r),
        })
    }

    fn unevaluated(&self, job: &Job) -> Option<Unevaluated> {
        let dry = self.lab.is_none() && !self.image_makefiles;
        dry.then(|| openwrt_image::unevaluated(&job.target))?
    }

    fn build(
        &self,
        sh: &Shell,
        planned: &PlannedJob,
        options: BuildOptions,
        log: &Path,
    ) -> Result<Built> {
        anyhow::ensure!(self.image_makefiles, "a dry run's backend builds nothing");
        let job = &planned.job;
        let label = job.label();
        std::fs::write(log, format!("# cargo xtask build --openwrt {label}\n"))
            .with_context(|| format!("writing {}", log.display()))?;
        let r = self.resolve(sh, job)?;
        write_classification(&r, &log.with_file_name(CLASSIFICATION_FILE))?;
        let tree = self.source_tree(sh, &r)?;
        let kcflags = r.kcflags.kcflags_string();
        let build_dir = self.layout.build_dir(&job.target.name, &job.variant.name);
        // OpenWrt builds in the source tree: each job in its own full copy.
        let build = build_dir.join("linux");
        build_copy::refresh(sh, &tree.dir, &build_dir, &build)?;
        let tools = (sh, &options, log);
        let (final_config, kconfig, added) = self.configure(tools, job, &r, &build, &kcflags)?;

        let mut goals = vec!["vmlinux".to_string()];
        goals.extend(job.target.make_targets.iter().cloned());
        ccache::reset_stats(&build)?;
        let make = options.parallel(self.make(sh, job, &build, &kcflags, &options).args(&goals));
        // As in the default mode: a total only for make's first run in a
        // fresh copy of the tree.
        let (layout, config) = (&self.layout, &final_config);
        super::kbuild::run_counted(layout, make, &build_dir, config, &label, log, &options)?;

        let cflags =
            super::kbuild::cflags_in_effect(job, &build, &final_config, &r.kcflags.kcflags)?;
        let zimage = build
            .join("arch")
            .join(&job.target.arch)
            .join("boot/zImage");
        let variant_records: Vec<PatchRecord> =
            r.variant_series.iter().map(SeriesPatch::record).collect();
        anyhow::ensure!(
            tree.patches == variant_records,
            "the variant's patches changed during the build; build again"
        );
        let patches = Self::records(&r);
        let extra_artifacts = self.images(tools, job, &r, &build_dir)?;
        Ok(Built {
            outputs: BuildOutputs {
                vmlinux: build.join("vmlinux"),
                zimage: zimage.is_file().then_some(zimage),
            },
            cflags,
            patches,
            config_sha256: sha256_bytes(final_config.as_bytes()),
            ccache: ccache::read_stats(options.ccache, &build)?,
            // Each OpenWrt-mode job builds in its own full copy of the tree.
            incremental_from: None,
            openwrt: Some(record::record(self.checkout.root(), &r, kconfig, added)),
            extra_artifacts,
        })
    }
}

/// Every device of `r`'s OpenWrt target made from `tree`'s kernel
/// ([`openwrt_image::fit`]), in `<build_dir>/device-fit`, as recorded in
/// `device-fit.json` ([`crate::results::device_fit`]).
fn device_fit(
    checkout: &Checkout,
    r: &Resolved,
    tree: &openwrt_image::KernelTree<'_>,
    build_dir: &Path,
    jobs: usize,
) -> Result<crate::results::device_fit::DeviceFitRecord> {
    let env = crate::inputs::openwrt::image::MakeEnv {
        linux_dir: tree.linux_dir,
        karch: tree.karch,
        linux_version: tree.linux_version,
    };
    let target = &r.selection.target;
    let entries = crate::inputs::openwrt::image::devices::evaluate_all(checkout, target, &env)?;
    let kdir = build_dir.join("device-fit");
    let mut record =
        openwrt_image::fit::fit_all(&entries, tree, &kdir, jobs.clamp(1, 8), &target.to_string())?;
    record.vmlinux_sha256 = crate::util::hash::sha256_file(tree.vmlinux)?;
    Ok(record)
}

pub use crate::results::openwrt::CLASSIFICATION_FILE;
