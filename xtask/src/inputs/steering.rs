//! Packet steering as the lab is asked for it: `[lab] packet_steering` in
//! a target file, `--packet-steering` of `cargo xtask lab`, `[lab]
//! packet_steering` of an experiment file. Where the NICs' receive
//! processing runs on a router with more than one CPU (`[lab] cpus`):
//!
//! ```toml
//! packet_steering = "openwrt"      # what OpenWrt does on this router
//! packet_steering = "off"          # no RPS; interrupts where the kernel puts them
//! packet_steering = { rps_cpus = "2", xps_cpus = "3", irq_cpu = 0 }
//! packet_steering = { rps_cpus = { lan = "2", wan = "0" } }
//! packet_steering = { rps_cpus = "2", threaded_napi = true, napi_cpu = 0 }
//! ```
//!
//! The explicit form's masks are what Linux's
//! `/sys/class/net/<dev>/queues/rx-0/rps_cpus` and `tx-0/xps_cpus` take
//! (Documentation/networking/scaling.rst: a hexadecimal bitmap of CPUs,
//! `2` = CPU1); `irq_cpu` sets the NICs' interrupt affinity
//! (`/proc/irq/N/smp_affinity`); `threaded_napi` runs each NIC's NAPI poll
//! in a kernel thread (`/sys/class/net/<dev>/threaded`), pinned to
//! `napi_cpu`, as OpenWrt's netifd does for drivers with NAPI threads.
//! `"openwrt"` is resolved per target by the lab
//! ([`crate::inputs::openwrt::steering`]).

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// The most CPUs a lab machine has (`[lab] cpus`, `--cpus`): the MT7621's
/// two cores with two VPEs each.
pub const MAX_CPUS: u32 = 4;

/// A set of CPUs as Linux's `rps_cpus` writes it: a hexadecimal bitmap
/// (bit N = CPU N), at most [`MAX_CPUS`] bits here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct CpuMask(pub u32);

impl CpuMask {
    /// Parses `2`, `0x3` or `f` (hexadecimal, as `rps_cpus` takes it:
    /// [`crate::util::cpu_mask::parse_hex`], which refuses `0x0x2` and
    /// `+2`); `what` names the key in errors.
    pub fn parse(text: &str, what: &str) -> Result<CpuMask> {
        let value = crate::util::cpu_mask::parse_hex(text).with_context(|| {
            format!(
                "{what} = {text:?}: write a hexadecimal CPU bitmap as rps_cpus takes it, \
                     e.g. \"2\" for CPU1, \"3\" for CPU0 and CPU1"
            )
        })?;
        if value >> MAX_CPUS != 0 {
            bail!("{what} = {text:?} names a CPU above {}", MAX_CPUS - 1);
        }
        Ok(CpuMask(value))
    }

    /// The mask of one CPU.
    pub fn cpu(cpu: u32) -> CpuMask {
        CpuMask(1 << cpu)
    }

    /// As `rps_cpus` prints it: lowercase hexadecimal, no `0x` (`2`).
    pub fn hex(self) -> String {
        format!("{:x}", self.0)
    }

    /// The CPUs in it, lowest first.
    pub fn cpus(self) -> Vec<u32> {
        (0..MAX_CPUS).filter(|c| self.0 >> c & 1 == 1).collect()
    }

    /// Errors when it names a CPU the machine (`cpus` CPUs) has not.
    pub fn check_within(self, cpus: u32, what: &str) -> Result<()> {
        if self.0 >> cpus != 0 {
            bail!(
                "{what} = \"{}\" names CPU {}, but the lab machine has {cpus} CPU(s) (CPU0 to CPU{})",
                self.hex(),
                self.cpus().last().copied().unwrap_or_default(),
                cpus.saturating_sub(1)
            );
        }
        Ok(())
    }
}

/// A value for every NIC, or per NIC by name (`lan`, `wan`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PerNic<T> {
    /// The same for every NIC of the measured router.
    All(T),
    /// Per NIC; a NIC not named gets none.
    Each(BTreeMap<String, T>),
}

impl<T: Copy> PerNic<T> {
    /// The value for NIC `nic`.
    pub fn get(&self, nic: &str) -> Option<T> {
        match self {
            PerNic::All(v) => Some(*v),
            PerNic::Each(map) => map.get(nic).copied(),
        }
    }

    /// The NIC names it names (none for [`PerNic::All`]).
    pub fn names(&self) -> Vec<&str> {
        match self {
            PerNic::All(_) => Vec::new(),
            PerNic::Each(map) => map.keys().map(String::as_str).collect(),
        }
    }
}

/// The explicit form: masks, the interrupts' CPU, NAPI threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplicitSteering {
    /// `rps_cpus` of each NIC's receive queue.
    pub rps_cpus: PerNic<CpuMask>,
    /// `xps_cpus` of each NIC's transmit queue; `None`: left as the kernel
    /// sets it (no XPS map).
    pub xps_cpus: Option<PerNic<CpuMask>>,
    /// The CPU the NICs' interrupts go to; `None`: left where the kernel
    /// puts them.
    pub irq_cpu: Option<u32>,
    /// Each NIC's NAPI poll in a kernel thread (`napi/<dev>-<id>`).
    pub threaded_napi: bool,
    /// The CPU the NAPI threads are pinned to (with `threaded_napi`).
    pub napi_cpu: Option<u32>,
}

/// `packet_steering` as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SteeringSpec {
    /// What OpenWrt does on the router: its platform script or netifd's
    /// packet steering, read from the OpenWrt checkout in OpenWrt mode.
    Openwrt,
    /// No steering: RPS and XPS maps empty, NAPI in softirq, interrupts
    /// where the kernel puts them.
    Off,
    /// As written.
    Explicit(ExplicitSteering),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawPerNic {
    All(String),
    Each(BTreeMap<String, String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExplicit {
    rps_cpus: RawPerNic,
    #[serde(default)]
    xps_cpus: Option<RawPerNic>,
    #[serde(default)]
    irq_cpu: Option<u32>,
    #[serde(default)]
    threaded_napi: bool,
    #[serde(default)]
    napi_cpu: Option<u32>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawSpec {
    Word(String),
    Table(RawExplicit),
}

fn per_nic(raw: RawPerNic, what: &str) -> Result<PerNic<CpuMask>> {
    Ok(match raw {
        RawPerNic::All(text) => PerNic::All(CpuMask::parse(&text, what)?),
        RawPerNic::Each(map) => PerNic::Each(
            map.into_iter()
                .map(|(nic, text)| {
                    crate::util::path::check_plain(&format!("{what} NIC"), &nic, "-_")?;
                    let mask = CpuMask::parse(&text, &format!("{what}.{nic}"))?;
                    Ok((nic, mask))
                })
                .collect::<Result<_>>()?,
        ),
    })
}

impl<'de> Deserialize<'de> for SteeringSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawSpec::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "packet_steering takes \"openwrt\", \"off\" or a table such as \
                 { rps_cpus = \"2\", xps_cpus = \"3\", irq_cpu = 0 }",
            )
        })?;
        SteeringSpec::from_raw(raw).map_err(|e| serde::de::Error::custom(format!("{e:#}")))
    }
}

impl SteeringSpec {
    fn from_raw(raw: RawSpec) -> Result<SteeringSpec> {
        match raw {
            RawSpec::Word(w) => SteeringSpec::word(&w),
            RawSpec::Table(t) => {
                for (key, cpu) in [("irq_cpu", t.irq_cpu), ("napi_cpu", t.napi_cpu)] {
                    if cpu.is_some_and(|c| c >= MAX_CPUS) {
                        bail!(
                            "packet_steering {key} = {}: CPU0 to CPU{}",
                            cpu.unwrap_or_default(),
                            MAX_CPUS - 1
                        );
                    }
                }
                if t.napi_cpu.is_some() && !t.threaded_napi {
                    bail!("packet_steering napi_cpu pins the NAPI threads: it needs threaded_napi = true");
                }
                Ok(SteeringSpec::Explicit(ExplicitSteering {
                    rps_cpus: per_nic(t.rps_cpus, "packet_steering rps_cpus")?,
                    xps_cpus: t
                        .xps_cpus
                        .map(|x| per_nic(x, "packet_steering xps_cpus"))
                        .transpose()?,
                    irq_cpu: t.irq_cpu,
                    threaded_napi: t.threaded_napi,
                    napi_cpu: t.napi_cpu,
                }))
            }
        }
    }

    fn word(w: &str) -> Result<SteeringSpec> {
        match w {
            "openwrt" => Ok(SteeringSpec::Openwrt),
            "off" => Ok(SteeringSpec::Off),
            other => bail!(
                "packet_steering = {other:?}: \"openwrt\", \"off\", or a table such as \
                 {{ rps_cpus = \"2\", irq_cpu = 0 }}"
            ),
        }
    }

    /// Parses `--packet-steering`: `openwrt`, `off`, or the explicit form's
    /// keys as `key=value` pairs separated by commas
    /// (`rps_cpus=2,xps_cpus=3,irq_cpu=0,threaded_napi=on,napi_cpu=0`), the
    /// masks for every NIC.
    /// Errors are one line (the command line parser prints only an error's outermost
    /// message), control characters escaped.
    pub fn parse_flag(text: &str) -> Result<SteeringSpec> {
        Self::parse_flag_text(text).map_err(|e| {
            anyhow::anyhow!(
                "{}",
                crate::util::text::printable(&format!("{e:#}").replace('\n', " "))
            )
        })
    }

    fn parse_flag_text(text: &str) -> Result<SteeringSpec> {
        if !text.contains('=') {
            return SteeringSpec::word(text).map_err(|e| {
                anyhow::anyhow!("--packet-steering: {e:#}; or rps_cpus=2[,xps_cpus=3][,irq_cpu=0][,threaded_napi=on][,napi_cpu=0]")
            });
        }
        let mut table = toml_edit::DocumentMut::new();
        for pair in text.split(',') {
            let (key, value) = pair
                .split_once('=')
                .with_context(|| format!("--packet-steering: {pair:?} is not key=value"))?;
            let item = match key {
                "rps_cpus" | "xps_cpus" => toml_edit::value(value),
                "irq_cpu" | "napi_cpu" => {
                    // Digits only: `parse` would take `+1`.
                    let cpu = Some(value)
                        .filter(|v| !v.is_empty() && v.len() <= 2 && v.bytes().all(|b| b.is_ascii_digit()))
                        .and_then(|v| v.parse::<u32>().ok())
                        .with_context(|| format!("--packet-steering {key}={value}: a CPU number (0 to {})", MAX_CPUS - 1))?;
                    toml_edit::value(i64::from(cpu))
                }
                "threaded_napi" => toml_edit::value(match value {
                    "on" | "true" => true,
                    "off" | "false" => false,
                    _ => bail!("--packet-steering threaded_napi={value}: on or off"),
                }),
                other => bail!(
                    "--packet-steering: no key {other:?} (rps_cpus, xps_cpus, irq_cpu, threaded_napi, napi_cpu)"
                ),
            };
            if table.contains_key(key) {
                bail!("--packet-steering: {key} given twice");
            }
            table[key] = item;
        }
        let raw: RawExplicit = toml_edit::de::from_str(&table.to_string())
            .map_err(|e| anyhow::anyhow!("--packet-steering {text}: {e}"))?;
        SteeringSpec::from_raw(RawSpec::Table(raw)).context("--packet-steering")
    }

    /// One line for the lab's plan: `openwrt`, `off`, or the table.
    pub fn describe(&self) -> String {
        match self {
            SteeringSpec::Openwrt => "openwrt".to_string(),
            SteeringSpec::Off => "off".to_string(),
            SteeringSpec::Explicit(e) => {
                let masks = |p: &PerNic<CpuMask>| match p {
                    PerNic::All(m) => m.hex(),
                    PerNic::Each(map) => map
                        .iter()
                        .map(|(n, m)| format!("{n}:{}", m.hex()))
                        .collect::<Vec<_>>()
                        .join("/"),
                };
                let mut s = format!("rps_cpus={}", masks(&e.rps_cpus));
                if let Some(x) = &e.xps_cpus {
                    s.push_str(&format!(",xps_cpus={}", masks(x)));
                }
                if let Some(c) = e.irq_cpu {
                    s.push_str(&format!(",irq_cpu={c}"));
                }
                if e.threaded_napi {
                    s.push_str(",threaded_napi=on");
                }
                if let Some(c) = e.napi_cpu {
                    s.push_str(&format!(",napi_cpu={c}"));
                }
                s
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_toml(text: &str) -> Result<SteeringSpec> {
        #[derive(Deserialize)]
        struct T {
            packet_steering: SteeringSpec,
        }
        Ok(toml_edit::de::from_str::<T>(text)?.packet_steering)
    }

    #[test]
    fn the_three_forms_parse_and_bad_masks_are_refused() {
        assert_eq!(
            from_toml("packet_steering = \"openwrt\"").unwrap(),
            SteeringSpec::Openwrt
        );
        assert_eq!(
            from_toml("packet_steering = \"off\"").unwrap(),
            SteeringSpec::Off
        );
        let e =
            from_toml("packet_steering = { rps_cpus = { lan = \"2\", wan = \"0\" }, irq_cpu = 0 }")
                .unwrap();
        let SteeringSpec::Explicit(e) = e else {
            panic!("{e:?}")
        };
        assert_eq!(e.rps_cpus.get("lan"), Some(CpuMask(2)));
        assert_eq!(e.rps_cpus.get("wan"), Some(CpuMask(0)));
        assert_eq!(e.rps_cpus.get("dmz"), None);
        assert_eq!(e.irq_cpu, Some(0));
        for bad in [
            "packet_steering = \"on\"",
            "packet_steering = { rps_cpus = \"x\" }",
            "packet_steering = { rps_cpus = \"10\" }",
            "packet_steering = { rps_cpus = \"2\", napi_cpu = 0 }",
            "packet_steering = { rps_cpus = \"2\", irq_cpu = 9 }",
            "packet_steering = { rps_cpus = \"2\", rfs = 1 }",
        ] {
            assert!(from_toml(bad).is_err(), "{bad}");
        }
        let err = format!(
            "{:#}",
            from_toml("packet_steering = { rps_cpus = \"10\" }").unwrap_err()
        );
        assert!(err.contains("names a CPU above 3"), "{err}");
    }

    #[test]
    fn the_flag_takes_the_same_keys() {
        let spec = SteeringSpec::parse_flag("rps_cpus=2,threaded_napi=on,napi_cpu=0").unwrap();
        assert_eq!(spec.describe(), "rps_cpus=2,threaded_napi=on,napi_cpu=0");
        assert_eq!(SteeringSpec::parse_flag("off").unwrap(), SteeringSpec::Off);
        for bad in ["sometimes", "rps_cpus", "rps_cpus=2,rfs=1", "irq_cpu=x"] {
            assert!(SteeringSpec::parse_flag(bad).is_err(), "{bad}");
        }
        // Accepted here once, though lab.json's check refuses them: the
        // two must agree.
        for bad in [
            "rps_cpus=0x0x2",
            "rps_cpus=0x0x0x1",
            "rps_cpus=+2",
            "rps_cpus= 2",
        ] {
            let err = format!("{:#}", SteeringSpec::parse_flag(bad).unwrap_err());
            assert!(err.contains("hexadecimal CPU bitmap"), "{bad}: {err}");
        }
        assert!(from_toml("packet_steering = { rps_cpus = \"0x0x2\" }").is_err());
        assert!(from_toml("packet_steering = { rps_cpus = \" 2 \" }").is_err());
        for bad in [
            "rps_cpus=2,irq_cpu=+1",
            "rps_cpus=2,irq_cpu=01x",
            "rps_cpus=2,napi_cpu=-0",
        ] {
            let err = format!("{:#}", SteeringSpec::parse_flag(bad).unwrap_err());
            assert!(err.contains("a CPU number"), "{bad}: {err}");
        }
        assert_eq!(
            SteeringSpec::parse_flag("rps_cpus=0x2").unwrap().describe(),
            "rps_cpus=2"
        );
        // The reason is in the outermost message (the command line parser prints only that),
        // on one line, control characters escaped.
        let shown = |text: &str| SteeringSpec::parse_flag(text).unwrap_err().to_string();
        let err = shown("rps_cpus=10");
        assert!(
            err.contains("rps_cpus") && err.len() > "--packet-steering".len() + 10,
            "{err}"
        );
        let err = shown("rps_cpus=2,irq_cpu=\u{1b}]0;pwned\u{7}");
        assert!(!err.contains('\u{1b}') && !err.contains('\n'), "{err:?}");
        assert!(shown("rps_cpus=2,rps_cpus=3").contains("given twice"));
        assert!(CpuMask(2).check_within(2, "rps_cpus").is_ok());
        let err = CpuMask(4)
            .check_within(2, "rps_cpus")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("names CPU 2") && err.contains("CPU0 to CPU1"),
            "{err}"
        );
    }
}
