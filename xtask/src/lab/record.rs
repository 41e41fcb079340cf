//! `lab.json`: every run of one `cargo xtask lab` invocation, raw. The
//! schema lives in [`crate::results::lab`], where the size report reads it
//! too; this module re-exports it for the lab's own code.

pub use crate::results::lab::{
    Arm, BootRecord, Condition, Direction, Gro, LabRecord, MachineInfo, Metric, MetricValue,
    QemuInfo, RedoneRun, RunRecord, Settings, Status, FILE_NAME, SCHEMA,
};
