//! A real router's own counters over each run's traffic: `perf stat -a`
//! (OpenWrt's `perf` package) counting [`EVENTS`] on every CPU while the
//! traffic runs, as cycles, instructions, branch misses and L1I misses per
//! forwarded packet ([`crate::results::lab::router::router_counter_metrics`]).
//!
//! perf runs `cat` as its workload over the ssh session, so it counts
//! until this side closes the session's input: no remote shell, no
//! background process, no signal to deliver over ssh. Its counts come on
//! standard error in perf's CSV (`-x ,`, tools/perf/Documentation/
//! perf-stat.txt, "CSV FORMAT"): `value,unit,event,run time,percent,…`,
//! with `<not supported>` or `<not counted>` for an event the core does
//! not expose, which records no metric.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::remote::Ssh;
use crate::results::lab::router::ROUTER_EVENTS as EVENTS;
use crate::util::process::{Limits, Supervised};

/// How long perf has to print its counts once its input ends.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// perf's version on the router (`perf version 6.6.73`), or `None` when
/// it has no `perf`.
pub fn version(ssh: &Ssh) -> Result<Option<String>> {
    let out = ssh.run(&["perf", "--version"])?;
    Ok(out
        .status
        .success()
        .then(|| out.stdout.trim().to_string())
        .filter(|v| !v.is_empty()))
}

/// `perf stat -a` counting on the router until [`Counting::stop`].
pub struct Counting {
    child: Supervised,
}

/// The words of the remote command.
fn words() -> Vec<String> {
    let events: Vec<&str> = EVENTS.iter().map(|(e, _)| *e).collect();
    ["perf", "stat", "-a", "-x", ",", "-e"]
        .iter()
        .map(|w| w.to_string())
        .chain([events.join(","), "--".to_string(), "cat".to_string()])
        .collect()
}

impl Counting {
    /// Starts counting on the router reached by `ssh`.
    pub fn start(ssh: &Ssh) -> Result<Counting> {
        let words = words();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        Ok(Counting {
            child: ssh.spawn_reading_input(&words)?,
        })
    }

    /// Ends the counting: each event's count by perf's name, the events
    /// the router's core counted.
    ///
    /// Errors: perf failed (its message), or printed no count.
    pub fn stop(mut self) -> Result<BTreeMap<String, u64>> {
        self.child.close_stdin();
        let status = self
            .child
            .wait(&Limits::within(STOP_TIMEOUT))
            .context("waiting for perf stat on the router")?;
        let (_, stderr) = self.child.captured()?;
        if !status.success() {
            bail!(
                "perf stat on the router failed ({status}): {}",
                crate::lab::process::last_lines(&stderr, 3)
            );
        }
        let counts = parse(&stderr)?;
        if counts.is_empty() {
            bail!(
                "perf stat on the router printed no count of {}: {}",
                EVENTS.map(|(e, _)| e).join(", "),
                crate::lab::process::last_lines(&stderr, 3)
            );
        }
        Ok(counts)
    }
}

/// The counts in perf's CSV output `text` (see the module docs), by
/// event; an event perf marks `<not supported>` or `<not counted>` is
/// left out.
///
/// Errors: a line of an asked event whose value is no number.
pub fn parse(text: &str) -> Result<BTreeMap<String, u64>> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(',').collect();
        let [value, _unit, event, ..] = fields[..] else {
            continue;
        };
        let event = event_name(event);
        let value = value.trim();
        if !EVENTS.iter().any(|(e, _)| *e == event) || value.starts_with('<') {
            continue;
        }
        let count: u64 = value
            .parse()
            .with_context(|| format!("perf stat's count of {event} is {value:?}"))?;
        // A hybrid core's PMUs (`cpu_core/cycles/`, `cpu_atom/cycles/`)
        // each count their share.
        let sum = counts.entry(event.to_string()).or_default();
        *sum = sum.saturating_add(count);
    }
    Ok(counts)
}

/// The event perf names in its CSV without its PMU or modifier:
/// `cycles:u`, `cpu/cycles/`, `armv7_cortex_a7/cycles/` → `cycles`.
fn event_name(event: &str) -> &str {
    let event = event.trim();
    let event = match event.split('/').collect::<Vec<_>>()[..] {
        [_pmu, name, ..] if !name.is_empty() => name,
        _ => event,
    };
    event.split(':').next().unwrap_or(event)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::lab::router::router_counter_metrics as metrics;

    /// perf 6.x's CSV on a core that counts three of the four events.
    #[test]
    fn counts_read_per_packet_and_unsupported_events_record_nothing() {
        let text = "\n2500000000,,cycles,4000123456,100.00,,\n\
                    1200000000,,instructions,4000123456,100.00,0.48,insn per cycle\n\
                    5000000,,branch-misses:u,4000123456,100.00,,\n\
                    <not supported>,,L1-icache-load-misses,0,100.00,,\n";
        let counts = parse(text).unwrap();
        assert_eq!(counts.len(), 3, "{counts:?}");
        assert_eq!(counts["branch-misses"], 5_000_000);
        let m = metrics(&counts, 1_000_000);
        let names: Vec<&str> = m.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "router_cycles_per_packet",
                "router_insns_per_packet",
                "router_branch_misses_per_packet"
            ]
        );
        assert_eq!(m[0].value, 2500.0);
        assert!(metrics(&counts, 0).is_empty());
        assert!(parse("abc,,cycles,1,100.00,,\n").is_err());
        // PMU-qualified names, a hybrid core's two PMUs summed, a marker
        // with a leading space, and nothing counted at all.
        let hybrid = "100,,cpu_core/cycles/,1,100.00,,\n200,,cpu_atom/cycles/,1,100.00,,\n\
                      7,,armv7_cortex_a7/instructions/,1,100.00,,\n \
                      <not counted>,,branch-misses,0,0.00,,\n";
        let counts = parse(hybrid).unwrap();
        assert_eq!(counts["cycles"], 300);
        assert_eq!(counts["instructions"], 7);
        assert!(!counts.contains_key("branch-misses"));
        assert!(parse("").unwrap().is_empty());
        // Every event word is one the remote shell takes literally.
        for w in words() {
            super::super::remote::check_remote_word(&w).unwrap();
        }
    }
}
