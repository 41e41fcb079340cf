//! Checks of the guest's tools for the coming topologies, run through a
//! booted lab guest's console: batman-adv with batctl (a two-node mesh
//! inside the guest, `bat0` and `bat1` joined by a veth pair) and dbench's
//! tbench over the guest's loopback.
//!
//! `crate::common::guest_checks`.
#![allow(dead_code)]

use xtask::lab::host_lab::programs::parse_tbench;
use xtask::lab::session::RunningGuest;

/// `batctl -v`'s line: the guest's batctl runs.
pub fn batctl_version(guest: &mut RunningGuest) -> String {
    let out = guest.check("batctl -v").unwrap();
    let line = out
        .lines()
        .find(|l| l.starts_with("batctl "))
        .unwrap_or_else(|| panic!("no version line from batctl -v:\n{out}"))
        .to_string();
    assert!(line.contains("[batman-adv: "), "{line}");
    line
}

/// Builds a two-node mesh inside the guest (`bat0` on one end of a veth
/// pair, `bat1` on the other, with busybox's `ip`), waits until bat0's
/// originator table lists bat1's originator (its hard interface's MAC,
/// which the kernel reports), and returns that table. The mesh is removed
/// again; panics with the guest's output when batman-adv or batctl fail.
pub fn batman_pair(guest: &mut RunningGuest) -> String {
    // Without `peer name`, which busybox's ip cannot send, the kernel names
    // the peer veth0.
    guest
        .check(
            "ip link add xlm0 type veth && ip link add bat0 type batadv && \
             ip link add bat1 type batadv && ip link set xlm0 master bat0 && \
             ip link set veth0 master bat1 && for d in xlm0 veth0 bat0 bat1; \
             do ip link set $d up || exit 1; done",
        )
        .unwrap();
    let peer = guest
        .check("cat /sys/class/net/veth0/address")
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(peer.len(), 17, "{peer:?}");
    let algorithms = guest.check("batctl ra").unwrap();
    assert!(algorithms.contains("BATMAN_IV"), "{algorithms}");
    // OGMs go out every second: a few seconds list the other node.
    let table = guest
        .check(&format!(
            "for i in $(seq 1 20); do batctl meshif bat0 o | grep -q ' {peer} ' && break; \
             sleep 1; done; batctl meshif bat0 o"
        ))
        .unwrap();
    guest
        .check("ip link del bat0; ip link del bat1; ip link del xlm0")
        .unwrap();
    let listed = table
        .lines()
        .any(|l| l.trim_start().starts_with('*') && l.contains(&peer));
    assert!(
        listed,
        "bat0's originator table does not name bat1 ({peer}):\n{table}"
    );
    table
}

/// One tbench run of `seconds` with one client against `tbench_srv` on the
/// guest's loopback: MB/s and tbench's result line.
pub fn tbench(guest: &mut RunningGuest, seconds: u32) -> (f64, String) {
    let out = guest
        .check(&format!(
            "(tbench_srv >/dev/null 2>&1 & s=$!; sleep 1; tbench -t {seconds} 1 127.0.0.1; \
             r=$?; kill $s; exit $r)"
        ))
        .unwrap();
    parse_tbench(&out, 1).unwrap_or_else(|e| panic!("{e:#}\n{out}"))
}
