//! The lab's network: namespace `lan` — tap — guest — tap — namespace
//! `wan`, named per process and boot (`xlab-<pid>-<n>-lan`, tap
//! `xl<pid>_<n>a`) so two runs never collide, made and removed (when the
//! [`Topology`] is dropped) by the lab's one owner of namespaces and taps,
//! [`super::net`].
//!
//! The namespaces have no link to the host's network: all lab traffic
//! stays between them and the guest. The taps are created in the host's
//! namespace (where QEMU opens them by name) and moved into their
//! namespace once QEMU holds them ([`Topology::attach`]). Their offloads
//! are off: with them on the host hands the guest 64 KB GSO frames and the
//! numbers mean nothing.

use std::time::Duration;

use anyhow::Result;

use super::guest::{GUEST_LAN_IP, GUEST_WAN_IP, LAN_HOST_IP, PREFIX, WAN_HOST_IP};
pub use super::net::ip::{wait_listening, TCP, TCP6};
pub use super::net::{remove_stale, socket_dir_prefix, start_clean, NETNS_PREFIX, TAP_PREFIX};
use super::net::{Cidr, Net, Step};

/// One side of the router.
#[derive(Debug, Clone)]
pub struct Side {
    /// Network namespace name.
    pub netns: String,
    /// Tap device name.
    pub tap: String,
    /// The host address in the namespace.
    pub host_ip: &'static str,
    /// The guest's address on this side.
    pub guest_ip: &'static str,
}

/// The namespaces and taps of one lab process; removed on drop (they
/// belong to its [`Net`]).
#[derive(Debug)]
pub struct Topology {
    /// The LAN side (iperf3 client).
    pub lan: Side,
    /// The WAN side (iperf3 server).
    pub wan: Side,
    net: Net,
}

impl Topology {
    /// Creates both namespaces (loopback up) and both taps (up, in the
    /// host's namespace), named after this process and a counter. Whatever
    /// was created is removed again if a later step fails.
    pub fn create() -> Result<Topology> {
        let mut net = Net::new();
        let names = net.names;
        let side = |role: &str, tap: usize, host_ip, guest_ip| -> Result<Side> {
            Ok(Side {
                netns: names.netns(role),
                tap: names.tap(tap)?,
                host_ip,
                guest_ip,
            })
        };
        let lan = side("lan", 0, LAN_HOST_IP, GUEST_LAN_IP)?;
        let wan = side("wan", 1, WAN_HOST_IP, GUEST_WAN_IP)?;
        let mut steps = Vec::new();
        for s in [&lan, &wan] {
            steps.push(Step::Namespace {
                name: s.netns.clone(),
            });
            steps.push(Step::Tap {
                name: s.tap.clone(),
            });
        }
        net.apply(&steps)?;
        Ok(Topology { lan, wan, net })
    }

    /// Once QEMU holds both taps (their carrier comes up), moves each into
    /// its namespace, addresses it, turns its offloads off and routes the
    /// LAN through the guest. Fails after `timeout`, or as soon as
    /// `still_running` (QEMU's check) fails.
    pub fn attach(
        &mut self,
        timeout: Duration,
        still_running: impl FnMut() -> Result<()>,
    ) -> Result<()> {
        let taps = [self.lan.tap.clone(), self.wan.tap.clone()];
        self.net.wait_carrier(&taps, timeout, still_running)?;
        let mut steps = Vec::new();
        for side in [&self.lan, &self.wan] {
            let (netns, dev) = (side.netns.clone(), side.tap.clone());
            steps.push(Step::Move {
                dev: dev.clone(),
                netns: netns.clone(),
            });
            steps.push(Step::Address {
                netns: netns.clone(),
                dev: dev.clone(),
                address: Cidr::new(side.host_ip.parse()?, PREFIX)?,
            });
            steps.push(Step::Up {
                netns: netns.clone(),
                dev: dev.clone(),
            });
            steps.push(Step::OffloadsOff { netns, dev });
        }
        steps.push(Step::Route {
            netns: self.lan.netns.clone(),
            to: None,
            via: self.lan.guest_ip.parse()?,
        });
        self.net.apply(&steps)
    }

    /// Removes the taps and namespaces now; errors are reported, not returned.
    pub fn remove(&mut self) {
        self.net.remove();
    }
}
