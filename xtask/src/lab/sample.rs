//! What one run measures: the guest's counters before and after
//! ([`GuestSample`], from [`super::guest::sample_script`]; the type lives in
//! [`crate::results::lab`] with the rest of `lab.json`), and iperf3's JSON
//! report; and the two metrics derived from them.
//!
//! * Throughput, Mbit/s: iperf3's `end.sum_received.bits_per_second`
//!   (what the receiver got) / 10^6.
//! * UDP runs: the datagrams lost, %: `end.sum_received.lost_percent`
//!   (iperf3 3.9 and later put the receiver's sums in the client's report).
//! * Guest CPU time per forwarded packet, ns/packet: the guest's busy time
//!   (every `/proc/stat` CPU field but idle and iowait, in USER_HZ ticks of
//!   10 ms) over the packets its two NICs received, during the run. Under
//!   `-icount` guest time counts instructions, so this is a path-length
//!   proxy that host load does not disturb; it cannot see cache or layout
//!   effects.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

pub use crate::results::lab::{GuestSample, GuestWork, NicCounters, USER_HZ};

/// What the lab reads from iperf3's `--json` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IperfSummary {
    /// Receiver's throughput in Mbit/s.
    pub mbit_per_s: f64,
    /// Bytes the receiver got.
    pub bytes_received: u64,
    /// TCP retransmissions the sender saw.
    pub retransmits: Option<u64>,
    /// UDP datagrams the receiver missed, in percent (`None` for TCP).
    pub lost_percent: Option<f64>,
}

/// Reads the client's report; an iperf3 `error` field is an error.
pub fn iperf_summary(report: &serde_json::Value) -> Result<IperfSummary> {
    if let Some(e) = report.get("error").and_then(|e| e.as_str()) {
        bail!("iperf3 reported: {e}");
    }
    let received = report
        .pointer("/end/sum_received")
        .context("iperf3's report has no end.sum_received")?;
    let bps = received
        .get("bits_per_second")
        .and_then(|v| v.as_f64())
        .context("iperf3's report has no end.sum_received.bits_per_second")?;
    Ok(IperfSummary {
        mbit_per_s: bps / 1e6,
        bytes_received: received.get("bytes").and_then(|v| v.as_u64()).unwrap_or(0),
        retransmits: report
            .pointer("/end/sum_sent/retransmits")
            .and_then(|v| v.as_u64()),
        lost_percent: received.get("lost_percent").and_then(|v| v.as_f64()),
    })
}

/// Reads an iperf3 `--json` report from `path`.
pub fn read_json(path: &std::path::Path) -> Result<serde_json::Value> {
    let limit = crate::util::fs::FileLimit {
        what: "iperf3 report",
        max_bytes: crate::util::fs::MAX_RECORD_BYTES,
    };
    let text = crate::util::fs::read_limited(path, limit, "run the lab again")?;
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not iperf3 JSON:\n{text}", path.display()))
}

/// The address the iperf3 server saw its client connect from (after the
/// router's masquerade, the guest's WAN address).
pub fn iperf_peer(server_report: &serde_json::Value) -> Option<String> {
    server_report
        .pointer("/start/connected/0/remote_host")
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf_reports() {
        let client: serde_json::Value = serde_json::from_str(
            r#"{"end":{"sum_received":{"bits_per_second":41500000.0,"bytes":10375000},
                "sum_sent":{"retransmits":3}}}"#,
        )
        .unwrap();
        let s = iperf_summary(&client).unwrap();
        assert_eq!(s.mbit_per_s, 41.5);
        assert_eq!(s.retransmits, Some(3));
        let failed: serde_json::Value =
            serde_json::from_str(r#"{"error":"unable to connect to server"}"#).unwrap();
        assert!(iperf_summary(&failed).is_err());
        let server: serde_json::Value =
            serde_json::from_str(r#"{"start":{"connected":[{"remote_host":"203.0.113.1"}]}}"#)
                .unwrap();
        assert_eq!(iperf_peer(&server).as_deref(), Some("203.0.113.1"));
    }
}
