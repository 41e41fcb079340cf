//! The two sides of the real router on this machine, where iperf3's
//! client (LAN) and server (WAN) run. A side is a namespace the user made
//! (checked to exist, left alone), or an interface the lab moves into a
//! namespace of its own (`xlab-<pid>-ssh-lan`), addresses and routes, and
//! removes again when [`HostSides`] is dropped — the interface then
//! returns to the host's namespace without its address. A lab killed
//! before that leaves the namespace to the next lab's stale sweep
//! ([`crate::lab::topology::remove_stale`]).

use std::net::IpAddr;

use anyhow::{bail, Context, Result};

use crate::inputs::ssh_lab::{Endpoint, Place};
use crate::lab::topology::{tool, NETNS_PREFIX};

/// Both sides, ready; namespaces the lab made are removed on drop.
#[derive(Debug)]
pub struct HostSides {
    /// The LAN side's namespace.
    pub lan_netns: String,
    /// The WAN side's namespace.
    pub wan_netns: String,
    created: Vec<String>,
}

impl HostSides {
    /// Prepares `lan` and `wan`; whatever was made is removed again if a
    /// later step fails.
    pub fn prepare(lan: &Endpoint, wan: &Endpoint) -> Result<HostSides> {
        let mut sides = HostSides {
            lan_netns: String::new(),
            wan_netns: String::new(),
            created: Vec::new(),
        };
        sides.lan_netns = sides.side("lan", lan)?;
        sides.wan_netns = sides.side("wan", wan)?;
        Ok(sides)
    }

    fn side(&mut self, name: &str, endpoint: &Endpoint) -> Result<String> {
        match &endpoint.place {
            Place::Netns(ns) => {
                if !netns_exists(ns)? {
                    bail!(
                        "[{name}] netns {ns:?} does not exist (`ip netns list`); create it first"
                    );
                }
                if let Some((ip, _)) = endpoint.address {
                    let shown = tool("ip", &["-n", ns, "-o", "addr", "show"])?;
                    if !has_address(&shown, ip) {
                        bail!("[{name}] address {ip} is not in namespace {ns}:\n{shown}");
                    }
                }
                Ok(ns.clone())
            }
            Place::Interface(interface) => {
                let ns = format!("{NETNS_PREFIX}{}-ssh-{name}", std::process::id());
                if !std::path::Path::new("/sys/class/net")
                    .join(interface)
                    .exists()
                {
                    bail!("[{name}] interface {interface:?} is not in the host's namespace");
                }
                tool("ip", &["netns", "add", &ns])
                    .context("creating a namespace for an endpoint (the lab runs as root)")?;
                self.created.push(ns.clone());
                let Some((ip, Some(len))) = endpoint.address else {
                    bail!("[{name}] interface {interface:?} has no address/prefix");
                };
                let addr = format!("{ip}/{len}");
                tool("ip", &["link", "set", interface, "netns", &ns])?;
                tool("ip", &["-n", &ns, "link", "set", "lo", "up"])?;
                tool("ip", &["-n", &ns, "addr", "add", &addr, "dev", interface])?;
                tool("ip", &["-n", &ns, "link", "set", interface, "up"])?;
                if let Some(gw) = endpoint.gateway {
                    let gw = gw.to_string();
                    tool("ip", &["-n", &ns, "route", "add", "default", "via", &gw])?;
                }
                Ok(ns)
            }
        }
    }

    /// Removes the namespaces the lab made; errors are reported, not returned.
    pub fn remove(&mut self) {
        for ns in self.created.drain(..) {
            let mut c = std::process::Command::new("ip");
            c.args(["netns", "del", &ns]);
            match c.status() {
                Ok(s) if s.success() => {}
                other => eprintln!("warning: removing network namespace {ns}: {other:?}"),
            }
        }
    }
}

impl Drop for HostSides {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Whether `ip netns list` shows `name`.
pub fn netns_exists(name: &str) -> Result<bool> {
    let list = tool("ip", &["netns", "list"])?;
    Ok(list
        .lines()
        .any(|l| l.split_whitespace().next() == Some(name)))
}

/// Whether `ip -o addr show` output carries `ip`.
fn has_address(shown: &str, ip: IpAddr) -> bool {
    shown.lines().any(|l| {
        let words: Vec<&str> = l.split_whitespace().collect();
        words.windows(2).any(|w| {
            (w[0] == "inet" || w[0] == "inet6")
                && w[1]
                    .split('/')
                    .next()
                    .and_then(|a| a.parse::<IpAddr>().ok())
                    == Some(ip)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_in_ip_o_addr_output() {
        let shown = "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n\
                     7: wan0    inet 198.51.100.2/24 scope global wan0\\       valid_lft forever\n";
        assert!(has_address(shown, "198.51.100.2".parse().unwrap()));
        assert!(!has_address(shown, "198.51.100.1".parse().unwrap()));
    }
}
