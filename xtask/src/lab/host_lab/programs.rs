//! The host lab's benchmarks, each server and client inside the session's
//! namespace, over its loopback (127.0.0.1):
//!
//! * tbench (Debian's dbench package): `tbench_srv`, then `tbench -t S N
//!   127.0.0.1`; the result is its `Throughput X MB/sec  N clients …`
//!   line, in MB/s.
//! * iperf3: a one-off `--json` server, a client for S seconds; what the
//!   receiver got, in Mbit/s.
//!
//! Servers and clients are supervised children
//! ([`crate::util::process::Supervised`]) with deadlines: stopped when the
//! run ends or fails, and whatever they forked goes with the namespace.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::lab::iperf::{self, start_server, IPERF_PORT};
use crate::lab::net::ip::{wait_listening, TCP};
use crate::lab::net::Namespace;
use crate::lab::process::{self, last_lines, Limits};
use crate::lab::sample::{iperf_summary, read_json};

/// The TCP port `tbench_srv` listens on (dbench's default).
pub const TBENCH_PORT: u16 = 7003;
/// For tbench's server to listen.
const SERVER_TIMEOUT: Duration = Duration::from_secs(15);
/// What a client may take beyond its run's seconds (start-up, tbench's
/// cleanup phase), in seconds.
const CLIENT_SLACK_SECONDS: u64 = 60;

/// One benchmark run's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The measured value: MB/s (tbench) or Mbit/s (iperf3).
    pub value: f64,
    /// The result line (tbench's `Throughput …`), or iperf3's in words.
    pub summary: String,
    /// The output file kept in the lab directory.
    pub log: String,
    /// The iperf3 client's full `--json` report.
    pub iperf3_client: Option<serde_json::Value>,
}

/// Parses tbench's result line: `Throughput 579.361 MB/sec  2 clients  2
/// procs  max_latency=14.674 ms`. Returns MB/s and the line; an error
/// when it is missing, in another unit, or for another client count.
pub fn parse_tbench(output: &str, clients: u32) -> Result<(f64, String)> {
    let Some(line) = output
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("Throughput "))
    else {
        bail!(
            "tbench printed no `Throughput … MB/sec` line:\n{}",
            last_lines(output, 15)
        );
    };
    let words: Vec<&str> = line.split_whitespace().collect();
    let value: f64 = words
        .get(1)
        .and_then(|w| w.parse().ok())
        .with_context(|| format!("tbench's line {line:?} has no number"))?;
    if words.get(2) != Some(&"MB/sec") {
        bail!("tbench's line {line:?} is not in MB/sec");
    }
    let n = clients.to_string();
    if !words.windows(2).any(|w| w[0] == n && w[1] == "clients") {
        bail!("tbench's line {line:?} is not for {clients} clients");
    }
    if !value.is_finite() || value <= 0.0 {
        bail!("tbench measured {value} MB/s: {line:?}");
    }
    Ok((value, line.to_string()))
}

/// One tbench run of `seconds` with `clients` clients in `ns`; output in
/// `dir` as `<prefix>-tbench.log` (and the server's
/// `<prefix>-tbench_srv.log`).
pub fn tbench(
    ns: &Namespace,
    clients: u32,
    seconds: u32,
    dir: &Path,
    prefix: &str,
) -> Result<Outcome> {
    let mut server = ns.command("tbench_srv", &[]);
    server.current_dir(dir);
    let mut server = process::spawn(
        server,
        "tbench server",
        &dir.join(format!("{prefix}-tbench_srv.log")),
    )?;
    wait_listening((&ns.name, TCP), TBENCH_PORT, &mut server, SERVER_TIMEOUT)?;
    let log = format!("{prefix}-tbench.log");
    let (secs, n) = (seconds.to_string(), clients.to_string());
    let mut client = ns.command("tbench", &["-t", &secs, &n, "127.0.0.1"]);
    client.current_dir(dir);
    let mut client = process::spawn(client, "tbench", &dir.join(&log))?;
    let status = client.wait(&Limits::within(Duration::from_secs(
        u64::from(seconds) + CLIENT_SLACK_SECONDS,
    )))?;
    let output = crate::util::fs::read_limited(
        &dir.join(&log),
        crate::util::fs::FileLimit::log("tbench log"),
        "",
    )?;
    if !status.success() {
        bail!("tbench failed ({status}):\n{}", last_lines(&output, 15));
    }
    server.stop();
    let (value, summary) = parse_tbench(&output, clients)?;
    Ok(Outcome {
        value,
        summary,
        log,
        iperf3_client: None,
    })
}

/// One iperf3 run of `seconds` (one TCP stream) in `ns`; the reports in
/// `dir` as `<prefix>-client.json` and `<prefix>-server.json`.
pub fn iperf3(ns: &Namespace, seconds: u32, dir: &Path, prefix: &str) -> Result<Outcome> {
    let file = |suffix: &str| dir.join(format!("{prefix}-{suffix}"));
    let port = IPERF_PORT.to_string();
    let server = ns.command(
        "iperf3",
        &[
            "--server",
            "--one-off",
            "--json",
            "--bind",
            "127.0.0.1",
            "--port",
            &port,
        ],
    );
    let mut server = start_server(server, (&ns.name, TCP), (dir, prefix))?;
    let secs = seconds.to_string();
    let client = ns.command(
        "iperf3",
        &[
            "--client",
            "127.0.0.1",
            "--port",
            &port,
            "--time",
            &secs,
            "--json",
            "--connect-timeout",
            "5000",
        ],
    );
    let mut client = iperf::spawn_client(client, (dir, prefix))?;
    let status = client.wait(&Limits::within(Duration::from_secs(
        u64::from(seconds) + CLIENT_SLACK_SECONDS,
    )))?;
    let report = read_json(&file("client.json"))?;
    if let Some(failure) = iperf::client_failure(status, &report, &file("client.stderr")) {
        bail!("iperf3 failed{failure}");
    }
    server
        .wait(&Limits::within(iperf::SERVER_TIMEOUT))
        .context("waiting for the iperf3 server to finish")?;
    let summary = iperf_summary(&report)?;
    Ok(Outcome {
        value: summary.mbit_per_s,
        summary: format!(
            "{:.1} Mbit/s received, {} bytes, {} retransmits",
            summary.mbit_per_s,
            summary.bytes_received,
            summary
                .retransmits
                .map_or("unknown".to_string(), |r| r.to_string())
        ),
        log: format!("{prefix}-client.json"),
        iperf3_client: Some(report),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "dbench version 4.00 - Copyright Andrew Tridgell 1999-2004\n\n\
        Running for 2 seconds with load '/usr/share/dbench/client.txt' and minimum warmup 0 secs\n\
        failed to create barrier semaphore \n2 of 2 processes prepared for launch   0 sec\n\
        releasing clients\n   2     50522   579.36 MB/sec  execute   1 sec  latency 14.674 ms\n\
        \n Operation      Count    AvgLat    MaxLat\n NTCreateX      37697     0.017     0.423\n\n\
        Throughput 579.361 MB/sec  2 clients  2 procs  max_latency=14.674 ms\n";

    #[test]
    fn tbench_s_throughput_line_parses() {
        let (v, line) = parse_tbench(OUTPUT, 2).unwrap();
        assert_eq!(v, 579.361);
        assert!(line.starts_with("Throughput 579.361 MB/sec  2 clients"));
    }

    #[test]
    fn a_tbench_output_without_its_result_is_an_error() {
        let cut = OUTPUT.replace("Throughput 579", "Thruput 579");
        assert!(parse_tbench(&cut, 2)
            .unwrap_err()
            .to_string()
            .contains("no `Throughput"));
        let other = parse_tbench(OUTPUT, 4).unwrap_err().to_string();
        assert!(other.contains("not for 4 clients"), "{other}");
        let unit = OUTPUT.replace("579.361 MB/sec", "579.361 KB/sec");
        assert!(parse_tbench(&unit, 2).is_err());
        let zero = OUTPUT.replace("579.361 MB/sec  2", "0 MB/sec  2");
        assert!(parse_tbench(&zero, 2).is_err());
    }
}
