//! One iperf3 run through a [`Testbed`]: the server in one endpoint's
//! namespace, the client in another's, the measured router's counters
//! sampled before and after. The same for a QEMU topology and a real
//! router.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::backend::Testbed;
use super::guest::SamplePoint;
use super::net::ip::{wait_listening, TCP, TCP6};
use super::process::{self, interrupted, Limits, Supervised};
use super::runner::Stalled;
use super::sample::{read_json, GuestSample};
use crate::results::lab::per_cpu::Snapshot;
use crate::results::lab::timing::{self, Stopwatch};
use crate::results::lab::Direction;
use crate::results::lab::{IperfOptions, WallStep};

/// For the iperf3 server to listen, and to exit after its one test.
pub const SERVER_TIMEOUT: Duration = Duration::from_secs(15);
/// iperf3's port in the server's namespace.
pub const IPERF_PORT: u16 = 5201;
/// `server` (an `iperf3 --server --one-off --json` command on
/// [`IPERF_PORT`]) started, its report in `<prefix>-server.json` and its
/// stderr in `<prefix>-server.stderr` of `dir`; returns once it listens
/// in `netns`'s `table` ([`TCP`] or [`TCP6`]).
///
/// Errors: it exits, or does not listen within [`SERVER_TIMEOUT`].
pub fn start_server(
    server: Command,
    (netns, table): (&str, &str),
    (dir, prefix): (&Path, &str),
) -> Result<Supervised> {
    let file = |suffix: &str| dir.join(format!("{prefix}-server.{suffix}"));
    let mut server = process::spawn_split(server, "iperf3 server", &file("json"), &file("stderr"))?;
    wait_listening((netns, table), IPERF_PORT, &mut server, SERVER_TIMEOUT)?;
    Ok(server)
}

/// `client` (an `iperf3 --client … --json` command) started, its report
/// in `<prefix>-client.json` and its stderr in `<prefix>-client.stderr`
/// of `dir` (read them with [`client_failure`]).
pub fn spawn_client(client: Command, (dir, prefix): (&Path, &str)) -> Result<Supervised> {
    let file = |suffix: &str| dir.join(format!("{prefix}-client.{suffix}"));
    process::spawn_split(client, "iperf3 client", &file("json"), &file("stderr"))
}

/// How long a run may overstay its length, in seconds, before it counts
/// as stalled.
const STALL_SECONDS: u64 = 30;

/// One iperf3 run's raw results.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Router counters before.
    pub before: GuestSample,
    /// Router counters after.
    pub after: GuestSample,
    /// The cache model's counters right before and right after the
    /// traffic (inside the window of `before` and `after`), with a model.
    pub model: Option<(Snapshot, Snapshot)>,
    /// The router's own counters over the traffic by event (a real
    /// router with perf), when it has them.
    pub router_counters: Option<std::collections::BTreeMap<String, u64>>,
    /// The client's `--json` report.
    pub client: serde_json::Value,
    /// The server's `--json` report.
    pub server: serde_json::Value,
    /// The wall time of each step, in order (the [`timing`] steps from
    /// [`timing::SERVER_START`] to [`timing::SERVER_EXIT`]).
    pub steps: Vec<WallStep>,
}

/// One iperf3 run of `seconds` in `direction` through `router`, the
/// client in endpoint `client` and the server in endpoint `server`
/// (`--reverse` when the direction is WAN → LAN: the server sends) with
/// iperf3's `options` (`--parallel`, `--set-mss`); the
/// reports are kept as `<prefix>-client.json` and `<prefix>-server.json`
/// in `dir`.
pub fn run(
    router: &mut dyn Testbed,
    (client, server): (&str, &str),
    (direction, options): (Direction, IperfOptions),
    seconds: u32,
    (dir, prefix): (&Path, &str),
) -> Result<RunOutput> {
    let file = |suffix: &str| -> PathBuf { dir.join(format!("{prefix}-{suffix}")) };
    let ends = router.endpoints();
    let client_netns = ends.get(client)?.netns.clone();
    let server_netns = ends.get(server)?.netns.clone();
    let server_ip = ends.address(server)?.to_string();
    let port = IPERF_PORT.to_string();
    let mut server = Command::new("ip");
    server
        .args(["netns", "exec", &server_netns, "iperf3", "--server"])
        .args(["--one-off", "--json", "--bind", &server_ip])
        .args(["--port", &port]);
    let mut watch = Stopwatch::default();
    let table = if server_ip.contains(':') { TCP6 } else { TCP };
    let mut server = watch.time(timing::SERVER_START, || {
        start_server(server, (&server_netns, table), (dir, prefix))
    })?;
    let before = watch.time(timing::SAMPLE_BEFORE, || router.sample(SamplePoint::Before))?;
    // The model's counters after the guest's own sampling commands, and
    // (below) before the next ones: the traffic alone.
    let model_before = router_model(&mut watch, router, timing::MODEL_BEFORE)?;
    router.start_router_counters()?;
    let mut client = Command::new("ip");
    client
        .args(["netns", "exec", &client_netns, "iperf3", "--client"])
        .arg(&server_ip)
        .args(["--port", &port, "--time", &seconds.to_string(), "--json"])
        .args(["--connect-timeout", "5000"]);
    client.args(options.args());
    if direction == Direction::WanToLan {
        client.arg("--reverse");
    }
    let limit = Duration::from_secs(u64::from(seconds) + STALL_SECONDS);
    let waited = watch.time(timing::CLIENT, || -> Result<_> {
        let mut client = spawn_client(client, (dir, prefix))?;
        Ok(client.wait_while(&Limits::within(limit), || router.check_alive()))
    })?;
    let status = match waited {
        Ok(status) => status,
        Err(e) if interrupted() => return Err(e),
        // The router is gone (QEMU exited): `e` says so, with its log.
        Err(e) if router.check_alive().is_err() => return Err(e),
        // The guest lives but the run did not end: the runner boots the
        // arm again and redoes it (`Stalled`).
        Err(e) => {
            return Err(e.context(Stalled(format!(
                "the {} run stalled (a NIC that stops moving packets?)\n{}",
                direction.name(),
                router.diagnostics()
            ))))
        }
    };
    let client = read_json(&file("client.json"))?;
    if let Some(failure) = client_failure(status, &client, &file("client.stderr")) {
        bail!(
            "iperf3 {} failed{failure}\n{}",
            direction.name(),
            router.diagnostics()
        );
    }
    let router_counters = router.stop_router_counters()?;
    let model_after = router_model(&mut watch, router, timing::MODEL_AFTER)?;
    let after = watch.time(timing::SAMPLE_AFTER, || router.sample(SamplePoint::After))?;
    watch
        .time(timing::SERVER_EXIT, || {
            server.wait(&Limits::within(SERVER_TIMEOUT))
        })
        .context("waiting for the iperf3 server to finish")?;
    let server = read_json(&file("server.json"))?;
    Ok(RunOutput {
        before,
        after,
        model: model_before.zip(model_after),
        router_counters,
        client,
        server,
        steps: watch.into_steps(),
    })
}

/// What went wrong with an iperf3 client that exited with `status` and
/// wrote `report` (its `--json`) and the file `stderr`: ` (exit status:
/// 1): <report's error><stderr>`, or `None` when it succeeded. iperf3
/// 3.12 exits 0 with `--json` when it fails (`unable to connect to
/// server: No route to host`), so the report's `error` counts too.
pub fn client_failure(
    status: std::process::ExitStatus,
    report: &serde_json::Value,
    stderr: &Path,
) -> Option<String> {
    let error = report.get("error");
    if status.success() && error.is_none() {
        return None;
    }
    let stderr =
        crate::util::fs::read_limited(stderr, crate::util::fs::FileLimit::log("iperf3 log"), "")
            .unwrap_or_default();
    let status = if status.success() {
        String::new()
    } else {
        format!(" ({status})")
    };
    let error = error.and_then(|e| e.as_str()).unwrap_or("");
    Some(format!("{status}: {error}{stderr}"))
}

/// The cache model's counters, timed as `step` when the router has a
/// model (a run without one records no such step).
fn router_model(
    watch: &mut Stopwatch,
    router: &mut dyn Testbed,
    step: &str,
) -> Result<Option<Snapshot>> {
    let mut timed = Stopwatch::default();
    let counters = timed.time(step, || router.model_counters())?;
    if counters.is_some() {
        watch.extend(timed);
    }
    Ok(counters)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// iperf3 itself on a closed port of 127.0.0.1: whatever its exit
    /// status (3.12's is 0), the failure is seen and names its error.
    #[test]
    fn a_client_that_cannot_connect_is_a_failure() {
        if !crate::util::test_gate::programs(&[("iperf3", "iperf3")]) {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let (json, stderr) = (dir.path().join("c.json"), dir.path().join("c.stderr"));
        let status = Command::new("iperf3")
            .args(["--client", "127.0.0.1", "--port", &port.to_string()])
            .args(["--time", "1", "--json", "--connect-timeout", "2000"])
            .stdout(std::fs::File::create(&json).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .status()
            .expect("running iperf3");
        let report = read_json(&json).unwrap();
        let failure = client_failure(status, &report, &stderr).expect("a failure");
        assert!(failure.contains("unable to connect"), "{failure}");
        let ok = Command::new("true").status().unwrap();
        let fine = serde_json::json!({"end": {}});
        assert_eq!(client_failure(ok, &fine, &stderr), None);
    }
}
