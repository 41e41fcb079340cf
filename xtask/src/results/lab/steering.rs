//! Packet steering and the egress qdisc as a QEMU lab applied them
//! (`lab.json` schema 3: `machine.qemu.steering`, each boot's `qdisc`):
//! per NIC of the measured router, the `rps_cpus` and `xps_cpus` masks
//! written, the CPU its interrupts were sent to and whether its NAPI poll
//! ran in a pinned kernel thread. Files of schema 2 have none: one CPU,
//! nothing steered.

use serde::{Deserialize, Serialize};

/// One NIC's steering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicSteering {
    /// The interface in the guest (`lan`).
    pub nic: String,
    /// `queues/rx-0/rps_cpus` as written (hexadecimal bitmap; `0`: no RPS).
    pub rps_cpus: String,
    /// `queues/tx-0/xps_cpus` as written; `None`: not written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xps_cpus: Option<String>,
    /// The CPU its interrupts went to (`/proc/irq/N/smp_affinity`);
    /// `None`: left where the kernel put them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_cpu: Option<u32>,
    /// Whether its NAPI poll ran in a kernel thread (`threaded`).
    #[serde(default)]
    pub threaded_napi: bool,
    /// The CPU that thread was pinned to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub napi_cpu: Option<u32>,
}

/// The lab's packet steering, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Steering {
    /// As asked: `openwrt`, `off` or the explicit form
    /// (`rps_cpus=2,irq_cpu=0`).
    pub asked: String,
    /// Where it was asked (`targets/bcm53xx.toml [lab]`,
    /// `--packet-steering`, an experiment file).
    pub from: String,
    /// What `openwrt` resolved to, or why nothing is steered; empty for
    /// the explicit form.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resolved: String,
    /// Per NIC of the measured router.
    pub nics: Vec<NicSteering>,
}

impl Steering {
    /// What is wrong with a recorded steering of a machine of `smp` CPUs,
    /// if anything: the lab writes each mask as lowercase hex of at most
    /// `smp` bits, CPUs below `smp`, plain NIC names, and no control
    /// character in its texts (a newline there would start a line of its
    /// own in every report). Errors name the field.
    pub fn check(&self, smp: u32) -> anyhow::Result<()> {
        use anyhow::bail;
        for (field, text) in [
            ("asked", &self.asked),
            ("from", &self.from),
            ("resolved", &self.resolved),
        ] {
            if text.chars().any(char::is_control) || text.len() > 4096 {
                bail!("machine.qemu.steering.{field} holds control characters or is over 4 KiB: not what the lab writes");
            }
        }
        if self.nics.len() > 16 {
            bail!(
                "machine.qemu.steering.nics lists {} NICs; a lab router has at most 16",
                self.nics.len()
            );
        }
        let mask_ok = |m: &str| {
            crate::util::cpu_mask::parse_hex(m).is_some_and(|v| u64::from(v) < 1u64 << smp)
        };
        for (i, n) in self.nics.iter().enumerate() {
            let at = format!("machine.qemu.steering.nics[{i}]");
            if n.nic.is_empty()
                || n.nic.len() > 15
                || !n
                    .nic
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
            {
                bail!("{at}.nic is not an interface name");
            }
            for (key, mask) in [
                ("rps_cpus", Some(&n.rps_cpus)),
                ("xps_cpus", n.xps_cpus.as_ref()),
            ] {
                if let Some(m) = mask {
                    if !mask_ok(m) {
                        bail!("{at}.{key} is {:?}: not a hexadecimal mask of the machine's {smp} CPU(s)", crate::util::text::printable(m));
                    }
                }
            }
            for (key, cpu) in [("irq_cpu", n.irq_cpu), ("napi_cpu", n.napi_cpu)] {
                if let Some(c) = cpu.filter(|c| *c >= smp) {
                    bail!("{at}.{key} is CPU{c}, but the machine had {smp} CPU(s)");
                }
            }
        }
        Ok(())
    }

    /// Whether anything moves off the defaults (a non-zero mask, an
    /// interrupt affinity, a NAPI thread).
    pub fn is_on(&self) -> bool {
        self.nics.iter().any(|n| {
            !n.rps_cpus.trim_start_matches('0').is_empty()
                || n.xps_cpus.is_some()
                || n.irq_cpu.is_some()
                || n.threaded_napi
        })
    }

    /// One line: `lan rps 2, wan rps 0` with threads and interrupts.
    pub fn describe(&self) -> String {
        if !self.is_on() {
            return "off".to_string();
        }
        self.nics
            .iter()
            .map(|n| {
                let mut s = format!("{} rps {}", n.nic, n.rps_cpus);
                if let Some(x) = &n.xps_cpus {
                    s.push_str(&format!(" xps {x}"));
                }
                if let Some(c) = n.irq_cpu {
                    s.push_str(&format!(" irq CPU{c}"));
                }
                if n.threaded_napi {
                    match n.napi_cpu {
                        Some(c) => s.push_str(&format!(" NAPI thread on CPU{c}")),
                        None => s.push_str(" NAPI thread"),
                    }
                }
                s
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}
