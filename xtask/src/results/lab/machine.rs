//! The machine a lab run measured, as one enum ([`MachineInfo`]): QEMU
//! with the guest's userspace, a real router over SSH, or this machine's
//! kernel. `lab.json` (schema 2 and later) writes it as `"machine": {"kind":
//! "qemu", "qemu": {…}, "initramfs": {…}}`; schema 1 had three optional
//! fields (`qemu` with `initramfs`, `router`, `host`), read into it by
//! [`MachineInfo::from_schema1`].

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use super::guest::Initramfs;
use super::host::HostInfo;
use super::router::RouterInfo;

/// The emulator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QemuInfo {
    /// The binary, e.g. `qemu-system-mipsel`.
    pub binary: String,
    /// First line of `--version`.
    pub version: String,
    /// `-M`.
    pub machine: String,
    /// `-cpu`.
    pub cpu: String,
    /// `-smp`: the machine's CPUs.
    pub smp: u32,
    /// `-icount` value; empty on a machine of more than one CPU, which
    /// runs on the host's clock (`accel`).
    pub icount: String,
    /// `-accel` value when not under `-icount` (`tcg,thread=multi`);
    /// absent in files before schema 3 (every one ran under `-icount`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accel: Option<String>,
    /// The packet steering the measured router ran with (schema 3); absent
    /// in older files: one CPU, nothing steered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steering: Option<Box<super::steering::Steering>>,
    /// The kernel command line.
    pub append: String,
}

/// What ran the arms' kernels (or settings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum MachineInfo {
    /// The QEMU lab: each arm's lab kernel booted in the emulator.
    Qemu {
        /// The emulator.
        qemu: QemuInfo,
        /// The guest's userspace.
        initramfs: Initramfs,
    },
    /// A real router over SSH (`--lab ssh://…`), flashed with each arm's
    /// image or not.
    Router {
        /// Where it was and what was read and switched on it.
        router: RouterInfo,
    },
    /// This machine's kernel with runtime settings (`--lab host`).
    Host {
        /// The kernel and the tools.
        host: HostInfo,
    },
}

impl MachineInfo {
    /// The emulator, in the QEMU lab.
    pub fn qemu(&self) -> Option<&QemuInfo> {
        match self {
            MachineInfo::Qemu { qemu, .. } => Some(qemu),
            _ => None,
        }
    }

    /// The real router, in the SSH lab.
    pub fn router(&self) -> Option<&RouterInfo> {
        match self {
            MachineInfo::Router { router } => Some(router),
            _ => None,
        }
    }

    /// This machine, in the host lab.
    pub fn host(&self) -> Option<&HostInfo> {
        match self {
            MachineInfo::Host { host } => Some(host),
            _ => None,
        }
    }

    /// Schema 1's three optional fields as one machine: a router over SSH
    /// when `router` is there (it never had `qemu`), QEMU when `qemu` and
    /// `initramfs` are, the host when `host` is. Anything else is not a
    /// lab record.
    pub fn from_schema1(
        qemu: Option<QemuInfo>,
        initramfs: Option<Initramfs>,
        router: Option<RouterInfo>,
        host: Option<HostInfo>,
    ) -> Result<MachineInfo> {
        let present: Vec<&str> = [
            ("qemu", qemu.is_some()),
            ("initramfs", initramfs.is_some()),
            ("router", router.is_some()),
            ("host", host.is_some()),
        ]
        .iter()
        .filter(|(_, there)| *there)
        .map(|(name, _)| *name)
        .collect();
        Ok(match (qemu, initramfs, router, host) {
            (None, None, Some(router), None) => MachineInfo::Router { router },
            (Some(qemu), Some(initramfs), None, None) => MachineInfo::Qemu { qemu, initramfs },
            (None, None, None, Some(host)) => MachineInfo::Host { host },
            _ => bail!(
                "schema 1 records one machine (qemu with initramfs, router or host); this record has {}",
                if present.is_empty() {
                    "none".to_string()
                } else {
                    present.join(", ")
                }
            ),
        })
    }
}
