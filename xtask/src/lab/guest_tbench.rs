//! tbench inside a guest as a [`Workload`]: each run starts `tbench_srv`
//! in the guest, waits until it listens, runs `tbench -t S N 127.0.0.1`
//! there, and stops the server: N clients against the server over the
//! **variant kernel's own loopback**, not this machine's. The metric is
//! tbench's `Throughput … MB/sec` ([`LabMetric::Tbench`], MB/s, parsed as the host
//! lab parses it: [`parse_tbench`]), and its `max_latency=… ms` is kept
//! beside it ([`LabMetric::TbenchMaxLatency`]).
//!
//! The guest has tbench, `tbench_srv` and tbench's loadfile
//! (`/usr/share/dbench/client.txt`): Debian's dbench package, or built
//! static from its source for a guest Debian has no port of
//! ([`super::static_guest`]). Under `-icount` the guest's clock counts
//! instructions, so MB/s is guest work per byte, which host load does not
//! move.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::backend::Testbed;
use super::host_lab::programs::{parse_tbench, TBENCH_PORT};
use super::runner::{Plan, RunSpec};
use super::workload::{Place, Workload};
use crate::results::lab::Benchmark;
use crate::results::lab::{Condition, LabMetric, MetricValue, RunRecord, Settings};
use crate::results::now_rfc3339;

/// What a run may take beyond its seconds: tbench reading its 26 MB
/// loadfile in an emulated guest, the server starting, its cleanup.
const SLACK: Duration = Duration::from_secs(120);
pub use super::request::option::{DEFAULT_CLIENTS, MAX_CLIENTS};

/// tbench with `clients` clients inside guest `guest` (see the module
/// docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestTbench {
    /// The guest it runs in (`router`).
    pub guest: String,
    /// tbench's client processes (`tbench N`), 1 to [`MAX_CLIENTS`].
    pub clients: u32,
}

impl GuestTbench {
    /// tbench with `clients` clients in `guest`; an error for 0 clients
    /// or more than [`MAX_CLIENTS`].
    pub fn new(guest: &str, clients: u32) -> Result<GuestTbench> {
        if !(1..=MAX_CLIENTS).contains(&clients) {
            bail!("--clients {clients}: tbench inside a guest runs 1 to {MAX_CLIENTS} clients");
        }
        Ok(GuestTbench {
            guest: guest.to_string(),
            clients,
        })
    }

    /// The benchmark each run is, as `lab.json` records it.
    pub fn bench(&self) -> Benchmark {
        Benchmark::Tbench {
            clients: self.clients,
        }
    }

    /// The schedule: `runs` rounds of one tbench run of
    /// `duration_seconds` per session, after a discarded warm-up run.
    pub fn plan(&self, runs: u32, duration_seconds: u32) -> Plan {
        let condition = Condition::Bench {
            bench: self.bench(),
        };
        Plan {
            runs,
            duration_seconds,
            warmup: condition,
            conditions: vec![condition],
        }
    }

    /// `lab.json`'s settings of a lab of this workload based on `base`:
    /// no GRO setting or direction, the benchmark.
    pub fn settings(&self, plan: &Plan, (base, control): (&str, bool)) -> Settings {
        Settings {
            runs: plan.runs,
            duration_seconds: plan.duration_seconds,
            gro: Vec::new(),
            directions: Vec::new(),
            warmup_runs_per_boot: 1,
            base: base.to_string(),
            control,
            benches: vec![self.bench()],
            iperf3: Default::default(),
            labs_at_once: None,
            options: Default::default(),
        }
    }

    /// The guest's one-line shell command of a run of `seconds`: the
    /// server in the background, a bounded wait (10 s in 0.1 s steps)
    /// until `/proc/net/tcp` lists it listening on [`TBENCH_PORT`], the
    /// client with its output in a file, the server stopped, the
    /// client's last lines printed and its status returned.
    pub fn command(&self, seconds: u32) -> String {
        let port = format!("{TBENCH_PORT:04X}");
        format!(
            "(cd /tmp || exit 1; tbench_srv > /tmp/xl-tbench_srv.log 2>&1 & s=$!; i=0; \
             until grep -qs ':{port} [0-9A-F]*:0000 0A ' /proc/net/tcp /proc/net/tcp6; do \
             i=$((i+1)); if [ $i -gt 100 ]; then echo 'tbench_srv is not listening on port {TBENCH_PORT} after 10 s:'; \
             cat /tmp/xl-tbench_srv.log; kill $s; exit 1; fi; usleep 100000; done; \
             tbench -t {seconds} {clients} 127.0.0.1 > /tmp/xl-tbench.log 2>&1; r=$?; \
             kill $s; wait $s; tail -n 25 /tmp/xl-tbench.log; exit $r)",
            clients = self.clients
        )
    }
}

/// tbench's `max_latency=14.674 ms` in its result `line`, in ms; `None`
/// when the line has none.
pub fn max_latency_ms(line: &str) -> Option<f64> {
    let rest = line.split("max_latency=").nth(1)?;
    let value: f64 = rest.split_whitespace().next()?.parse().ok()?;
    (value.is_finite() && value >= 0.0).then_some(value)
}

impl Workload for GuestTbench {
    fn describe(&self) -> String {
        format!(
            "tbench, {} client{}, against tbench_srv inside guest {} over its own loopback (the variant kernel's), MB/s",
            self.clients,
            if self.clients == 1 { "" } else { "s" },
            self.guest
        )
    }

    fn places(&self) -> Vec<Place> {
        vec![Place::Guest(self.guest.clone())]
    }

    fn run(&self, bed: &mut dyn Testbed, run: RunSpec<'_>, dir: &Path) -> Result<RunRecord> {
        if run.condition
            != (Condition::Bench {
                bench: self.bench(),
            })
        {
            bail!(
                "tbench in guest {} runs {}, not {}",
                self.guest,
                self.bench().title(),
                run.condition.describe()
            );
        }
        let started = now_rfc3339();
        let timeout = Duration::from_secs(u64::from(run.seconds)) + SLACK;
        let output = bed
            .guest_shell(&self.guest, &self.command(run.seconds), timeout)
            .with_context(|| format!("tbench in guest {}", self.guest))?;
        let log = dir.join(format!("run{:03}-tbench.log", run.index));
        std::fs::write(&log, &output).with_context(|| format!("writing {}", log.display()))?;
        let (mb_per_s, line) = parse_tbench(&output, self.clients).with_context(|| {
            format!(
                "tbench in guest {} (its output: {})",
                self.guest,
                log.display()
            )
        })?;
        let mut metrics = vec![MetricValue::new(LabMetric::Tbench, mb_per_s)];
        if let Some(ms) = max_latency_ms(&line) {
            metrics.push(MetricValue::new(LabMetric::TbenchMaxLatency, ms));
        }
        Ok(run.record(started, metrics))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::lab::backend::Endpoints;
    use crate::results::lab::{Arm, Direction, Gro};

    /// tbench 4.0's output at the end of a run (dbench's `tbench -t 3 2
    /// 127.0.0.1`), after the lines each second.
    const OUTPUT: &str = "   2     12709   585.21 MB/sec  execute   2 sec  latency 9.117 ms\n\
        Operation                Count    AvgLat    MaxLat\n\
        Throughput 579.361 MB/sec  2 clients  2 procs  max_latency=14.674 ms\n";

    /// A guest that answers every command with `output` and `status`,
    /// recording what it was asked.
    struct FakeGuest {
        output: String,
        ok: bool,
        asked: Vec<(String, String, Duration)>,
        endpoints: Endpoints,
    }

    impl Testbed for FakeGuest {
        fn endpoints(&self) -> &Endpoints {
            &self.endpoints
        }

        fn guest_shell(&mut self, guest: &str, command: &str, timeout: Duration) -> Result<String> {
            self.asked
                .push((guest.to_string(), command.to_string(), timeout));
            if !self.ok {
                bail!(
                    "`{command}` failed in the guest (exit status 1):\n{}",
                    self.output
                );
            }
            Ok(self.output.clone())
        }

        fn settings_read_back(&mut self) -> Result<BTreeMap<String, BTreeMap<String, String>>> {
            Ok(BTreeMap::new())
        }
    }

    fn fake(output: &str, ok: bool) -> FakeGuest {
        FakeGuest {
            output: output.to_string(),
            ok,
            asked: Vec::new(),
            endpoints: Endpoints::default(),
        }
    }

    fn arm() -> Arm {
        Arm {
            name: "lo-no-tso-gso".into(),
            variant: "lo-no-tso-gso".into(),
            control: false,
            kernel: None,
            runtime: None,
            topology: None,
        }
    }

    fn spec(arm: &Arm, condition: Condition) -> RunSpec<'_> {
        RunSpec {
            arm,
            round: 1,
            index: 7,
            condition,
            warmup: false,
            seconds: 3,
        }
    }

    #[test]
    fn a_run_is_tbench_and_its_server_inside_the_guest() {
        let w = GuestTbench::new("router", 2).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut bed = fake(OUTPUT, true);
        let arm = arm();
        let condition = Condition::Bench { bench: w.bench() };
        let record = w.run(&mut bed, spec(&arm, condition), dir.path()).unwrap();
        let [(guest, command, timeout)] = bed.asked.as_slice() else {
            panic!("{:?}", bed.asked)
        };
        assert_eq!(guest, "router");
        assert_eq!(*timeout, Duration::from_secs(123));
        // The server first, ready when the kernel lists port 7003 (0x1B5B)
        // listening, then 2 clients for 3 s on the guest's own loopback.
        let srv = command.find("tbench_srv >").unwrap();
        let ready = command.find("':1B5B [0-9A-F]*:0000 0A '").unwrap();
        let client = command.find("tbench -t 3 2 127.0.0.1 >").unwrap();
        assert!(srv < ready && ready < client, "{command}");
        assert!(command.contains("kill $s"), "{command}");
        assert!(!command.contains('\n'), "{command}");
        let metrics: Vec<(&str, f64, &str)> = record
            .metrics
            .iter()
            .map(|m| (m.name.as_str(), m.value, m.unit.as_str()))
            .collect();
        assert_eq!(
            metrics,
            [
                ("tbench", 579.361, "MB/s"),
                ("tbench_max_latency", 14.674, "ms")
            ]
        );
        assert_eq!((record.index, record.round), (7, 1));
        assert_eq!(record.condition, condition);
        assert!(record.guest.is_none() && record.host.is_none());
        let log = std::fs::read_to_string(dir.path().join("run007-tbench.log")).unwrap();
        assert_eq!(log, OUTPUT);
    }

    #[test]
    fn a_failed_or_foreign_run_is_an_error() {
        let w = GuestTbench::new("router", 2).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let arm = arm();
        let ok = Condition::Bench { bench: w.bench() };
        // tbench for another client count, or no result line.
        let one = OUTPUT.replace("2 clients", "1 clients");
        let err = w.run(&mut fake(&one, true), spec(&arm, ok), dir.path());
        assert!(format!("{:#}", err.unwrap_err()).contains("not for 2 clients"));
        let err = w.run(
            &mut fake("tbench: no loadfile", false),
            spec(&arm, ok),
            dir.path(),
        );
        let msg = format!("{:#}", err.unwrap_err());
        assert!(
            msg.contains("tbench in guest router") && msg.contains("no loadfile"),
            "{msg}"
        );
        // A forwarding run is not tbench's.
        let forward = Condition::Forward {
            direction: Direction::LanToWan,
            gro: Gro::On,
        };
        let mut bed = fake(OUTPUT, true);
        assert!(w.run(&mut bed, spec(&arm, forward), dir.path()).is_err());
        assert!(bed.asked.is_empty());
        assert!(GuestTbench::new("router", 0).is_err());
        assert!(GuestTbench::new("router", MAX_CLIENTS + 1).is_err());
    }

    #[test]
    fn the_latency_is_tbench_s_own_figure() {
        assert_eq!(max_latency_ms(OUTPUT.lines().last().unwrap()), Some(14.674));
        assert_eq!(max_latency_ms("Throughput 5 MB/sec  1 clients"), None);
    }
}
