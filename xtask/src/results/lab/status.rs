//! Where a lab run is ([`Status`]): running (with the lab's process id, so
//! that a later look can tell a live lab from one that was killed),
//! complete, or failed with the reason.

use std::fmt;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// A lab run's state, as `lab.json` records it (`"status": {"state":
/// "running", "pid": 4242}`; schema 1 wrote a string, read by
/// [`Status::from_schema1`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum Status {
    /// The lab was running when it last wrote the file: it still runs, or
    /// it was killed (SIGKILL, a power cut) before it could say otherwise.
    Running {
        /// The lab's process id; `None` in schema-1 files, which did not
        /// record it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pid: Option<u32>,
    },
    /// Every planned run ran.
    Complete,
    /// The lab stopped on an error (or Ctrl-C) after the runs it recorded.
    Failed {
        /// The error, with its causes (`anyhow`'s `{:#}`).
        reason: String,
    },
}

impl Status {
    /// Running, in this process.
    pub fn running_here() -> Status {
        Status::Running {
            pid: Some(std::process::id()),
        }
    }

    /// Whether every planned run ran.
    pub fn is_complete(&self) -> bool {
        *self == Status::Complete
    }

    /// For a running lab, whether its process still runs: `Some(false)`
    /// when it was killed (its record will never complete), `None` when
    /// that cannot be told (another state, or no pid recorded). A pid
    /// reused by another process reads as alive.
    pub fn lab_alive(&self) -> Option<bool> {
        match self {
            Status::Running { pid: Some(pid) } => {
                Some(std::path::Path::new(&format!("/proc/{pid}")).exists())
            }
            _ => None,
        }
    }

    /// Schema 1's string: `running`, `complete` or `failed: <reason>`.
    pub fn from_schema1(s: &str) -> Result<Status> {
        Ok(match s {
            "running" => Status::Running { pid: None },
            "complete" => Status::Complete,
            _ => match s.strip_prefix("failed: ") {
                Some(reason) => Status::Failed {
                    reason: reason.to_string(),
                },
                None => bail!("status {s:?}: schema 1 has running, complete and failed: <reason>"),
            },
        })
    }
}

impl fmt::Display for Status {
    /// As schema 1 wrote it: `running`, `complete`, `failed: <reason>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Running { .. } => f.write_str("running"),
            Status::Complete => f.write_str("complete"),
            Status::Failed { reason } => write!(f, "failed: {reason}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_1_strings_read_and_print_back() {
        for s in ["running", "complete", "failed: interrupted (Ctrl-C)"] {
            assert_eq!(Status::from_schema1(s).unwrap().to_string(), s);
        }
        assert!(Status::from_schema1("done").is_err());
        let here = Status::running_here();
        assert_eq!(here.lab_alive(), Some(true));
        let json = serde_json::to_value(&here).unwrap();
        assert_eq!(json["state"], "running");
        assert_eq!(json["pid"], std::process::id());
        let failed = Status::Failed {
            reason: "boom".into(),
        };
        let back: Status = serde_json::from_value(serde_json::to_value(&failed).unwrap()).unwrap();
        assert_eq!(back, failed);
        assert_eq!(Status::Complete.lab_alive(), None);
    }
}
