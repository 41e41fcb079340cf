//! [`LabPlan`]: what the lab will do, before it does anything (see
//! [`super`]'s docs): the data every lab kind resolves to, its check and
//! its printed form. In a file of its own so that the flow (`mod.rs`)
//! and the takeover of a killed lab (`resume.rs`) both import it.

use anyhow::{bail, Result};

use crate::lab::runner;
use crate::lab::topology::Topology;
use crate::lab::workload::{check_places, Workload};
use crate::results::lab::Settings;

/// Whether the flow runs the plan or stops once the machine is ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Prepare, record and run.
    Run,
    /// Prepare only (`--build-only`: the lab kernels and the initramfs).
    PrepareOnly,
}

pub use crate::lab::request::Control;

/// What the lab will do, before it does anything (see the module docs).
pub struct LabPlan {
    /// `lab.json`'s target, and the directory under `target/xtask/lab/`
    /// (`brcm47xx`, `host`).
    pub target: String,
    /// The machine in words: `QEMU malta -cpu 74Kf`, `router
    /// root@192.168.1.1 over SSH`, `this machine's kernel`.
    pub machine: String,
    /// The QEMU lab's topology; `None` where the network is the lab
    /// file's (SSH) or one namespace (host).
    pub topology: Option<Topology>,
    /// The endpoints and guests the machine offers when there is no
    /// topology (the SSH lab's `lan` and `wan`, the host lab's `host`).
    pub places: (Vec<String>, Vec<String>),
    /// What each run does.
    pub workload: Box<dyn Workload>,
    /// A reference arm: the base's kernel on this topology instead (the
    /// mesh's "without batman-adv", [`crate::lab::topology::Name::MeshBridged`]),
    /// run after the other arms as `<base>~<topology>`.
    pub reference: Option<Topology>,
    /// The arms' variants, the base first, without repeats.
    pub variants: Vec<String>,
    /// The A/A control.
    pub control: Control,
    /// The schedule of every session.
    pub schedule: runner::Plan,
    /// `lab.json`'s settings.
    pub settings: Settings,
}

impl LabPlan {
    /// The arms' names in run order: the base, its A/A twin, the others.
    pub fn arm_names(&self) -> Vec<String> {
        let mut names = self.variants.clone();
        if self.control == Control::Twin && !names.is_empty() {
            names.insert(1, format!("{}{}", names[0], runner::CONTROL_SUFFIX));
        }
        if let (Some(t), Some(base)) = (&self.reference, self.variants.first()) {
            names.push(reference_arm_name(base, t));
        }
        names
    }

    /// Runs (warm-ups included) and boots the plan makes: every round
    /// boots each arm once and runs its warm-up and each condition.
    pub fn runs_and_boots(&self) -> (u64, u64) {
        let boots = u64::from(self.schedule.runs) * self.arm_names().len() as u64;
        (boots * (self.schedule.conditions.len() as u64 + 1), boots)
    }

    /// Fails when the plan cannot run: no variant, no run, no condition,
    /// or a workload whose places the topology (or the machine) lacks.
    pub fn check(&self) -> Result<()> {
        if self.variants.is_empty() {
            bail!("the lab has no variant to measure");
        }
        if self.schedule.runs < 1 || self.schedule.duration_seconds < 1 {
            bail!("--runs and --duration must be at least 1");
        }
        if self.schedule.conditions.is_empty() {
            bail!("the lab has nothing to measure in a session");
        }
        match &self.topology {
            Some(t) => {
                t.check()?;
                if let Some(r) = &self.reference {
                    r.check()?;
                    let endpoints: Vec<String> =
                        r.endpoints.iter().map(|e| e.name.clone()).collect();
                    let guests: Vec<String> = r.guests.iter().map(|g| g.name.clone()).collect();
                    check_places(
                        self.workload.as_ref(),
                        (&endpoints, &guests),
                        &format!("topology {}", r.name),
                    )?;
                }
                let endpoints: Vec<String> = t.endpoints.iter().map(|e| e.name.clone()).collect();
                let guests: Vec<String> = t.guests.iter().map(|g| g.name.clone()).collect();
                check_places(
                    self.workload.as_ref(),
                    (&endpoints, &guests),
                    &format!("topology {}", t.name),
                )
            }
            None => check_places(
                self.workload.as_ref(),
                (&self.places.0, &self.places.1),
                &self.machine,
            ),
        }
    }

    /// The plan as printed before anything runs: machine, network,
    /// workload, arms, one session, the number of runs.
    pub fn describe(&self) -> String {
        let mut out = format!("lab plan for {}:\n", self.target);
        out.push_str(&format!("  machine:  {}\n", self.machine));
        if let Some(t) = &self.topology {
            out.push_str(&format!("  topology: {} ({})\n", t.name, t.summary));
            for line in t.describe() {
                out.push_str(&format!("    {line}\n"));
            }
        }
        if let Some(r) = &self.reference {
            out.push_str(&format!(
                "  reference: {} ({}), booting the base's kernel\n",
                r.name, r.summary
            ));
        }
        out.push_str(&format!("  workload: {}\n", self.workload.describe()));
        let arms = self.arm_names();
        let twin = arms
            .iter()
            .map(|a| {
                if a.ends_with(runner::CONTROL_SUFFIX) {
                    format!("{a} (A/A control)")
                } else if self.reference.is_some() && Some(a) == arms.last() {
                    format!("{a} (reference)")
                } else {
                    a.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        out.push_str(&format!("  arms:     {twin}\n"));
        let s = &self.schedule;
        let conditions: Vec<String> = s.conditions.iter().map(|c| c.describe()).collect();
        out.push_str(&format!(
            "  session:  warm-up {} (discarded), then {}\n",
            s.warmup.describe(),
            conditions.join(", ")
        ));
        let per_session = s.conditions.len() as u64 + 1;
        let (runs, _) = self.runs_and_boots();
        let traffic = runs * u64::from(s.duration_seconds);
        out.push_str(&format!(
            "  runs:     {} round{} × {} arm{} × {per_session} runs of {} s = {runs} runs, {} of traffic\n",
            s.runs,
            if s.runs == 1 { "" } else { "s" },
            arms.len(),
            if arms.len() == 1 { "" } else { "s" },
            s.duration_seconds,
            humantime::format_duration(std::time::Duration::from_secs(traffic))
        ));
        out
    }
}

/// The reference arm's name: `<base>~<topology>` (`baseline~mesh-bridged`).
pub fn reference_arm_name(base: &str, topology: &Topology) -> String {
    format!("{base}~{}", topology.name)
}
