//! A real `distccd` on 127.0.0.1 for checks on this machine: the
//! `--distcc` end-to-end test and `bench build` build through one and read
//! its log to prove it compiled the objects.
//!
//! The daemon listens on 127.0.0.1 only (`--listen`, `--allow`), on a port
//! the kernel picked as free, in its own process group
//! ([`crate::util::process::Supervisor`]); [`LocalDistccd`] stops the
//! whole group when dropped (SIGTERM, SIGKILL after 5 s), so an error or a
//! panic never leaves it running.

use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::distcc::Distcc;
use super::toolchain::find_in_path;
use crate::util::process::{Supervised, Supervisor, POLL};

/// The only address the daemon listens on and accepts.
pub const LOOPBACK: &str = "127.0.0.1";

/// How long the daemon has to start listening.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a stopped daemon has to exit before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A running `distccd` on [`LOOPBACK`], stopped (its whole process group)
/// on drop.
#[derive(Debug)]
pub struct LocalDistccd {
    /// Stopped (its group: SIGTERM, SIGKILL after [`STOP_GRACE`]) on drop.
    child: Supervised,
    log: PathBuf,
    port: u16,
    slots: usize,
}

impl LocalDistccd {
    /// Starts `distccd --no-detach` with `slots` compile slots, logging
    /// (`--log-level info`) to `dir/distccd-log/distccd.log`, and waits
    /// until it accepts connections.
    ///
    /// Errors: distccd is not installed (names the `distcc` package), it
    /// cannot start, or it does not listen within 10 s.
    pub fn start(dir: &Path, slots: usize) -> Result<LocalDistccd> {
        if find_in_path("distccd").is_none() || find_in_path("distcc").is_none() {
            bail!("distccd and distcc are not installed; run `apt-get install distcc`");
        }
        // distccd started as root drops to its own user before it opens
        // the log: the directory and the file must be writable by anyone.
        let logs = dir.join("distccd-log");
        std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
        std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o777))
            .with_context(|| format!("opening {} to distccd's user", logs.display()))?;
        let log = logs.join("distccd.log");
        std::fs::write(&log, "").with_context(|| format!("creating {}", log.display()))?;
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666))
            .with_context(|| format!("opening {} to distccd's user", log.display()))?;
        // A free port: bound by the kernel, then released for distccd.
        let port = TcpListener::bind((LOOPBACK, 0))
            .and_then(|l| l.local_addr())
            .context("finding a free port on 127.0.0.1")?
            .port();
        let mut command = Command::new("distccd");
        command
            .args(["--daemon", "--no-detach"])
            .args(["--allow", LOOPBACK, "--listen", LOOPBACK])
            .arg("--port")
            .arg(port.to_string())
            .arg(format!("--log-file={}", log.display()))
            .args(["--log-level", "info", "--jobs"])
            .arg(slots.to_string());
        let child = Supervisor::new(command, "distccd")
            .grace(STOP_GRACE)
            .spawn()?;
        let mut daemon = LocalDistccd {
            child,
            log,
            port,
            slots,
        };
        let started = std::time::Instant::now();
        while started.elapsed() < LISTEN_TIMEOUT {
            if TcpStream::connect((LOOPBACK, port)).is_ok() {
                return Ok(daemon);
            }
            if let Some(status) = daemon.child.try_status()? {
                bail!(
                    "distccd exited ({status}) before listening on {LOOPBACK}:{port}; see {}",
                    daemon.log.display()
                );
            }
            std::thread::sleep(POLL);
        }
        bail!(
            "distccd did not listen on {LOOPBACK}:{port} within {} s; see {}",
            LISTEN_TIMEOUT.as_secs(),
            daemon.log.display()
        )
    }

    /// Its process id, also its process group's.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `--distcc` for this daemon: `127.0.0.1:PORT/SLOTS`.
    pub fn hosts(&self) -> Distcc {
        Distcc::Hosts(format!("{LOOPBACK}:{}/{}", self.port, self.slots))
    }

    /// Its log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Its log so far.
    pub fn log(&self) -> Result<String> {
        crate::util::fs::read_limited(
            &self.log,
            crate::util::fs::FileLimit::log("distccd log"),
            "",
        )
        .context("reading distccd's log")
    }

    /// Stops it now (as dropping it does).
    pub fn stop(self) {}
}

/// What distccd's log says it did: objects compiled (`COMPILE_OK`) and
/// compiles that failed (`COMPILE_ERROR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DaemonCounts {
    /// Objects it compiled.
    pub compiled: usize,
    /// Compiles that failed.
    pub errors: usize,
}

/// Counts the job lines of a distccd log (`--log-level info`).
pub fn count_jobs(log: &str) -> DaemonCounts {
    DaemonCounts {
        compiled: log.matches(" COMPILE_OK ").count(),
        errors: log.matches("COMPILE_ERROR").count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_counts_compiled_objects_and_errors() {
        let log = "distccd[7] (dcc_job_summary) client: 127.0.0.1:4 COMPILE_OK exit:0 \
                   sig:0 core:0 ret:0 time:75ms arm-linux-gnueabi-gcc init/main.c\n\
                   distccd[7] (dcc_job_summary) client: 127.0.0.1:4 COMPILE_OK exit:0 \
                   sig:0 core:0 ret:0 time:15ms arm-linux-gnueabi-gcc init/version.c\n\
                   distccd[8] (dcc_job_summary) client: 127.0.0.1:4 COMPILE_ERROR exit:1\n";
        assert_eq!(
            count_jobs(log),
            DaemonCounts {
                compiled: 2,
                errors: 1
            }
        );
    }
}
