//! Taking over a lab whose runner was killed ([`super::Start::Resume`]).

use std::path::Path;

use anyhow::{bail, Result};

use super::plan::LabPlan;
use crate::lab::backend::Prepared;
use crate::results::lab::{LabRecord, Status};
use crate::util::text::printable;

/// The record of the lab in `dir` to continue, complete or not (a
/// complete one is kept as it is once [`check_machine`] agrees).
///
/// Errors: its target, arms or settings are not `plan`'s, complete or
/// not (the experiment or the command changed: start a new lab); its pid
/// still runs (naming it); an unreadable `lab.json`, or one the report's
/// checks refuse ([`crate::results::lab::check::check`]). Text from the
/// record is printed escaped ([`printable`]).
pub fn take_over(plan: &LabPlan, dir: &Path) -> Result<LabRecord> {
    let record = LabRecord::read(dir)?;
    let file = dir.join(crate::results::lab::FILE_NAME);
    // What the report would refuse to make a table of is not continued
    // either, and nothing of it reaches the terminal unescaped.
    crate::results::lab::check::check(&record).refuse(&record, &file)?;
    // The plan's own lab, complete or not: a complete lab of other
    // settings is not this command's answer either.
    let arms: Vec<String> = record.arms.iter().map(|a| a.name.clone()).collect();
    // How many labs ran at once may change between the runner and its
    // resumption (another -j, a target's lab already complete); the runs
    // kept were measured under the record's, so the larger one stays.
    let alone = |s: &crate::results::lab::Settings| crate::results::lab::Settings {
        labs_at_once: None,
        ..s.clone()
    };
    if record.target != plan.target
        || arms != plan.arm_names()
        || alone(&record.settings) != alone(&plan.settings)
    {
        bail!(
            "{} is a lab of {} with arms {arms:?} and other settings than this plan ({} with {:?}); \
             it cannot be continued: move it away to start the lab anew",
            file.display(),
            printable(&record.target),
            plan.target,
            plan.arm_names()
        );
    }
    match &record.status {
        // Kept once the backend is prepared and its machine is the
        // record's ([`check_machine`]).
        Status::Complete => return Ok(record),
        Status::Running { pid } if record.status.lab_alive() == Some(true) => bail!(
            "{} says pid {} still runs this lab; wait for it, or stop it first",
            file.display(),
            pid.unwrap_or_default()
        ),
        _ => {}
    }
    let pid = previous_runner(&record.status);
    let mut record = record;
    record.settings.labs_at_once = record.settings.labs_at_once.max(plan.settings.labs_at_once);
    let kept = record.runs.iter().filter(|r| !r.warmup).count();
    eprintln!(
        "lab: taking over {} from {pid}, which no longer runs: {kept} measured runs kept",
        file.display()
    );
    Ok(record)
}

/// Who ran a lab that is taken over, for the line that says so: `pid N`,
/// `an unknown pid`, `a run that failed (REASON)` (the reason escaped: it
/// is text from the file), or `a complete run`.
fn previous_runner(status: &Status) -> String {
    match status {
        Status::Running { pid } => pid.map_or("an unknown pid".to_string(), |p| format!("pid {p}")),
        Status::Failed { reason } => format!("a run that failed ({})", printable(reason)),
        Status::Complete => "a complete run".to_string(),
    }
}

/// Errors unless the taken-over `record` (in `dir`) was measured on the
/// machine `prepared` describes: the same lab kernels' target, QEMU
/// machine (CPUs, TCG threads or `-icount`, packet steering, the kernel
/// command line), cache model and arms (each kernel's image and config).
/// A lab measured on one machine is not continued on another.
pub fn check_machine(record: &LabRecord, prepared: &Prepared, dir: &Path) -> Result<()> {
    let differs = if record.lab_target != prepared.lab_target {
        Some("lab kernels (another target's)")
    } else if record.machine != prepared.machine {
        Some("machine (--cpus, --packet-steering, --nic, the target's [lab] table or the guest's initramfs)")
    } else if record.cache_model != prepared.cache_model {
        Some("cache model (--cache-model, or the target's [lab.l1]/[lab.timing])")
    } else if prepared.arms.iter().any(|a| !record.arms.contains(a)) {
        Some("arms' kernels (--openwrt, or a variant rebuilt since)")
    } else {
        None
    };
    if let Some(what) = differs {
        bail!(
            "{} was measured with another {what} than this command's; it cannot be continued with it: \
             run `cargo xtask lab` with the flags that started it, or move the directory away to start anew",
            dir.join(crate::results::lab::FILE_NAME).display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A status reason with escape sequences and a
    /// newline was printed raw ("taking over … from a run that failed").
    #[test]
    fn a_hostile_reason_is_printed_escaped() {
        let line = previous_runner(&Status::Failed {
            reason: "\u{1b}]0;owned\u{7}\u{1b}[2J\nlab: all runs complete".to_string(),
        });
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert!(
            line.contains("\\u{1b}[2J\\nlab: all runs complete"),
            "{line}"
        );
        assert_eq!(previous_runner(&Status::Running { pid: Some(7) }), "pid 7");
    }
}
