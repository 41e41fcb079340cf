//! `--mtu`: the MTU of every link a topology makes, from its one
//! definition (`lab::request::option`) to the taps, veths and guest NICs,
//! and refused where a lab or topology cannot honour it.

use std::path::Path;

use xtask::lab::net::Names;
use xtask::lab::topology::{self, plan, Name};
use xtask::lab::{guest, Field, Flash, LabRequest, Machine, Problem};

/// Every `ip … mtu N` command of `t`'s plan, and every guest's.
fn mtus(t: &topology::Topology) -> (Vec<String>, Vec<String>) {
    let p = plan::plan(t, Names { pid: 3, serial: 4 }).unwrap();
    let host = p
        .commands()
        .into_iter()
        .filter(|c| c.contains(" mtu "))
        .collect();
    let guests = t
        .guests
        .iter()
        .flat_map(|g| {
            guest::setup_script(&t.name, g)
                .lines()
                .filter(|l| l.contains(" mtu "))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    (host, guests)
}

#[test]
fn every_link_of_the_nat_router_gets_the_mtu_on_both_ends() {
    let t = topology::named(&Name::NatRouter).unwrap();
    assert_eq!(mtus(&t), (vec![], vec![]), "no MTU unless asked");
    let t = t.with_mtu(1400);
    t.check().unwrap();
    let (host, guests) = mtus(&t);
    // Two taps, each in its endpoint's namespace.
    assert_eq!(host.len(), 2, "{host:?}");
    assert!(host.iter().all(|c| c.ends_with("mtu 1400")), "{host:?}");
    assert_eq!(
        guests,
        [
            "ip link set lan mtu 1400 || fail \"MTU 1400 on lan\"",
            "ip link set wan mtu 1400 || fail \"MTU 1400 on wan\""
        ]
    );
    assert!(t.describe().iter().any(|l| l.contains("(MTU 1400)")));
}

#[test]
fn the_mesh_keeps_batman_adv_s_header_on_top_and_bridged_links_set_every_end() {
    let t = topology::named_with(&Name::Mesh, Some(3))
        .unwrap()
        .with_mtu(1400);
    t.check().unwrap();
    let (host, guests) = mtus(&t);
    // Mesh links carry 1400 + 32 bytes, the LAN and far links 1400, on
    // the taps, the bridge's veth ends and the endpoints' own.
    assert!(host.iter().any(|c| c.ends_with("mtu 1432")), "{host:?}");
    assert!(host.iter().any(|c| c.ends_with("mtu 1400")), "{host:?}");
    assert!(
        host.iter()
            .all(|c| c.ends_with("mtu 1400") || c.ends_with("mtu 1432")),
        "{host:?}"
    );
    assert!(guests
        .iter()
        .any(|l| l.starts_with("ip link set mesh1 mtu 1432")));
    assert!(guests
        .iter()
        .any(|l| l.starts_with("ip link set lan mtu 1400")));
    // The reference arm's routers, bridged without batman-adv: 1400 throughout.
    let bridged = topology::named_with(&Name::MeshBridged, Some(3))
        .unwrap()
        .with_mtu(1400);
    let (host, guests) = mtus(&bridged);
    assert!(!host.is_empty() && host.iter().all(|c| c.ends_with("mtu 1400")));
    assert!(!guests.is_empty() && guests.iter().all(|l| l.contains("mtu 1400 ")));
    // A batman-adv port that cannot carry the LAN's frames with its
    // header is refused.
    let mut t = t;
    t.guests[0].batman.as_mut().unwrap().port_mtu = 1420;
    let err = format!("{:#}", t.check().unwrap_err());
    assert!(err.contains("MTU 1420 is outside 1432..=1532"), "{err}");
    // batman-adv's bat0 carries at most 1500 bytes: a bigger MTU on the
    // mesh is refused, by the request's check, before anything builds.
    let jumbo = topology::named_with(&Name::Mesh, Some(2))
        .unwrap()
        .with_mtu(9000);
    let err = format!("{:#}", jumbo.check().unwrap_err());
    assert!(err.contains("carries at most 1500"), "{err}");
    let r = LabRequest::qemu("brcm47xx")
        .on_topology(Name::Mesh)
        .with(|r| r.set_count(Field::Mtu, 9000));
    let p = r.check().unwrap_err();
    assert_eq!(p.field(), Field::Mtu, "{p}");
    assert!(p.to_string().contains("carries at most 1500"), "{p}");
    topology::named_with(&Name::MeshBridged, Some(2))
        .unwrap()
        .with_mtu(9000)
        .check()
        .unwrap();
}

#[test]
fn the_mtu_is_refused_where_no_link_or_no_qemu_honours_it() {
    let mtu = |r: LabRequest| r.with(|r| r.set_count(Field::Mtu, 1400));
    mtu(LabRequest::qemu("brcm47xx")).check().unwrap();
    let loopback = mtu(LabRequest::qemu("brcm47xx").on_topology(Name::Loopback));
    assert_eq!(loopback.check(), Err(Problem::ForwardingOnly(Field::Mtu)));
    let ssh = mtu(LabRequest::qemu("bcm53xx").with(|r| {
        r.machine =
            Machine::from_args("ssh", Some(Path::new("lab.toml")), Flash::Sysupgrade).unwrap()
    }));
    let p = ssh.check().unwrap_err();
    assert_eq!(p, Problem::QemuOnly(Field::Mtu));
    assert!(
        p.to_string().starts_with("--mtu is for the QEMU lab"),
        "{p}"
    );
    for bad in [575, 9001] {
        let p = mtu(LabRequest::qemu("brcm47xx"))
            .with(|r| r.set_count(Field::Mtu, bad))
            .check()
            .unwrap_err();
        assert_eq!(p, Problem::OutOfRange(Field::Mtu, bad));
    }
    // Recorded in lab.json's settings by its key, and shown by the report.
    let r = mtu(LabRequest::qemu("brcm47xx"));
    let s = xtask::lab::forwarding::settings(&r, "baseline");
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json.pointer("/options/mtu"), Some(&serde_json::json!(1400)));
}
