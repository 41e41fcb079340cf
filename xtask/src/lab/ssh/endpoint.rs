//! The two sides of the real router on this machine, where iperf3's
//! client (LAN) and server (WAN) run. A side is a namespace the user made
//! (checked to exist, left alone), or an interface the lab moves into a
//! namespace of its own (`xlab-<pid>-<n>-ssh-lan`), addresses and routes,
//! and removes again when [`HostSides`] is dropped — the interface then
//! returns to the host's namespace without its address. The namespaces
//! are the lab's one owner's ([`crate::lab::net`]); a lab killed before
//! that leaves them to the next lab's stale sweep
//! ([`crate::lab::net::remove_stale`]).

use std::net::IpAddr;

use anyhow::{bail, Result};

use crate::inputs::ssh_lab::{SshEndpoint, SshPlace};
use crate::lab::net::ip::{netns_exists, tool};
use crate::lab::net::{Cidr, Net, Step};

/// Both sides, ready; namespaces the lab made are removed on drop.
#[derive(Debug)]
pub struct HostSides {
    /// The LAN side's namespace.
    pub lan_netns: String,
    /// The WAN side's namespace.
    pub wan_netns: String,
    // Held for its Drop: removes the namespaces the lab made.
    net: Net,
}

impl HostSides {
    /// Prepares `lan` and `wan`; whatever was made is removed again if a
    /// later step fails.
    pub fn prepare(lan: &SshEndpoint, wan: &SshEndpoint) -> Result<HostSides> {
        let mut sides = HostSides {
            lan_netns: String::new(),
            wan_netns: String::new(),
            net: Net::new(),
        };
        sides.lan_netns = sides.side("lan", lan)?;
        sides.wan_netns = sides.side("wan", wan)?;
        Ok(sides)
    }

    fn side(&mut self, name: &str, endpoint: &SshEndpoint) -> Result<String> {
        match &endpoint.place {
            SshPlace::Netns(ns) => {
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
            SshPlace::Interface(interface) => {
                if !std::path::Path::new("/sys/class/net")
                    .join(interface)
                    .exists()
                {
                    bail!("[{name}] interface {interface:?} is not in the host's namespace");
                }
                let Some((ip, Some(len))) = endpoint.address else {
                    bail!("[{name}] interface {interface:?} has no address/prefix");
                };
                let netns = self.net.names.netns(&format!("ssh-{name}"));
                let mut steps = vec![
                    Step::Namespace {
                        name: netns.clone(),
                    },
                    Step::Move {
                        dev: interface.clone(),
                        netns: netns.clone(),
                    },
                    Step::Address {
                        netns: netns.clone(),
                        dev: interface.clone(),
                        address: Cidr::new(ip, len)?,
                    },
                    Step::Up {
                        netns: netns.clone(),
                        dev: interface.clone(),
                    },
                ];
                if let Some(via) = endpoint.gateway {
                    steps.push(Step::Route {
                        netns: netns.clone(),
                        to: None,
                        via,
                    });
                }
                self.net.apply(&steps)?;
                Ok(netns)
            }
        }
    }

    /// Removes the namespaces the lab made; errors are reported, not returned.
    pub fn remove(&mut self) {
        self.net.remove();
    }
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
