//! The lab's iperf3 options and report reading against Debian's iperf3 on
//! 127.0.0.1 (nothing leaves the machine): a UDP run at a rate
//! (`IperfOptions::args` with `udp_mbit`) gives a report whose receiver's
//! Mbit/s and datagram loss the lab reads (`iperf_summary`), and a TCP run
//! gives no loss figure. Each iperf3 is bounded (`--time 1`, killed after
//! 20 s). A second or so.

use crate::common::gate;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use xtask::lab::sample::iperf_summary;
use xtask::results::lab::IperfOptions;

/// A child killed when dropped (a failed assertion leaves no iperf3).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits for `child` at most 20 s; its stdout.
fn finish(mut child: Killed) -> String {
    let start = Instant::now();
    while child.0.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "iperf3 did not finish"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.0.stdout.take().unwrap(), &mut out).unwrap();
    out
}

/// One iperf3 run over 127.0.0.1 with `options`: the client's `--json`
/// report.
fn run(options: IperfOptions) -> serde_json::Value {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let server = Killed(
        Command::new("iperf3")
            .args([
                "--server",
                "--one-off",
                "--bind",
                "127.0.0.1",
                "--port",
                &port,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Listening, as /proc/net/tcp shows it (a probe connection would be
    // the --one-off server's one test).
    let listening = format!("0100007F:{:04X}", port.parse::<u16>().unwrap());
    let start = Instant::now();
    while !std::fs::read_to_string("/proc/net/tcp")
        .unwrap()
        .lines()
        .any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.get(1) == Some(&listening.as_str()) && f.get(3) == Some(&"0A")
        })
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "iperf3 --server did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let client = Killed(
        Command::new("iperf3")
            .args(["--client", "127.0.0.1", "--port", &port])
            .args(["--time", "1", "--json", "--connect-timeout", "5000"])
            .args(options.args())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let report = finish(client);
    drop(server);
    serde_json::from_str(&report).unwrap_or_else(|e| panic!("{e}: {report}"))
}

#[test]
fn a_udp_run_at_a_rate_reports_its_loss_and_tcp_none() {
    if !gate::Needs::new().program("iperf3", "iperf3").met() {
        return;
    }
    let udp = IperfOptions {
        parallel: 1,
        mss: None,
        udp_mbit: Some(20),
    };
    let report = run(udp);
    assert_eq!(
        report
            .pointer("/start/test_start/protocol")
            .and_then(|p| p.as_str()),
        Some("UDP"),
        "{report}"
    );
    let s = iperf_summary(&report).unwrap();
    // The rate asked for, within what one second of pacing gives.
    assert!(
        (10.0..=30.0).contains(&s.mbit_per_s),
        "{} Mbit/s at -b 20M",
        s.mbit_per_s
    );
    let lost = s.lost_percent.expect("a UDP run's loss");
    assert!((0.0..=100.0).contains(&lost), "{lost}");

    let tcp = run(IperfOptions::default());
    let t = iperf_summary(&tcp).unwrap();
    assert!(t.mbit_per_s > 0.0);
    assert_eq!(t.lost_percent, None, "TCP has no datagram loss");
}
