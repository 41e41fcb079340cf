//! An experiment's plan, printed before anything runs: the builds (each
//! job's build key, and which are up to date), the labs (each target's
//! lab plan, as `cargo xtask lab` prints it), the report files, and an
//! estimate of the time.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use xshell::Shell;

use super::file::{Experiment, ExperimentLab, ExperimentMode, LabsAtOnce};
use super::request::Run;
use crate::kernel_build::ccache::{self, Ccache};
use crate::kernel_build::command::{self, BuildRequest, Planned};
use crate::kernel_build::Rebuild;
use crate::lab::orchestrate::LabPlan;
use crate::lab::qemu_lab::{self, QemuBackend};
use crate::lab::{topology, Problem};
use crate::report::Format;
use crate::util::layout::Layout;
use crate::util::lock::Wait;

/// A build job's time when no earlier result of it says otherwise: the
/// middle of the 7–25 minutes a router kernel takes on an idle 2-core
/// machine (docs: the developers' guide), in seconds.
pub const BUILD_SECONDS_UNKNOWN: f64 = 15.0 * 60.0;
/// A lab boot to ready, in seconds: `cargo xtask bench lab`'s order of
/// magnitude on Malta under TCG (a plan's estimate, not a measurement).
pub const BOOT_SECONDS: u64 = 30;
/// Per run beyond its traffic (GRO switch, iperf3 start, samples), in
/// seconds; as `bench lab` reports per-run overhead.
pub const RUN_OVERHEAD_SECONDS: u64 = 3;

/// One target's lab in the plan.
pub struct LabItem<'a> {
    /// The target.
    pub target: String,
    /// The lab as resolved once, printed and then run as it is: its plan
    /// and its backend (`None` when this branch's QEMU lab cannot run
    /// the file's topology and workload yet).
    pub lab: Option<(LabPlan, QemuBackend<'a>)>,
    /// The lab's plan as printed, or why it cannot run.
    pub text: String,
}

impl LabItem<'_> {
    /// Runs (warm-ups included) and boots, for the estimate: the plan's
    /// ([`LabPlan::runs_and_boots`]); none for a lab that cannot run.
    pub fn runs_and_boots(&self) -> (u64, u64) {
        self.lab
            .as_ref()
            .map_or((0, 0), |(plan, _)| plan.runs_and_boots())
    }
}

/// Everything an experiment will do.
pub struct ExperimentPlan<'a> {
    /// The experiment.
    pub experiment: Experiment,
    /// What is built.
    pub build_request: BuildRequest,
    /// The build jobs, checked and keyed.
    pub builds: Planned,
    /// The labs, one per lab target.
    pub labs: Vec<LabItem<'a>>,
    /// How many labs run at the same time ([`labs_at_once`]).
    pub labs_at_once: u32,
    /// The report files.
    pub reports: Vec<(Format, PathBuf)>,
}

/// The file a report of `format` goes to in `dir`: `report.txt`,
/// `report.mail`, `report.md`, `report.json`, `report.csv`,
/// `report.svg`.
pub fn report_file(dir: &std::path::Path, format: Format) -> PathBuf {
    let ext = match format {
        Format::Text => "txt",
        Format::Markdown => "md",
        other => other.name(),
    };
    dir.join(format!("report.{ext}"))
}

/// Plans `experiment`: the build jobs (checked, keyed), each lab resolved
/// as `cargo xtask lab` resolves it (target, variants, host tools); builds
/// and runs nothing. For [`Run::DryRun`] the builds are planned as `build
/// --dry-run` plans them: in OpenWrt mode without evaluating the
/// checkout's image Makefiles (code make would run), which the plan says.
///
/// Errors: whatever the build's plan or a lab's resolve refuses.
pub fn plan<'a>(
    sh: &'a Shell,
    layout: &'a Layout,
    experiment: Experiment,
    jobs: usize,
    run: Run,
) -> Result<ExperimentPlan<'a>> {
    let build_request = BuildRequest {
        targets: experiment.targets.clone(),
        variants: experiment.variants.clone(),
        jobs,
        kernel_src: None,
        verbose: false,
        rebuild: Rebuild::IfChanged,
        wait: Wait::Yes,
        mode: match run {
            Run::DryRun => command::BuildMode::DryRun,
            Run::All => command::BuildMode::Build,
        },
        ccache: Ccache::On {
            max_bytes: ccache::parse_size(ccache::DEFAULT_SIZE)?,
        },
        distcc: Default::default(),
        openwrt: match &experiment.mode {
            ExperimentMode::Openwrt(p) => Some(p.clone()),
            ExperimentMode::Profiles => None,
        },
    };
    let builds = command::plan(sh, layout, &build_request)?;
    let mut labs = Vec::new();
    let mut at_once = 1;
    if let Some(spec) = &experiment.lab {
        at_once = labs_at_once(spec, jobs)?;
        for target in &spec.targets {
            let mut request = spec.request.clone();
            request.target = target.clone();
            request.variants = experiment.variants.clone();
            request.build = crate::kernel_build::BuildOptions::with_jobs(jobs);
            // OpenWrt mode's lab kernels too (`lab --openwrt PATH`).
            request.openwrt = build_request.openwrt.clone();
            request.labs_at_once = at_once;
            if let Err(p @ Problem::NotRunnable { .. }) = request.check() {
                labs.push(LabItem {
                    target: target.clone(),
                    lab: None,
                    text: format!(
                        "lab plan for {target}:\n  topology: {} (registered), workload: {}\n  \
                         not runnable yet: {p}\n",
                        request.topology,
                        request.describe_workload()
                    ),
                });
                continue;
            }
            let (lab_plan, backend) = qemu_lab::resolve((sh, layout), &request)?;
            lab_plan.check()?;
            let text = lab_plan.describe();
            labs.push(LabItem {
                target: target.clone(),
                lab: Some((lab_plan, backend)),
                text,
            });
        }
    }
    let reports = experiment
        .report
        .formats
        .iter()
        .map(|&f| (f, report_file(&experiment.report.output, f)))
        .collect();
    Ok(ExperimentPlan {
        experiment,
        build_request,
        builds,
        labs,
        labs_at_once: at_once,
        reports,
    })
}

/// How many of `spec`'s labs run at once: with [`LabsAtOnce::SideBySide`],
/// as many as `jobs` CPUs hold at one per guest (QEMU's TCG runs a guest
/// on one host thread; the mesh boots two), at least one and at most one
/// per target; 1 with [`LabsAtOnce::Serial`].
pub fn labs_at_once(spec: &ExperimentLab, jobs: usize) -> Result<u32> {
    if spec.labs == LabsAtOnce::Serial {
        return Ok(1);
    }
    let guests = topology::named(&spec.request.topology)?.guests.len().max(1);
    let fit = (jobs / guests).clamp(1, spec.targets.len().max(1));
    Ok(u32::try_from(fit).unwrap_or(1))
}

/// The plan's first line: `experiment NAME (FILE): DESCRIPTION` and a
/// newline, with control characters escaped
/// ([`crate::util::text::printable`]): the description, the name and the
/// path come from the user's files, and an escape sequence in them is
/// shown, not run by the terminal.
pub fn heading(e: &Experiment) -> String {
    let mut line = format!("experiment {} ({})", e.name, e.file.display());
    if !e.description.is_empty() {
        line.push_str(&format!(": {}", e.description));
    }
    format!("{}\n", crate::util::text::printable(&line))
}

impl ExperimentPlan<'_> {
    /// The plan as printed first: the experiment, the builds with their
    /// status, each lab's plan, the report files.
    pub fn describe(&self) -> String {
        let e = &self.experiment;
        let mut out = heading(e);
        out.push_str(&format!(
            "  mode:     {}\n",
            match &e.mode {
                ExperimentMode::Profiles => "the hand-written profiles of targets/".to_string(),
                ExperimentMode::Openwrt(p) =>
                    format!("OpenWrt's configs, series and KCFLAGS ({})", p.display()),
            }
        ));
        out.push_str(&format!(
            "  base:     {}; variants: {}\n",
            e.variants[0],
            e.variants[1..].join(", ")
        ));
        let fresh = self.builds.jobs.len() - self.builds.up_to_date().len();
        out.push_str(&format!(
            "builds ({} jobs, {} up to date, side by side within -j {}):\n",
            self.builds.jobs.len(),
            self.builds.jobs.len() - fresh,
            self.build_request.jobs
        ));
        for line in command::describe_plan(&self.builds.layout, &self.builds.jobs).lines() {
            out.push_str(&format!("  {line}\n"));
        }
        if self.labs.is_empty() {
            out.push_str("labs: none (sizes only)\n");
        } else if self.labs_at_once > 1 {
            out.push_str(&format!(
                "labs ({} at once, side by side within -j {}: Mbit/s is recorded as measured \
                 under that load; `labs = \"serial\"` in [lab] runs them one after another):\n",
                self.labs_at_once, self.build_request.jobs
            ));
        } else {
            let why = match &self.experiment.lab {
                Some(l) if l.labs == LabsAtOnce::Serial => "labs = \"serial\"".to_string(),
                Some(_) if self.labs.len() < 2 => "one lab".to_string(),
                _ => format!(
                    "-j {} holds one lab's guests at a time, at one CPU per guest",
                    self.build_request.jobs
                ),
            };
            out.push_str(&format!("labs (one after another: {why}):\n"));
        }
        for lab in &self.labs {
            for line in lab.text.lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out.push_str("report:\n");
        for (format, path) in &self.reports {
            out.push_str(&format!("  {:<8} {}\n", format.name(), path.display()));
        }
        out
    }

    /// The estimate `--dry-run` prints: builds not up to date at their
    /// last recorded duration (else [`BUILD_SECONDS_UNKNOWN`]), one after
    /// another's CPU; each lab's boots and runs at [`BOOT_SECONDS`] and
    /// duration + [`RUN_OVERHEAD_SECONDS`], divided among the labs that
    /// run at once (as if they took equally long). The lab kernels' own
    /// builds are not counted.
    pub fn estimate(&self) -> String {
        let up: Vec<String> = self
            .builds
            .up_to_date()
            .iter()
            .map(|p| p.job.label())
            .collect();
        let build: f64 = self
            .builds
            .jobs
            .iter()
            .filter(|p| !up.contains(&p.job.label()))
            .map(|p| {
                let dir = self
                    .builds
                    .layout
                    .results_dir(&p.job.target.name, &p.job.variant.name);
                crate::results::BuildResult::read(&dir)
                    .map_or(BUILD_SECONDS_UNKNOWN, |r| r.duration_seconds)
            })
            .sum();
        let lab: u64 = self
            .labs
            .iter()
            .filter_map(|l| l.lab.as_ref())
            .map(|(plan, _)| {
                let (runs, boots) = plan.runs_and_boots();
                let duration = u64::from(plan.schedule.duration_seconds);
                runs * (duration + RUN_OVERHEAD_SECONDS) + boots * BOOT_SECONDS
            })
            .sum::<u64>()
            .div_ceil(u64::from(self.labs_at_once.max(1)));
        let show = |s: u64| humantime::format_duration(Duration::from_secs(s)).to_string();
        format!(
            "estimate: builds {} ({} to build), labs {} ({} runs, {} boots), about {} in all \
             (lab kernels not counted; builds at their last duration or {} min each)\n",
            show(build as u64),
            self.builds.jobs.len() - up.len(),
            show(lab),
            self.labs.iter().map(|l| l.runs_and_boots().0).sum::<u64>(),
            self.labs.iter().map(|l| l.runs_and_boots().1).sum::<u64>(),
            show(build as u64 + lab),
            BUILD_SECONDS_UNKNOWN / 60.0
        )
    }
}
