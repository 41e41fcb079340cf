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
use super::process::{interrupted, ChildGuard};
use super::record::Direction;
use super::sample::{read_json, GuestSample};
use crate::results::lab::timing::{self, Stopwatch};
use crate::results::lab::{CacheCounters, WallStep};

/// For the iperf3 server to listen, and to exit after its one test.
const SERVER_TIMEOUT: Duration = Duration::from_secs(15);
/// iperf3's port in the server's namespace.
pub const IPERF_PORT: u16 = 5201;
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
    pub model: Option<(CacheCounters, CacheCounters)>,
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
/// (`--reverse` when the direction is WAN → LAN: the server sends); the
/// reports are kept as `<prefix>-client.json` and `<prefix>-server.json`
/// in `dir`.
pub fn run(
    router: &mut dyn Testbed,
    (client, server): (&str, &str),
    direction: Direction,
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
    let mut server = watch.time(timing::SERVER_START, || -> Result<ChildGuard> {
        let mut server = ChildGuard::spawn_split(
            server,
            "iperf3 server",
            &file("server.json"),
            &file("server.stderr"),
        )?;
        let table = if server_ip.contains(':') { TCP6 } else { TCP };
        wait_listening(
            (&server_netns, table),
            IPERF_PORT,
            &mut server,
            SERVER_TIMEOUT,
        )?;
        Ok(server)
    })?;
    let before = watch.time(timing::SAMPLE_BEFORE, || router.sample(SamplePoint::Before))?;
    // The model's counters after the guest's own sampling commands, and
    // (below) before the next ones: the traffic alone.
    let model_before = router_model(&mut watch, router, timing::MODEL_BEFORE)?;
    let mut client = Command::new("ip");
    client
        .args(["netns", "exec", &client_netns, "iperf3", "--client"])
        .arg(&server_ip)
        .args(["--port", &port, "--time", &seconds.to_string(), "--json"])
        .args(["--connect-timeout", "5000"]);
    if direction == Direction::WanToLan {
        client.arg("--reverse");
    }
    let limit = Duration::from_secs(u64::from(seconds) + STALL_SECONDS);
    let waited = watch.time(timing::CLIENT, || -> Result<_> {
        let mut client = ChildGuard::spawn_split(
            client,
            "iperf3 client",
            &file("client.json"),
            &file("client.stderr"),
        )?;
        Ok(client.wait_while(limit, || router.check_alive()))
    })?;
    let status = match waited {
        Ok(status) => status,
        Err(e) if interrupted() => return Err(e),
        // The router is gone (QEMU exited): `e` says so, with its log.
        Err(e) if router.check_alive().is_err() => return Err(e),
        Err(e) => {
            return Err(e.context(format!(
                "the {} run stalled (a NIC that stops moving packets?)\n{}",
                direction.name(),
                router.diagnostics()
            )))
        }
    };
    let client = read_json(&file("client.json"))?;
    if !status.success() {
        let stderr = std::fs::read_to_string(file("client.stderr")).unwrap_or_default();
        bail!(
            "iperf3 {} failed ({status}): {}{stderr}\n{}",
            direction.name(),
            client.get("error").and_then(|e| e.as_str()).unwrap_or(""),
            router.diagnostics()
        );
    }
    let model_after = router_model(&mut watch, router, timing::MODEL_AFTER)?;
    let after = watch.time(timing::SAMPLE_AFTER, || router.sample(SamplePoint::After))?;
    watch
        .time(timing::SERVER_EXIT, || server.wait(SERVER_TIMEOUT))
        .context("waiting for the iperf3 server to finish")?;
    let server = read_json(&file("server.json"))?;
    Ok(RunOutput {
        before,
        after,
        model: model_before.zip(model_after),
        client,
        server,
        steps: watch.into_steps(),
    })
}

/// The cache model's counters, timed as `step` when the router has a
/// model (a run without one records no such step).
fn router_model(
    watch: &mut Stopwatch,
    router: &mut dyn Testbed,
    step: &str,
) -> Result<Option<CacheCounters>> {
    let mut timed = Stopwatch::default();
    let counters = timed.time(step, || router.model_counters())?;
    if counters.is_some() {
        watch.extend(timed);
    }
    Ok(counters)
}
