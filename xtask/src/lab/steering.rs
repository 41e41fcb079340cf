//! Packet steering in the QEMU lab's measured router: [`resolve`] turns
//! `packet_steering` (target file, `--packet-steering`, experiment file)
//! into masks per NIC ([`Steering`]), and [`script`] is the guest's shell
//! that applies them after its network is up, reading each value back.
//!
//! On a lab machine of one CPU nothing is steered: `openwrt` resolves to
//! off (OpenWrt's scripts exit on one CPU), and an explicit mask may name
//! CPU0 only.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::topology::Topology;
use crate::inputs::lab::LabSpec;
use crate::inputs::openwrt::steering::{self as openwrt_steering, OpenwrtSteering};
use crate::inputs::openwrt::{Checkout, OpenwrtTarget};
use crate::inputs::steering::{CpuMask, PerNic, SteeringSpec};
use crate::inputs::targets::Target;
use crate::results::lab::steering::{NicSteering, Steering};

/// Resolves the steering of `target`'s lab on `spec`'s machine (its
/// `cpus` already the lab's) and sets it on `topology`'s measured guest:
/// `asked` (with where it was asked) or else the target file's `[lab]
/// packet_steering`, off when neither says. `openwrt` is OpenWrt mode's
/// checkout, read for `"openwrt"`; without one the built-in reading of the
/// repository's OpenWrt snapshot is used
/// ([`openwrt_steering::builtin`]). Returns the steering.
pub fn attach(
    target: &Target,
    spec: &LabSpec,
    asked: Option<&(SteeringSpec, String)>,
    openwrt: Option<&Path>,
    topology: &mut Topology,
) -> Result<Steering> {
    let from_file = format!(
        "targets/{} [lab] packet_steering",
        target
            .file
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
    );
    let (spec_asked, from) = match (asked, &spec.packet_steering) {
        (Some((s, from)), _) => (s.clone(), from.clone()),
        (None, Some(s)) => (s.clone(), from_file),
        (None, None) => (SteeringSpec::Off, "default".to_string()),
    };
    let rule = if spec_asked == SteeringSpec::Openwrt {
        match openwrt {
            Some(root) => {
                let checkout = Checkout::open(root)?;
                let router = OpenwrtTarget::resolve(&checkout, &target.openwrt)?;
                Some(openwrt_steering::read(&checkout, &router, &target.kernel)?)
            }
            None => openwrt_steering::builtin(&target.openwrt),
        }
    } else {
        None
    };
    let measured = topology.measured.clone();
    let guest = topology
        .guests
        .iter_mut()
        .find(|g| g.name == measured)
        .context("the topology's measured guest is not one of its guests")?;
    let nics: Vec<String> = guest.nics.iter().map(|n| n.name.clone()).collect();
    let steering = resolve(&spec_asked, &from, spec.cpus, &nics, rule.as_ref())?;
    guest.steering = Some(steering.clone());
    Ok(steering)
}

/// Path of the steering script in the guest's overlay, which `/init`
/// runs after the network setup.
pub const STEERING: &str = "/etc/xl-steering.sh";

/// The steering of a router with `nics` (the measured guest's, LAN first,
/// WAN second) on `cpus` CPUs, as `spec` from `from` asks; `openwrt` is
/// what OpenWrt does on the target (from its checkout, or built in), needed
/// for [`SteeringSpec::Openwrt`].
///
/// Errors: a mask or CPU beyond the machine's, a NIC name the router has
/// not, `openwrt` on a target OpenWrt's rules do not cover.
pub fn resolve(
    spec: &SteeringSpec,
    from: &str,
    cpus: u32,
    nics: &[String],
    openwrt: Option<&OpenwrtSteering>,
) -> Result<Steering> {
    let off = |nic: &String| NicSteering {
        nic: nic.clone(),
        rps_cpus: "0".to_string(),
        xps_cpus: None,
        irq_cpu: None,
        threaded_napi: false,
        napi_cpu: None,
    };
    let mut resolved = String::new();
    let per_nic: Vec<NicSteering> = match spec {
        SteeringSpec::Off => nics.iter().map(off).collect(),
        SteeringSpec::Openwrt => {
            let Some(rule) = openwrt else {
                bail!(
                    "{from}: packet_steering = \"openwrt\", but the workbench knows OpenWrt's packet \
                     steering for this target from no checkout: run it in OpenWrt mode (--openwrt PATH) \
                     or write the masks (packet_steering = {{ rps_cpus = \"2\" }})"
                );
            };
            if cpus < 2 {
                resolved = format!(
                    "one CPU: OpenWrt's packet steering changes nothing (OpenWrt: {})",
                    rule.describe()
                );
                nics.iter().map(off).collect()
            } else {
                resolved = rule.describe();
                match rule {
                    OpenwrtSteering::Off { .. } => nics.iter().map(off).collect(),
                    OpenwrtSteering::Platform {
                        lan_rps, wan_rps, ..
                    } => {
                        for m in [lan_rps, wan_rps] {
                            m.check_within(cpus, &format!("{from}: OpenWrt's rps_cpus"))?;
                        }
                        nics.iter()
                            .enumerate()
                            .map(|(i, n)| NicSteering {
                                rps_cpus: if i == 0 { lan_rps } else { wan_rps }.hex(),
                                ..off(n)
                            })
                            .collect()
                    }
                    OpenwrtSteering::Netifd { threaded_napi, .. } => {
                        // packet-steering.uc: the NAPI thread on the least
                        // loaded CPU (all idle: CPU0), RPS on the least
                        // loaded other one (CPU1); without a thread the
                        // RPS CPU is the least loaded, CPU0.
                        let threaded = threaded_napi.is_some();
                        let rps = CpuMask::cpu(u32::from(threaded));
                        nics.iter()
                            .map(|n| NicSteering {
                                rps_cpus: rps.hex(),
                                threaded_napi: threaded,
                                napi_cpu: threaded.then_some(0),
                                ..off(n)
                            })
                            .collect()
                    }
                }
            }
        }
        SteeringSpec::Explicit(e) => {
            let known = |p: &PerNic<CpuMask>, key: &str| -> Result<()> {
                for name in p.names() {
                    if !nics.iter().any(|n| n == name) {
                        bail!(
                            "{from}: packet_steering {key} names NIC {name:?}; the measured router has {}",
                            nics.join(", ")
                        );
                    }
                }
                Ok(())
            };
            known(&e.rps_cpus, "rps_cpus")?;
            if let Some(x) = &e.xps_cpus {
                known(x, "xps_cpus")?;
            }
            for (key, cpu) in [("irq_cpu", e.irq_cpu), ("napi_cpu", e.napi_cpu)] {
                if let Some(c) = cpu.filter(|c| *c >= cpus) {
                    anyhow::bail!(
                        "{from}: packet_steering {key} = {c} names CPU {c}, but the lab machine \
                         has {cpus} CPU(s) (CPU0 to CPU{})",
                        cpus.saturating_sub(1)
                    );
                }
            }
            nics.iter()
                .map(|n| {
                    let rps = e.rps_cpus.get(n).unwrap_or(CpuMask(0));
                    rps.check_within(cpus, &format!("{from}: packet_steering rps_cpus"))?;
                    let xps = e.xps_cpus.as_ref().and_then(|x| x.get(n));
                    if let Some(x) = xps {
                        x.check_within(cpus, &format!("{from}: packet_steering xps_cpus"))?;
                    }
                    Ok(NicSteering {
                        rps_cpus: rps.hex(),
                        xps_cpus: xps.map(CpuMask::hex),
                        irq_cpu: e.irq_cpu,
                        threaded_napi: e.threaded_napi,
                        napi_cpu: e.napi_cpu,
                        ..off(n)
                    })
                })
                .collect::<Result<_>>()?
        }
    };
    Ok(Steering {
        asked: spec.describe(),
        from: from.to_string(),
        resolved,
        nics: per_nic,
    })
}

/// The guest's steering script ([`STEERING`]), run by `/init` after the
/// network setup and the list of NIC devices (`/run/xl-nic-irqs`): per NIC,
/// NAPI threading, `rps_cpus`, `xps_cpus`, the interrupts' affinity and
/// the NAPI threads' CPU, each read back and `fail`ed (the boot then fails,
/// naming it) when the kernel did not take it. Empty when nothing is
/// steered.
pub fn script(steering: &Steering) -> String {
    if !steering.is_on() {
        return String::new();
    }
    let mut s = format!(
        "# Packet steering, generated by xtask: {}\n\
         xl_set() {{ echo \"$2\" > \"$1\" || fail \"writing $2 to $1\"; }}\n",
        steering.describe()
    );
    for n in &steering.nics {
        let dev = format!("/sys/class/net/{}", n.nic);
        if n.threaded_napi {
            let _ = writeln!(s, "xl_set {dev}/threaded 1");
        }
        let _ = writeln!(s, "xl_set {dev}/queues/rx-0/rps_cpus {}", n.rps_cpus);
        let _ = writeln!(
            s,
            "[ \"$(cat {dev}/queues/rx-0/rps_cpus | tr -d ',' | sed 's/^0*//')\" = \"$(echo {} | sed 's/^0*//')\" ] || fail \"rps_cpus of {} reads $(cat {dev}/queues/rx-0/rps_cpus)\"",
            n.rps_cpus, n.nic
        );
        if let Some(x) = &n.xps_cpus {
            let _ = writeln!(s, "xl_set {dev}/queues/tx-0/xps_cpus {x}");
        }
        if let Some(cpu) = n.irq_cpu {
            let mask = CpuMask::cpu(cpu).hex();
            // The NIC's interrupt lines: named after the interface or its
            // device (virtio0), as /init listed them.
            let _ = writeln!(
                s,
                "irqs=$(awk -v n={nic} 'FILENAME==\"/run/xl-nic-irqs\"{{if($1==n)d=$2;next}}$NF==n||(d!=\"\"&&$NF==d){{sub(\":\",\"\",$1);print $1}}' /run/xl-nic-irqs /proc/interrupts)\n\
                 [ -n \"$irqs\" ] || fail \"no interrupt line of {nic} in /proc/interrupts\"\n\
                 for i in $irqs; do xl_set /proc/irq/$i/smp_affinity {mask}; done",
                nic = n.nic
            );
        }
        if let Some(cpu) = n.napi_cpu {
            let mask = CpuMask::cpu(cpu).hex();
            let _ = writeln!(
                s,
                "pinned=0\nfor p in /proc/[0-9]*; do\n  case \"$(cat $p/comm 2>/dev/null)\" in\n    napi/{nic}-*) taskset -p {mask} ${{p#/proc/}} >/dev/null || fail \"pinning $(cat $p/comm) to CPU{cpu}\"; pinned=1;;\n  esac\ndone\n[ $pinned = 1 ] || fail \"no NAPI thread napi/{nic}-* to pin\"",
                nic = n.nic
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nics() -> Vec<String> {
        vec!["lan".to_string(), "wan".to_string()]
    }

    #[test]
    fn openwrt_s_rules_map_onto_the_lab_s_lan_and_wan() {
        let bcm = crate::inputs::openwrt::steering::builtin("bcm53xx/generic").unwrap();
        let s = resolve(&SteeringSpec::Openwrt, "t", 2, &nics(), Some(&bcm)).unwrap();
        assert_eq!(s.describe(), "lan rps 2, wan rps 0");
        let mt = crate::inputs::openwrt::steering::builtin("ramips/mt7621").unwrap();
        let s = resolve(&SteeringSpec::Openwrt, "t", 2, &nics(), Some(&mt)).unwrap();
        assert_eq!(
            s.describe(),
            "lan rps 2 NAPI thread on CPU0, wan rps 2 NAPI thread on CPU0"
        );
        // One CPU: nothing, and the plan says why.
        let one = resolve(&SteeringSpec::Openwrt, "t", 1, &nics(), Some(&mt)).unwrap();
        assert!(
            !one.is_on() && one.resolved.starts_with("one CPU"),
            "{one:?}"
        );
        assert!(script(&one).is_empty());
        let err = resolve(&SteeringSpec::Openwrt, "t", 2, &nics(), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("OpenWrt mode"), "{err}");
    }

    #[test]
    fn explicit_masks_are_checked_against_the_machine_and_the_nics() {
        let spec = SteeringSpec::parse_flag("rps_cpus=2,irq_cpu=0").unwrap();
        let s = resolve(&spec, "--packet-steering", 2, &nics(), None).unwrap();
        assert_eq!(s.describe(), "lan rps 2 irq CPU0, wan rps 2 irq CPU0");
        let err = resolve(&spec, "--packet-steering", 1, &nics(), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("1 CPU(s)"), "{err}");
        let per: SteeringSpec = {
            #[derive(serde::Deserialize)]
            struct T {
                p: SteeringSpec,
            }
            toml_edit::de::from_str::<T>("p = { rps_cpus = { dmz = \"2\" } }")
                .unwrap()
                .p
        };
        let err = resolve(&per, "f.toml", 2, &nics(), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"dmz\"") && err.contains("lan, wan"), "{err}");
    }

    /// Runs the generated script with the host's `sh` on a made-up `/sys`
    /// and `/proc` under a temporary root: it writes every mask and the
    /// affinity of the NIC's interrupt line, and fails, naming the value,
    /// when the kernel reads back something else.
    #[test]
    fn the_script_writes_reads_back_and_fails_on_a_refused_value() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().display().to_string();
        let write = |rel: &str, text: &str| crate::lab::guest::write_under(dir.path(), rel, text);
        for nic in ["lan", "wan"] {
            write(&format!("sys/class/net/{nic}/queues/rx-0/rps_cpus"), "0\n");
        }
        write("run/xl-nic-irqs", "lan virtio1\nwan virtio0\n");
        write(
            "proc/interrupts",
            "           CPU0       CPU1\n 40:  5000  0  GIC-0  72 Level  virtio1\n 41:  3000  0  GIC-0  73 Level  virtio0\n",
        );
        write("proc/irq/40/smp_affinity", "3\n");
        write("proc/irq/41/smp_affinity", "3\n");
        let spec = SteeringSpec::parse_flag("rps_cpus=2,irq_cpu=1").unwrap();
        let steering = resolve(&spec, "t", 2, &nics(), None).unwrap();
        let run = |text: String| {
            let text = text
                .replace("/sys/", &format!("{root}/sys/"))
                .replace("/run/", &format!("{root}/run/"))
                .replace("/proc/", &format!("{root}/proc/"));
            std::process::Command::new("sh")
                .args([
                    "-c",
                    &format!("fail() {{ echo FAILED $*; exit 1; }}\n{text}"),
                ])
                .output()
                .unwrap()
        };
        let out = run(script(&steering));
        assert!(out.status.success(), "{out:?}");
        let read = |rel: &str| std::fs::read_to_string(dir.path().join(rel)).unwrap();
        assert_eq!(read("sys/class/net/lan/queues/rx-0/rps_cpus"), "2\n");
        assert_eq!(read("proc/irq/40/smp_affinity"), "2\n");
        assert_eq!(read("proc/irq/41/smp_affinity"), "2\n");
        // A kernel that does not take the value: a file that reads back
        // empty (/dev/null stands in).
        let wan = dir.path().join("sys/class/net/wan/queues/rx-0/rps_cpus");
        std::fs::remove_file(&wan).unwrap();
        std::os::unix::fs::symlink("/dev/null", &wan).unwrap();
        let out = run(script(&steering));
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{said}");
        assert!(said.contains("FAILED rps_cpus of wan reads"), "{said}");
    }
}
