//! Forwarding through a router as a [`Workload`]: each run is iperf3
//! from one endpoint to another through the testbed (QEMU booted the
//! arm's kernel on its topology, [`super::session`], or a real router was
//! flashed with it over SSH, [`super::ssh`]) in one direction with GRO on
//! or off, giving Mbit/s and the router's CPU time per forwarded packet
//! (ns/packet), and with the cache model ([`super::cache_model`])
//! instructions and modelled L1 I- and D-cache misses per forwarded
//! packet, and on a target with `[lab.timing]` the core model's cycles,
//! packets/s and Mbit/s at the SoC's clock ([`Testbed::model_timing`]). The server must see the client as the path makes it: the
//! router's masquerade address, or the client's own.

use std::path::Path;

use anyhow::{bail, Result};

use super::backend::Testbed;
use super::iperf;
use super::request::LabRequest;
use super::runner::{Plan, RunSpec};
use super::sample::{iperf_peer, iperf_summary, GuestWork};
use super::workload::{Place, Workload};
use crate::results::lab::core_model::mean_frame_bytes;
use crate::results::lab::timing::{self, Stopwatch};
use crate::results::lab::{CacheRun, GuestRun, IperfOptions};
use crate::results::lab::{Condition, LabMetric, MetricValue, RunRecord, Settings};
use crate::results::now_rfc3339;

/// iperf3 from endpoint `client` to endpoint `server` through the router
/// (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forwarding {
    /// The endpoint iperf3's client runs in (`lan`).
    pub client: String,
    /// The endpoint iperf3's server runs in (`wan`).
    pub server: String,
    /// iperf3's streams and MSS.
    pub iperf: IperfOptions,
}

impl Forwarding {
    /// The lab's forwarding workload: from `lan` to `wan`, one stream.
    pub fn lan_to_wan() -> Forwarding {
        Forwarding::between("lan", "wan")
    }

    /// From endpoint `client` to endpoint `server`, one stream.
    pub fn between(client: &str, server: &str) -> Forwarding {
        Forwarding {
            client: client.to_string(),
            server: server.to_string(),
            iperf: IperfOptions::default(),
        }
    }

    /// The same with iperf3's `options` (`-P`, `-M`).
    pub fn with_iperf(self, options: IperfOptions) -> Forwarding {
        Forwarding {
            iperf: options,
            ..self
        }
    }
}

/// The plan of `request`: each direction with each GRO setting, as the
/// lab always ran them, after a LAN → WAN warm-up with the first setting.
pub fn plan(request: &LabRequest) -> Plan {
    let gro = request.gro_settings();
    let directions = request.directions();
    let conditions = directions
        .iter()
        .copied()
        .flat_map(|direction| {
            gro.iter()
                .map(move |&gro| Condition::Forward { direction, gro })
        })
        .collect();
    Plan {
        runs: request.runs,
        duration_seconds: request.duration_seconds,
        warmup: Condition::Forward {
            direction: directions[0],
            gro: gro[0],
        },
        conditions,
    }
}

/// `lab.json`'s settings of a forwarding lab of `request` based on `base`.
pub fn settings(request: &LabRequest, base: &str) -> Settings {
    Settings {
        runs: request.runs,
        duration_seconds: request.duration_seconds,
        gro: request.gro_settings(),
        directions: request.directions(),
        warmup_runs_per_boot: 1,
        base: base.to_string(),
        control: request.control,
        benches: Vec::new(),
        iperf3: request.iperf,
        labs_at_once: None,
        options: request.options.clone(),
    }
}

impl Workload for Forwarding {
    fn describe(&self) -> String {
        let options = match self.iperf.describe() {
            o if o.is_empty() => o,
            o => format!(" {o}"),
        };
        format!(
            "iperf3{options} from endpoint {} to endpoint {} through the router (-R for {} to {}), GRO switched per run",
            self.client,
            self.server,
            self.server.to_uppercase(),
            self.client.to_uppercase()
        )
    }

    fn places(&self) -> Vec<Place> {
        vec![
            Place::Endpoint(self.client.clone()),
            Place::Endpoint(self.server.clone()),
        ]
    }

    fn run(&self, router: &mut dyn Testbed, run: RunSpec<'_>, dir: &Path) -> Result<RunRecord> {
        let Condition::Forward { direction, gro } = run.condition else {
            bail!(
                "a router lab measures forwarding, not {}",
                run.condition.describe()
            );
        };
        let mut watch = Stopwatch::default();
        watch.time(timing::GRO, || router.set_gro(gro))?;
        let started = now_rfc3339();
        let prefix = format!("run{:03}", run.index);
        let ends = (self.client.as_str(), self.server.as_str());
        let out = iperf::run(
            router,
            ends,
            (direction, self.iperf),
            run.seconds,
            (dir, &prefix),
        )?;
        let mut wall_steps = watch.into_steps();
        wall_steps.extend(out.steps.iter().cloned());
        let summary = iperf_summary(&out.client)?;
        let peer = iperf_peer(&out.server);
        let ends = router.endpoints();
        let seen = peer
            .as_deref()
            .and_then(|p| p.parse::<std::net::IpAddr>().ok());
        match ends.masquerade {
            Some(expected) if seen != Some(expected) => bail!(
                "the WAN side saw the client as {peer:?}, not as the router's {expected}: \
                 the masquerade did not happen\n{}",
                router.diagnostics()
            ),
            None if seen != Some(ends.address(&self.client)?) => bail!(
                "the server saw the client as {peer:?}, not as endpoint {}'s own {}: \
                 something on the path translated it\n{}",
                self.client,
                ends.address(&self.client)?,
                router.diagnostics()
            ),
            _ => {}
        }
        let work = GuestWork::between(&out.before, &out.after);
        let mut metrics = vec![MetricValue::new(LabMetric::Throughput, summary.mbit_per_s)];
        if let Some(rate) = self.iperf.udp_mbit {
            let Some(lost) = summary.lost_percent else {
                bail!(
                    "iperf3's UDP report ({}-client.json, --udp {rate}) has no \
                     end.sum_received.lost_percent: iperf3 before 3.9 leaves it out; \
                     install Debian's iperf3 (cargo xtask setup)",
                    prefix
                );
            };
            metrics.push(MetricValue::new(LabMetric::UdpLost, lost));
        }
        // On more than one CPU QEMU runs without -icount: the guest's
        // busy time is the host's, not a path length (docs/lab-multicore.md).
        if let Some(ns) = work.ns_per_packet.filter(|_| router.cpus() == 1) {
            metrics.push(MetricValue::new(LabMetric::CpuPerPacket, ns));
        }
        if let Some(counts) = &out.router_counters {
            metrics.extend(crate::results::lab::router::router_counter_metrics(
                counts,
                work.packets,
            ));
        }
        let frame_bytes = mean_frame_bytes(&out.before, &out.after);
        let cache_model = out
            .model
            .map(|(before, after)| CacheRun::of_snapshots(&before, &after, work.packets))
            .transpose()?
            .map(|c| match router.model_timing() {
                Some(t) => c.with_timing(t, frame_bytes),
                None => Ok(c),
            })
            .transpose()?;
        if let Some(c) = &cache_model {
            let w = &c.work;
            for (metric, value) in [
                (LabMetric::InsnsPerPacket, w.insns_per_packet),
                (LabMetric::L1iMissesPerPacket, w.l1i_misses_per_packet),
                (LabMetric::L1dMissesPerPacket, w.l1d_misses_per_packet),
            ] {
                metrics.extend(value.map(|v| MetricValue::new(metric, v)));
            }
            metrics.extend(c.core.iter().flat_map(|core| core.metrics()));
            metrics.extend(crate::results::lab::per_cpu::metrics(&c.cpus));
        }
        Ok(RunRecord {
            guest: Some(GuestRun {
                guest_before: out.before,
                guest_after: out.after,
                guest_work: work,
                server_saw_peer: peer,
            }),
            iperf3_client: Some(out.client),
            cache_model,
            wall_steps,
            ..run.record(started, metrics)
        })
    }
}
