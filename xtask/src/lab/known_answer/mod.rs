//! The core model's known answers (`cargo xtask lab --target T
//! --known-answers`): guest programs whose modelled counts
//! are known from the model's own definition, run in the target's lab
//! guest under the model.
//!
//! * **Branch patterns** ([`program`]: `xl-known branch …`): a loop with
//!   one conditional branch taken always, every other time, or at random.
//!   Mispredictions per iteration must be ≈ 0, then ≈ 0 for a predictor
//!   with global history (gshare, the 74K's majority vote) but 50 % to
//!   100 % for a bimodal one (a 2-bit counter cannot learn an alternation:
//!   it misses every other outcome, or every one while it sits between
//!   its two weak states, and the kernel's branches that share the counter
//!   move it from one regime to the other), then ≈ 50 %. The loop's own
//!   back-edge adds a branch the predictor gets right.
//! * **Pointer chase** (`xl-known chase N`): a ring through 1 MiB, four
//!   times the largest L2 of the targets, one pointer per 32-byte line:
//!   every load misses the L1 and the L2, so its modelled memory cycles
//!   (the formula's L2 and DRAM terms per load) must be the table's
//!   `dram_cycles`.
//!
//! Each program runs once to warm up, then with N and 2N iterations; the
//! model's counters are read around each run over the plugin's socket,
//! and the difference of the two runs' differences, divided by N, is one
//! iteration's: start-up, page faults and the ring's construction cancel.
//! Five such pairs run, and each count's median over them is kept. One boot of the
//! target's baseline lab kernel runs them all (a minute or two with the
//! plugin); nothing crosses the lab's network but its own setup.

pub mod answer;
pub mod per_cpu;
pub mod program;

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use xshell::Shell;

use super::cache_model::{self, CacheModel};
use super::session::{Image, QemuTestbed};
use super::{kernel, rootfs, topology};
use crate::inputs::targets::{self, Target};
use crate::inputs::timing::TimingSpec;
use crate::inputs::variants;
use crate::kernel_build::BuildOptions;
use crate::results::lab::core_model::Cycles;
use crate::util::fs::write_atomic;
use crate::util::hash::sha256_file;
use crate::util::layout::Layout;

use answer::{counters, InGuest, WARM_UP};
pub use answer::{Answer, PerIteration, BRANCH_ITERATIONS, CHASE_LOADS};

/// Pairs of runs per program, each count's median kept ([`median_of`]).
const PAIRS: usize = 5;
/// Every known answer of one target's model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KnownAnswers {
    /// The target.
    pub target: String,
    /// The modelled core (`[lab.timing] core`).
    pub core: String,
    /// The predictor, `kind/entries/history/return stack/BTAC`.
    pub predictor: String,
    /// The table's DRAM latency, cycles.
    pub dram_cycles: f64,
    /// The answers, branch patterns first.
    pub answers: Vec<Answer>,
}

impl KnownAnswers {
    /// Whether every answer passed.
    pub fn pass(&self) -> bool {
        self.answers.iter().all(|a| a.pass)
    }

    /// A Markdown table: program, quantity, expected, measured, pass.
    pub fn render(&self) -> String {
        let mut out = format!(
            "Known answers of the core model: {} ({}, predictor {}, DRAM {} cycles)\n\n\
             | program | quantity | expected | measured | |\n|---|---|---|---|---|\n",
            self.target, self.core, self.predictor, self.dram_cycles
        );
        for a in &self.answers {
            out.push_str(&format!(
                "| `{}` | {} | {} | {:.3} | {} |\n",
                a.program,
                a.quantity,
                a.expected,
                a.measured,
                if a.pass { "✅ pass" } else { "❌ fail" }
            ));
        }
        out
    }
}

/// The branch programs' patterns.
const PATTERNS: [&str; 3] = ["always", "alternate", "random"];

/// What the mispredictions per iteration of `pattern` must be under a
/// predictor of `kind` (`bimodal`, `gshare`, `majority`): (words, accepted
/// ranges). A difference of two runs can come out a hair below 0.
pub fn expected_mispredicts(pattern: &str, kind: &str) -> (String, Vec<(f64, f64)>) {
    match pattern {
        "always" => ("≈ 0 (every predictor learns a branch always taken)".to_string(), vec![(-0.02, 0.02)]),
        "alternate" if kind == "bimodal" => (
            "50 % to 100 % (a 2-bit counter cannot learn an alternation: it misses every other outcome, or every one while it sits between its two weak states; other branches sharing the counter move it between the two)".to_string(),
            vec![(0.45, 1.05)],
        ),
        "alternate" => (
            format!("≈ 0 ({kind}: global history tells the alternation)"),
            vec![(-0.02, 0.05)],
        ),
        _ => (
            "≈ 50 % (random outcomes defeat every predictor)".to_string(),
            vec![(0.43, 0.57)],
        ),
    }
}

/// The model of `target`, with `timing` in place of its own
/// `[lab.timing]` when given (the tests try other predictors).
pub fn model(layout: &Layout, target: &Target, timing: Option<&TimingSpec>) -> Result<CacheModel> {
    let spec = kernel::spec_of(target)?;
    let mut model = cache_model::prepare(layout, target, spec)?;
    if let Some(t) = timing {
        t.check()?;
        model.core_args = Some(cache_model::core::plugin_args(spec, t)?);
        model.info.timing = Some(cache_model::core::timing_record(t, "a test's table"));
    }
    if model.core_args.is_none() {
        bail!(
            "target {} has no [lab.timing] table in {}: the known answers are the core model's",
            target.name,
            target.file.display()
        );
    }
    Ok(model)
}

/// Boots `kernel` (image, device tree) of `target` with `model` on a
/// machine of `cpus` CPUs (`None`: the target file's) and runs every
/// program, and on more than one CPU the per-CPU answers ([`per_cpu`]);
/// logs go to `dir`.
pub fn run(
    layout: &Layout,
    target: &Target,
    (image, dtb): (&Path, Option<&Path>),
    model: &CacheModel,
    (dir, cpus): (&Path, Option<u32>),
) -> Result<KnownAnswers> {
    let spec = &kernel::spec_of(target)?.with_cpus(cpus)?;
    let timing = model
        .info
        .timing
        .as_ref()
        .context("the model has no timing table")?;
    let initramfs = rootfs::prepare(layout, spec)?;
    let with_program = program::prepare(layout, target, &spec.guest_arch, &initramfs)?;
    let combined = rootfs::Initramfs {
        path: with_program.path.clone(),
        sha256: sha256_file(&with_program.path)?,
        size: std::fs::metadata(&with_program.path)
            .with_context(|| format!("reading {}", with_program.path.display()))?
            .len(),
        ..initramfs.clone()
    };
    let topology = topology::named(&topology::Name::NatRouter)?;
    let mut bed = QemuTestbed::boot(
        spec,
        &topology,
        Image {
            kernel: image,
            dtb,
            initramfs: &combined,
        },
        (dir, "known-answer"),
        Some(model),
    )?;
    let mut guest = InGuest {
        bed: &mut bed,
        name: &topology.measured,
    };
    let mut answers = Vec::new();
    for pattern in PATTERNS {
        let program = format!("{} branch {pattern}", program::GUEST_PATH);
        let it = median_of(&mut guest, &program, (BRANCH_ITERATIONS, timing))?;
        let (expected, accept) = expected_mispredicts(pattern, &timing.predictor.kind);
        let measured = it.cond_mispredicts;
        answers.push(Answer {
            program: format!("{program} N"),
            quantity: "conditional mispredictions per iteration".to_string(),
            pass: accept
                .iter()
                .any(|(lo, hi)| (*lo..=*hi).contains(&measured)),
            expected,
            accept,
            measured,
            per_iteration: it,
        });
    }
    let program = format!("{} chase", program::GUEST_PATH);
    let it = median_of(&mut guest, &program, (CHASE_LOADS, timing))?;
    let dram = timing.costs.dram_cycles;
    let memory = it.cycles.l2 + it.cycles.dram;
    answers.push(Answer {
        program: format!("{program} N"),
        quantity: "modelled memory cycles per load (L2 and DRAM terms)".to_string(),
        expected: format!("{dram} (the table's dram_cycles: every load misses L1 and L2), ±5 %"),
        accept: vec![(dram * 0.95, dram * 1.05)],
        measured: memory,
        pass: (dram * 0.95..=dram * 1.05).contains(&memory),
        per_iteration: it,
    });
    if spec.cpus > 1 {
        answers.extend(per_cpu::answers(&mut guest, timing)?);
    }
    let p = &timing.predictor;
    Ok(KnownAnswers {
        target: target.name.clone(),
        core: timing.core.clone(),
        predictor: format!(
            "{}/{}/{}/{}/{}",
            p.kind, p.entries, p.history_bits, p.return_stack, p.btac
        ),
        dram_cycles: dram,
        answers,
    })
}

/// Measures `program`'s iteration [`PAIRS`] times ([`per_iteration`]) and
/// keeps each count's median over the pairs ([`PerIteration::median`]):
/// what else the guest did during one run (a page reclaimed, a late timer,
/// a tick's softirq of some 10⁵ instructions) lands in one pair's counts,
/// not in the answer. A median per count, not the pair of the median
/// answer: a CI run's chase pair with the median memory cycles carried
/// 2.3 instructions per load, its noise in a count nobody sorted by.
fn median_of(
    guest: &mut InGuest<'_>,
    program: &str,
    (n, timing): (u64, &crate::results::lab::CoreTiming),
) -> Result<PerIteration> {
    let mut all = Vec::new();
    for _ in 0..PAIRS {
        all.push(per_iteration(guest, program, n, timing)?);
    }
    Ok(PerIteration::median(&all))
}

/// Runs `program N` and `program 2N` in `guest`, reading the model around
/// each; one iteration's counts.
fn per_iteration(
    guest: &mut InGuest<'_>,
    program: &str,
    n: u64,
    timing: &crate::results::lab::CoreTiming,
) -> Result<PerIteration> {
    guest.run(&format!("{program} {WARM_UP}"))?;
    let mut runs = Vec::new();
    for count in [n, 2 * n] {
        let before = counters(guest)?;
        let out = guest.run(&format!("{program} {count}"))?;
        let after = counters(guest)?;
        anyhow::ensure!(
            out.contains("xl-known done"),
            "`{program} {count}` printed no result:\n{out}"
        );
        runs.push(after.since(&before)?);
    }
    let (one, two) = (&runs[0], &runs[1]);
    let (c1, c2) = (
        one.core.context("no core counters")?,
        two.core.context("no core counters")?,
    );
    let d = |a: u64, b: u64| (b as f64 - a as f64) / n as f64;
    let (y1, y2) = (
        Cycles::of(one, &c1, &timing.costs),
        Cycles::of(two, &c2, &timing.costs),
    );
    let per = |a: f64, b: f64| (b - a) / n as f64;
    Ok(PerIteration {
        insns: d(one.insns, two.insns),
        cond_branches: d(
            c1.cond_taken + c1.cond_not_taken,
            c2.cond_taken + c2.cond_not_taken,
        ),
        taken: d(c1.taken(), c2.taken()),
        cond_mispredicts: d(c1.cond_mispredicts, c2.cond_mispredicts),
        l1d_misses: d(one.l1d_misses, two.l1d_misses),
        l2_misses: d(c1.demand_l2_misses(), c2.demand_l2_misses()),
        cycles: Cycles {
            base: per(y1.base, y2.base),
            taken: per(y1.taken, y2.taken),
            mispredicts: per(y1.mispredicts, y2.mispredicts),
            l2: per(y1.l2, y2.l2),
            dram: per(y1.dram, y2.dram),
            total: per(y1.total, y2.total),
        },
    })
}

/// What `cargo xtask lab --known-answers` was asked for.
#[derive(Debug, Clone)]
pub struct KnownAnswerRequest {
    /// `--target`.
    pub target: String,
    /// How to build the baseline lab kernel if it is missing.
    pub build: BuildOptions,
    /// `--json FILE`: the answers, written atomically.
    pub json: Option<std::path::PathBuf>,
    /// `--cpus N`: the machine's CPUs instead of the target file's (with
    /// more than one, the per-CPU answers run too).
    pub cpus: Option<u32>,
    /// `--openwrt PATH`: boot the baseline lab kernel built as this OpenWrt
    /// checkout builds the target's `[lab] openwrt` machine target (the
    /// kernel `lab --openwrt` measures), from OpenWrt mode's results;
    /// `None`: the workbench profile's lab kernel.
    pub openwrt: Option<std::path::PathBuf>,
}

/// `cargo xtask lab --target T --known-answers`: builds the baseline lab
/// kernel if needed, runs the programs, prints the table; fails when an
/// answer is off.
pub fn command(sh: &Shell, layout: &Layout, request: &KnownAnswerRequest) -> Result<KnownAnswers> {
    let all = targets::load_all(&layout.targets_dir())?;
    let target = targets::select(&all, std::slice::from_ref(&request.target))?.remove(0);
    let spec = kernel::spec_of(&target)?;
    if let Some(checkout) = &request.openwrt {
        // Before the model's plugin is compiled: a wrong path fails at once.
        crate::inputs::openwrt::Checkout::open(checkout)?;
    }
    super::host_tools::check_host_tools(spec)?;
    let model = model(layout, &target, None)?;
    let all_variants = variants::load(&layout.variants_file(), &layout.patches_dir())?;
    let baseline = variants::select(&all_variants, &[variants::BASELINE.to_string()])?;
    let kernels = match &request.openwrt {
        None => kernel::build_with(
            sh,
            layout,
            &target,
            &baseline,
            request.build.clone(),
            None,
            &kernel::Recipe::Profiles,
        )?,
        Some(checkout) => {
            anyhow::ensure!(
                spec.openwrt.is_some(),
                "{}: its [lab] table names no OpenWrt target for `--known-answers --openwrt` (openwrt = \"malta/le\", \"malta/be\" or \"armsr/armv7\", with openwrt_fragments)",
                target.file.display()
            );
            kernel::build_with(
                sh,
                &layout.openwrt_mode(),
                &target,
                &baseline,
                request.build.clone(),
                None,
                &kernel::Recipe::Openwrt(checkout.clone()),
            )?
        }
    };
    super::net::start_clean("lab")?;
    let dir = layout
        .work_dir()
        .join("lab/known-answer/logs")
        .join(&target.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let k = &kernels[0];
    let answers = run(
        layout,
        &target,
        (&k.image, k.dtb.as_deref()),
        &model,
        (&dir, request.cpus),
    )?;
    print!("{}", answers.render());
    println!("logs: {}", dir.display());
    if let Some(file) = &request.json {
        let mut text = serde_json::to_string_pretty(&answers)?;
        text.push('\n');
        write_atomic(file, text.as_bytes())?;
    }
    if !answers.pass() {
        bail!(
            "a known answer of {}'s core model is off (table above)",
            target.name
        );
    }
    Ok(answers)
}
