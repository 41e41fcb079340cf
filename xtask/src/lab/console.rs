//! The guest's serial console on a unix socket: everything it prints goes
//! to a log file (kept with the lab results) and to a buffer the host
//! searches; the host runs commands in the guest's shell through it.
//!
//! A command is framed by markers the shell prints (`XL-BEGIN-<n>`,
//! `XL-END-<n> <status>`), written split by `""` in the command so that the
//! terminal's echo of the command line never matches them.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::process::{last_lines, tick, Supervised};

/// Lines of console output quoted in error messages.
pub const TAIL_LINES: usize = 25;

/// A connected console.
pub struct Console {
    stream: UnixStream,
    buffer: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
    log: PathBuf,
    serial: u32,
}

impl Console {
    /// Connects to QEMU's console socket `path` (QEMU listens there with
    /// `server=on,wait=on` and starts the guest once connected), retrying
    /// until `timeout`; copies everything the guest prints to `log`.
    pub fn connect(
        path: &Path,
        log: &Path,
        qemu: &mut Supervised,
        timeout: Duration,
    ) -> Result<Console> {
        let deadline = Instant::now() + timeout;
        let stream = loop {
            match UnixStream::connect(path) {
                Ok(s) => break s,
                Err(e) => {
                    if let Some(status) = qemu.try_status()? {
                        bail!("QEMU exited ({status}) before its console socket was ready");
                    }
                    if Instant::now() >= deadline {
                        return Err(e).with_context(|| {
                            format!(
                                "connecting to QEMU's console socket {} within {} s",
                                path.display(),
                                timeout.as_secs()
                            )
                        });
                    }
                    tick()?;
                }
            }
        };
        let mut file =
            std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let mut reading = stream
            .try_clone()
            .context("cloning the console socket for reading")?;
        let shared = Arc::clone(&buffer);
        // The reader ends when QEMU closes the socket (EOF or error).
        let reader = std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = reading.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                let _ = file.write_all(&chunk[..n]);
                if let Ok(mut b) = shared.lock() {
                    b.extend_from_slice(&chunk[..n]);
                }
            }
        });
        Ok(Console {
            stream,
            buffer,
            reader: Some(reader),
            log: log.to_path_buf(),
            serial: 0,
        })
    }

    /// Everything printed so far, `\r` removed.
    pub fn text(&self) -> String {
        let bytes = self.buffer.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).replace('\r', "")
    }

    /// The last [`TAIL_LINES`] lines, for error messages, with the log's path.
    pub fn tail(&self) -> String {
        format!(
            "last console lines ({}):\n{}",
            self.log.display(),
            last_lines(&self.text(), TAIL_LINES)
        )
    }

    /// Waits until the output after byte `from` contains a line containing
    /// one of `patterns`; returns that line. Fails when `qemu` exits or
    /// `timeout` passes, quoting the console's last lines.
    pub fn wait_for_line(
        &self,
        from: usize,
        patterns: &[&str],
        qemu: &mut Supervised,
        timeout: Duration,
        what: &str,
    ) -> Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let text = self.text();
            let new = text.get(from..).unwrap_or("");
            // Only complete lines count.
            let complete = &new[..new.rfind('\n').map_or(0, |i| i + 1)];
            if let Some(line) = complete
                .lines()
                .find(|l| patterns.iter().any(|p| l.contains(p)))
            {
                return Ok(line.to_string());
            }
            if let Some(status) = qemu.try_status()? {
                bail!("QEMU exited ({status}) while {what}; {}", self.tail());
            }
            if Instant::now() >= deadline {
                return Err(anyhow::Error::msg(NoAnswer(format!(
                    "no answer within {} s while {what}; {}",
                    timeout.as_secs(),
                    self.tail()
                ))));
            }
            tick()?;
        }
    }

    /// Runs `command` (one line, no newline) in the guest's shell and
    /// returns what it printed and its exit status.
    pub fn run(
        &mut self,
        command: &str,
        qemu: &mut Supervised,
        timeout: Duration,
    ) -> Result<(String, i32)> {
        anyhow::ensure!(
            !command.contains('\n'),
            "console commands are one line: {command:?}"
        );
        self.serial += 1;
        let n = self.serial;
        let from = self.text().len();
        let line = format!("echo XL-B\"\"EGIN-{n}; {command}; echo XL-E\"\"ND-{n} $?\n");
        self.stream
            .write_all(line.as_bytes())
            .context("writing to the guest's console")?;
        let begin = format!("XL-BEGIN-{n}");
        let end = format!("XL-END-{n} ");
        let what = format!("running `{command}` in the guest");
        self.wait_for_line(from, &[&end], qemu, timeout, &what)?;
        let text = self.text();
        let new = &text[from..];
        let start = new
            .find(&format!("{begin}\n"))
            .map(|i| i + begin.len() + 1)
            .with_context(|| format!("no {begin} marker while {what}; {}", self.tail()))?;
        let stop = new[start..]
            .find(&end)
            .map(|i| start + i)
            .with_context(|| format!("no {end} marker while {what}"))?;
        let status = new[stop + end.len()..]
            .lines()
            .next()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(-1);
        Ok((new[start..stop].to_string(), status))
    }

    /// Like [`Console::run`], failing when the status is not 0.
    pub fn check(
        &mut self,
        command: &str,
        qemu: &mut Supervised,
        timeout: Duration,
    ) -> Result<String> {
        let (out, status) = self.run(command, qemu, timeout)?;
        if status != 0 {
            bail!("`{command}` failed in the guest (exit status {status}):\n{out}");
        }
        Ok(out)
    }
}

/// The error of [`Console::wait_for_line`] when the guest printed nothing
/// it waited for within its time while QEMU still ran: a guest that hangs
/// (a boot that stops after `/init` started on two CPUs did) rather than
/// one that failed.
#[derive(Debug)]
pub struct NoAnswer(pub String);

impl std::fmt::Display for NoAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}
