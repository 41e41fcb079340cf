//! The one owner of the lab's network on this machine: network namespaces,
//! taps, and the bridges and veths inside namespaces. Every lab kind goes
//! through it — the QEMU lab's topologies ([`super::topology`]), the SSH
//! lab's endpoints, the host lab's private namespace — and nothing else
//! in `xtask/src` creates a namespace.
//!
//! * What to make is data: a list of [`Step`]s (planned by a topology, or
//!   by a lab kind directly), each one or two `ip`/`ethtool` argvs
//!   ([`Step::argv`]). [`Net::apply`] runs them, each within
//!   [`ip::STEP_TIMEOUT`] and stopped by Ctrl-C.
//! * Names come from [`Names`]: `xlab-<pid>-<n>-<role>` for namespaces,
//!   `xl<pid>_<n><letter>` for taps (15 bytes at most, IFNAMSIZ), `<pid>`
//!   this process and `<n>` a counter, so that two labs never collide and
//!   a dead lab's leftovers are known by their pid ([`stale`]). Bridges
//!   and veths live inside the lab's namespaces, where their names are
//!   local.
//! * Dropping a [`Net`] removes what it made, newest first: taps still in
//!   the host's namespace, then each namespace after killing the
//!   processes still in it (a forking server outlives its parent) —
//!   bridges, veths and moved taps go with their namespace. Removal runs
//!   to its end after Ctrl-C, each call within its timeout.

pub mod addr;
pub mod ip;
pub mod names;
pub mod processes;
pub mod stale;

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

pub use addr::{Cidr, Mac};
pub use names::{Names, NETNS_PREFIX, TAP_PREFIX};
pub use processes::{exited, kill_all, pids};
pub use stale::{remove_stale, socket_dir_prefix, start_clean};

use crate::lab::process::tick;
use ip::{cleanup_tool, tool};

/// One thing to make or set in the lab's network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `ip netns add NAME`, then its loopback up. Removed on drop, its
    /// processes killed first.
    Namespace {
        /// Its name ([`Names::netns`]).
        name: String,
    },
    /// `ip tuntap add dev NAME mode tap`, up, in the host's namespace
    /// (where QEMU opens it by name). Removed on drop while it is still
    /// there; once moved it goes with its namespace.
    Tap {
        /// Its name ([`Names::tap`]).
        name: String,
    },
    /// Moves device `dev` of the host's namespace into `netns` (a tap once
    /// QEMU holds it; a real router's endpoint interface).
    Move {
        /// The device.
        dev: String,
        /// Where it goes.
        netns: String,
    },
    /// A bridge `name` in `netns`, up.
    Bridge {
        /// The namespace.
        netns: String,
        /// Its name there.
        name: String,
    },
    /// A veth pair: `name` in `netns`, `peer` in `peer_netns`.
    Veth {
        /// One end's namespace.
        netns: String,
        /// One end's name there.
        name: String,
        /// The other end's namespace.
        peer_netns: String,
        /// The other end's name there.
        peer: String,
    },
    /// `dev` joins `bridge` (both in `netns`).
    Enslave {
        /// The namespace.
        netns: String,
        /// The port.
        dev: String,
        /// The bridge.
        bridge: String,
    },
    /// An address on `dev`.
    Address {
        /// The namespace.
        netns: String,
        /// The device.
        dev: String,
        /// The address with its prefix.
        address: Cidr,
    },
    /// `ip link set dev mtu N`: a link whose frames are bigger than
    /// Ethernet's 1500 bytes (batman-adv's mesh port, 1532) needs its
    /// bridge's ports to pass them.
    Mtu {
        /// The namespace.
        netns: String,
        /// The device.
        dev: String,
        /// The MTU in bytes.
        mtu: u32,
    },
    /// `dev` up.
    Up {
        /// The namespace.
        netns: String,
        /// The device.
        dev: String,
    },
    /// `ethtool -K dev tx off sg off tso off gso off gro off`: with
    /// offloads on, the host hands a guest 64 KB GSO frames and the lab's
    /// numbers mean nothing.
    OffloadsOff {
        /// The namespace.
        netns: String,
        /// The device.
        dev: String,
    },
    /// A route in `netns`: to `to` (the default route when `None`) via
    /// `via`.
    Route {
        /// The namespace.
        netns: String,
        /// The destination network; `None`: default.
        to: Option<Cidr>,
        /// The gateway.
        via: std::net::IpAddr,
    },
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

impl Step {
    /// The commands of this step, program first, in order.
    pub fn argv(&self) -> Vec<Vec<String>> {
        match self {
            Step::Namespace { name } => vec![
                argv(&["ip", "netns", "add", name]),
                argv(&["ip", "-n", name, "link", "set", "lo", "up"]),
            ],
            Step::Tap { name } => vec![
                argv(&["ip", "tuntap", "add", "dev", name, "mode", "tap"]),
                argv(&["ip", "link", "set", name, "up"]),
            ],
            Step::Move { dev, netns } => vec![argv(&["ip", "link", "set", dev, "netns", netns])],
            Step::Bridge { netns, name } => vec![
                argv(&["ip", "-n", netns, "link", "add", name, "type", "bridge"]),
                argv(&["ip", "-n", netns, "link", "set", name, "up"]),
            ],
            Step::Veth {
                netns,
                name,
                peer_netns,
                peer,
            } => vec![argv(&[
                "ip", "-n", netns, "link", "add", name, "type", "veth", "peer", "name", peer,
                "netns", peer_netns,
            ])],
            Step::Enslave { netns, dev, bridge } => vec![argv(&[
                "ip", "-n", netns, "link", "set", dev, "master", bridge,
            ])],
            Step::Address {
                netns,
                dev,
                address,
            } => vec![argv(&[
                "ip",
                "-n",
                netns,
                "addr",
                "add",
                &address.to_string(),
                "dev",
                dev,
            ])],
            Step::Mtu { netns, dev, mtu } => vec![argv(&[
                "ip",
                "-n",
                netns,
                "link",
                "set",
                dev,
                "mtu",
                &mtu.to_string(),
            ])],
            Step::Up { netns, dev } => vec![argv(&["ip", "-n", netns, "link", "set", dev, "up"])],
            Step::OffloadsOff { netns, dev } => vec![argv(&[
                "ip", "netns", "exec", netns, "ethtool", "-K", dev, "tx", "off", "sg", "off",
                "tso", "off", "gso", "off", "gro", "off",
            ])],
            Step::Route { netns, to, via } => {
                let to = to.map_or("default".to_string(), |c| c.to_string());
                vec![argv(&[
                    "ip",
                    "-n",
                    netns,
                    "route",
                    "add",
                    &to,
                    "via",
                    &via.to_string(),
                ])]
            }
        }
    }

    /// What a failure of this step needs said beyond `ip`'s message.
    fn hint(&self) -> &'static str {
        match self {
            Step::Namespace { .. } => "creating a network namespace (the lab runs as root)",
            Step::Tap { .. } => "creating a tap device (needs /dev/net/tun)",
            Step::OffloadsOff { .. } => "turning offloads off (ethtool)",
            Step::Bridge { .. } => "creating a bridge (needs the bridge module)",
            Step::Veth { .. } => "creating a veth pair (needs the veth module)",
            _ => "setting up the lab's network",
        }
    }
}

/// What a [`Net`] made and removes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Made {
    Namespace(String),
    Tap(String),
}

/// The lab's network on this machine: what it made is removed when it is
/// dropped (see the module docs).
#[derive(Debug)]
pub struct Net {
    /// The names it gives.
    pub names: Names,
    made: Vec<Made>,
}

impl Default for Net {
    fn default() -> Net {
        Net::new()
    }
}

impl Net {
    /// An empty network named after this process and the next counter.
    pub fn new() -> Net {
        Net::with_names(Names::next())
    }

    /// An empty network with `names`.
    pub fn with_names(names: Names) -> Net {
        Net {
            names,
            made: Vec::new(),
        }
    }

    /// Runs `steps` in order; whatever was made stays owned (and is removed
    /// on drop) even when a later step fails.
    pub fn apply(&mut self, steps: &[Step]) -> Result<()> {
        for step in steps {
            for (i, words) in step.argv().iter().enumerate() {
                let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
                tool(&words[0], &args).context(step.hint())?;
                if i == 0 {
                    match step {
                        Step::Namespace { name } => self.made.push(Made::Namespace(name.clone())),
                        Step::Tap { name } => self.made.push(Made::Tap(name.clone())),
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }

    /// Makes namespace `role` ([`Names::netns`]) with its loopback up
    /// (and nothing else in it).
    pub fn namespace(&mut self, role: &str) -> Result<Namespace> {
        let name = self.names.netns(role);
        self.apply(&[Step::Namespace { name: name.clone() }])?;
        Ok(Namespace { name })
    }

    /// Waits until every tap of `taps` has its carrier up (QEMU opened
    /// it), within `timeout`; `still_running` (QEMU's check) ends the wait
    /// with its error.
    pub fn wait_carrier(
        &self,
        taps: &[String],
        timeout: Duration,
        mut still_running: impl FnMut() -> Result<()>,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        for tap in taps {
            let carrier = format!("/sys/class/net/{tap}/carrier");
            while !std::fs::read_to_string(&carrier).is_ok_and(|s| s.trim() == "1") {
                still_running()?;
                if Instant::now() >= deadline {
                    bail!("QEMU did not open tap {tap} within {} s", timeout.as_secs());
                }
                tick()?;
            }
        }
        Ok(())
    }

    /// Removes what it made now, newest first; problems are reported on
    /// stderr, not returned.
    pub fn remove(&mut self) {
        while let Some(made) = self.made.pop() {
            match made {
                Made::Tap(tap) => {
                    // In the host's namespace until moved; afterwards it
                    // goes with its namespace.
                    if std::path::Path::new("/sys/class/net").join(&tap).exists() {
                        if let Err(e) = cleanup_tool("ip", &["link", "del", &tap]) {
                            eprintln!("warning: removing tap {tap}: {e:#}");
                        }
                    }
                }
                Made::Namespace(ns) => remove_namespace(&ns),
            }
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Kills what runs in namespace `ns` and deletes it; problems are
/// reported on stderr.
fn remove_namespace(ns: &str) {
    if let Err(e) = kill_all(ns) {
        eprintln!("warning: stopping the processes of {ns}: {e:#}");
    }
    if let Err(e) = cleanup_tool("ip", &["netns", "del", ns]) {
        eprintln!("warning: removing network namespace {ns}: {e:#}");
    }
}

/// A namespace of a [`Net`], by name: where commands run (argv only,
/// `ip netns exec NS program args…`). The [`Net`] owns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    /// Its name.
    pub name: String,
}

impl Namespace {
    /// `program args…` in the namespace, to spawn.
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        ip::exec(&self.name, program, args)
    }

    /// Runs `program args…` in the namespace to the end (within
    /// [`ip::STEP_TIMEOUT`]), failing with its output; returns its stdout.
    pub fn run(&self, program: &str, args: &[&str]) -> Result<String> {
        ip::run_in(&self.name, program, args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_ifnamsiz_and_say_whose_they_are() {
        let n = Names {
            pid: 4_194_304,
            serial: 99,
        };
        assert_eq!(n.netns("lan"), "xlab-4194304-99-lan");
        let tap = n.tap(25).unwrap();
        assert_eq!(tap, "xl4194304_99z");
        assert!(tap.len() <= 15, "{tap}");
        assert!(n.tap(26).is_err());
    }

    #[test]
    fn steps_are_argv() {
        let route = Step::Route {
            netns: "xlab-1-0-lan".into(),
            to: None,
            via: "192.168.1.1".parse().unwrap(),
        };
        assert_eq!(
            route.argv()[0].join(" "),
            "ip -n xlab-1-0-lan route add default via 192.168.1.1"
        );
        let veth = Step::Veth {
            netns: "a".into(),
            name: "x".into(),
            peer_netns: "b".into(),
            peer: "y".into(),
        };
        assert_eq!(
            veth.argv()[0].join(" "),
            "ip -n a link add x type veth peer name y netns b"
        );
    }

    #[test]
    fn a_running_process_has_not_exited_and_a_reaped_one_has() {
        assert!(!exited(std::process::id()));
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(exited(pid));
    }
}
