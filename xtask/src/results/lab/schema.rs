//! Reading `lab.json` of every schema this xtask knows into today's
//! [`LabRecord`]: [`SCHEMA`] 3 as written, schemas 1 and 2 upgraded.
//!
//! Schema 1 → 2 changed only the record's top level: `status` was a
//! string (`running`, `complete`, `failed: <reason>`) and is now a
//! [`Status`] with the running lab's pid; the machine was three optional
//! fields (`qemu` with `initramfs`, `router`, `host`) and is now one
//! [`MachineInfo`]; the QEMU lab records its `topology`. Settings, arms,
//! boots and runs kept their shape (GRO is still written `true`/`false`),
//! so a schema-1 file reads unchanged into the new types.

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::util::path::check_plain;

use super::{
    Arm, BootRecord, CacheModelInfo, HostInfo, Initramfs, LabRecord, MachineInfo, QemuInfo,
    RedoneRun, RouterInfo, RunRecord, Settings, Status, SCHEMA,
};

/// The oldest schema this xtask reads.
pub const OLDEST: u32 = 1;

/// Schema 2's fields, as written (see [`LabRecord`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Schema2 {
    /// 2 or 3, matched before this struct is read.
    #[allow(dead_code)]
    schema: u32,
    status: Status,
    target: String,
    lab_target: String,
    started: String,
    finished: Option<String>,
    settings: Settings,
    machine: MachineInfo,
    #[serde(default)]
    topology: Option<super::TopologyName>,
    #[serde(default)]
    cache_model: Option<CacheModelInfo>,
    arms: Vec<Arm>,
    boots: Vec<BootRecord>,
    runs: Vec<RunRecord>,
    #[serde(default)]
    redone: Vec<RedoneRun>,
}

/// Schema 1's fields.
#[derive(Deserialize)]
struct Schema1 {
    status: String,
    target: String,
    lab_target: String,
    started: String,
    finished: Option<String>,
    settings: Settings,
    #[serde(default)]
    qemu: Option<QemuInfo>,
    #[serde(default)]
    initramfs: Option<Initramfs>,
    #[serde(default)]
    router: Option<RouterInfo>,
    #[serde(default)]
    host: Option<HostInfo>,
    #[serde(default)]
    cache_model: Option<CacheModelInfo>,
    arms: Vec<Arm>,
    boots: Vec<BootRecord>,
    runs: Vec<RunRecord>,
}

/// A `lab.json` value of schema [`OLDEST`] to [`SCHEMA`] as today's
/// record. Errors name the schema, or the field that does not fit.
pub fn read(value: serde_json::Value) -> Result<LabRecord> {
    let schema = value
        .get("schema")
        .and_then(|s| s.as_u64())
        .context("no \"schema\" number: not a lab.json")?;
    let record = match schema {
        1 => {
            let v: Schema1 = serde_json::from_value(value).context("schema 1")?;
            LabRecord {
                schema: SCHEMA,
                status: Status::from_schema1(&v.status)?,
                target: v.target,
                lab_target: v.lab_target,
                started: v.started,
                finished: v.finished,
                settings: v.settings,
                machine: MachineInfo::from_schema1(v.qemu, v.initramfs, v.router, v.host)?,
                topology: None,
                cache_model: v.cache_model,
                arms: v.arms,
                boots: v.boots,
                runs: v.runs,
                redone: Vec::new(),
            }
        }
        // Schema 3 added fields that schema 2 files lack and read as
        // absent: the CPUs, TCG's accelerator and packet steering of the
        // QEMU machine, each boot's egress qdisc, the per-CPU counters.
        2 | 3 => {
            let v: Schema2 =
                serde_json::from_value(value).with_context(|| format!("schema {schema}"))?;
            LabRecord {
                schema: SCHEMA,
                status: v.status,
                target: v.target,
                lab_target: v.lab_target,
                started: v.started,
                finished: v.finished,
                settings: v.settings,
                machine: v.machine,
                topology: v.topology,
                cache_model: v.cache_model,
                arms: v.arms,
                boots: v.boots,
                runs: v.runs,
                redone: v.redone,
            }
        }
        n => bail!("lab.json schema {n}, but this xtask reads schemas {OLDEST} to {SCHEMA}"),
    };
    check_names(&record)?;
    check_machine(&record)?;
    Ok(record)
}

/// The QEMU machine's CPUs, steering and qdisc as the lab writes them:
/// 1 to [`MAX_SMP`] CPUs (a report lays out a family per CPU: an
/// `smp` of 4294967295 took all memory), the steering checked by
/// [`super::steering::Steering::check`], each boot's qdisc a plain name.
fn check_machine(record: &LabRecord) -> Result<()> {
    let Some(qemu) = record.machine.qemu() else {
        return Ok(());
    };
    if !(1..=MAX_SMP).contains(&qemu.smp) {
        bail!(
            "machine.qemu.smp is {}, but a lab machine has 1 to {MAX_SMP} CPUs: repair the field or run the lab again",
            qemu.smp
        );
    }
    if let Some(s) = &qemu.steering {
        s.check(qemu.smp)?;
    }
    for (i, boot) in record.boots.iter().enumerate() {
        if let Some(q) = &boot.qdisc {
            if q.is_empty()
                || q.len() > 32
                || !q.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                bail!(
                    "boots[{i}].qdisc is {:?}: not a qdisc's name",
                    crate::util::text::printable(q)
                );
            }
        }
    }
    Ok(())
}

/// The most CPUs a lab machine has, as `inputs::steering::MAX_CPUS`
/// (the lab refuses more).
pub const MAX_SMP: u32 = 4;

/// The names of a record that readers join to paths — `target`
/// (`target/xtask/lab/<target>/`), `lab_target` and each arm's `variant`
/// (`target/xtask/results/<lab_target>/<variant>/`, whose `result.json`
/// the report reads) — checked as a target file's name is
/// ([`check_plain`]): letters, digits, `.`, `_`, `-`, no `.` or `..`.
/// A `lab_target` of `../../x` made `size-report` read a `result.json`
/// outside `target/`.
fn check_names(record: &LabRecord) -> Result<()> {
    let named = |field: &str, value: &str, what: &str| {
        check_plain(field, value, "._-").map_err(|e| {
            anyhow::anyhow!(
                "{e:#}; the lab writes {what} names there: repair the field or run the lab again"
            )
        })
    };
    named("target", &record.target, "target")?;
    named("lab_target", &record.lab_target, "target")?;
    for (i, arm) in record.arms.iter().enumerate() {
        named(&format!("arms[{i}].variant"), &arm.variant, "variant")?;
    }
    Ok(())
}

impl TryFrom<serde_json::Value> for LabRecord {
    type Error = String;

    /// [`read`], for serde (`#[serde(try_from)]`): every reader of a
    /// `LabRecord` reads every schema.
    fn try_from(value: serde_json::Value) -> Result<LabRecord, String> {
        read(value).map_err(|e| format!("{e:#}"))
    }
}
