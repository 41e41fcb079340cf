//! Running `make` with its output kept in a log and shown as progress:
//! objects compiled (kbuild's `  CC`/`  AS` lines), elapsed time and, when
//! the number of objects to expect is known (a full build of a `.config`
//! built before, [`super::estimate`]), the total and an estimate of the
//! time left; or every line with `-v`.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::util::cancel::Token;

/// How many of the log's last lines a failure shows.
const TAIL_LINES: usize = 25;

/// Without a terminal (CI logs), a plain progress line this often.
const PLAIN_PROGRESS_EVERY: Duration = Duration::from_secs(30);

/// After asking a stopped `make` to terminate (SIGTERM, which make passes
/// on to the compilers it runs), how long to wait before killing it.
const TERMINATE_GRACE: Duration = Duration::from_secs(20);

/// How often a running command is checked for its exit and for a stop.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// What the jobs of one `build` run share: one progress line per running
/// command (an indicatif [`MultiProgress`]) and the cancellation token
/// ([`Token`]) that stops every command when one job fails or SIGINT or
/// SIGTERM arrives. Cloning shares both.
#[derive(Clone)]
pub struct RunControl {
    bars: MultiProgress,
    stop: Token,
    jobserver: Option<Arc<super::jobserver::Jobserver>>,
}

impl Default for RunControl {
    fn default() -> RunControl {
        RunControl {
            bars: MultiProgress::new(),
            stop: Token::new(),
            jobserver: None,
        }
    }
}

impl std::fmt::Debug for RunControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunControl")
            .field("stopped", &self.is_stopped())
            .finish_non_exhaustive()
    }
}

impl RunControl {
    /// Stops every command run with this control (now and later).
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Whether [`RunControl::stop`] was called or SIGINT/SIGTERM arrived
    /// ([`crate::util::cancel`]).
    pub fn is_stopped(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// The same control, its makes clients of `jobserver`.
    pub fn with_jobserver(&self, jobserver: Arc<super::jobserver::Jobserver>) -> RunControl {
        RunControl {
            jobserver: Some(jobserver),
            ..self.clone()
        }
    }

    /// The run's jobserver, if the scheduler made one.
    pub fn jobserver(&self) -> Option<&super::jobserver::Jobserver> {
        self.jobserver.as_deref()
    }

    /// Prints `line` on stderr above the progress lines.
    pub fn println(&self, line: &str) {
        if std::io::stderr().is_terminal() {
            let _ = self.bars.println(line);
        } else {
            eprintln!("{line}");
        }
    }
}

/// Whether a kbuild output line reports one compiled object.
pub fn is_object_line(line: &str) -> bool {
    ["  CC ", "  AS ", "  CC [M] "]
        .iter()
        .any(|p| line.starts_with(p))
}

struct Shared {
    log: std::io::LineWriter<std::fs::File>,
    tail: VecDeque<String>,
    objects: u64,
    last_plain: Instant,
}

/// Runs `command`, appending its stdout and stderr to `log`, showing
/// `label`, the number of objects compiled, the elapsed time and, with
/// `expected_objects`, the total and the estimated time left
/// ([`super::estimate::progress_message`]); or every line
/// when `verbose`. The progress line is one of `control`'s; when `control`
/// is stopped the command gets SIGTERM (then SIGKILL after
/// 20 s). Returns the number of objects compiled.
///
/// A non-zero exit is an error quoting the last lines of output and naming
/// the log file; a stop is an error saying so.
pub fn run_logged(
    mut command: Command,
    label: &str,
    log: &Path,
    verbose: bool,
    expected_objects: Option<u64>,
    control: &RunControl,
) -> Result<u64> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    let shared = Arc::new(Mutex::new(Shared {
        log: std::io::LineWriter::new(file),
        tail: VecDeque::with_capacity(TAIL_LINES),
        objects: 0,
        last_plain: Instant::now(),
    }));
    let plain = !verbose && !std::io::stderr().is_terminal();
    let started = Instant::now();
    let bar = if verbose {
        ProgressBar::hidden()
    } else {
        let bar = control.bars.add(ProgressBar::new_spinner());
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {prefix} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_prefix(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(250));
        bar
    };
    let program = format!("{:?}", command.get_program());
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    let readers: Vec<Box<dyn std::io::Read + Send>> = vec![
        Box::new(child.stdout.take().context("no stdout pipe")?),
        Box::new(child.stderr.take().context("no stderr pipe")?),
    ];
    let threads: Vec<_> = readers
        .into_iter()
        .map(|reader| {
            let shared = Arc::clone(&shared);
            let bar = bar.clone();
            let label = label.to_string();
            std::thread::spawn(move || {
                for line in BufReader::new(reader).lines() {
                    let Ok(line) = line else { break };
                    let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
                    let _ = writeln!(s.log, "{line}");
                    if is_object_line(&line) {
                        s.objects += 1;
                        let message = super::estimate::progress_message(
                            s.objects,
                            expected_objects,
                            started.elapsed(),
                        );
                        if plain && s.last_plain.elapsed() >= PLAIN_PROGRESS_EVERY {
                            s.last_plain = Instant::now();
                            eprintln!("{label}: {message}, {} s", started.elapsed().as_secs());
                        }
                        bar.set_message(message);
                    }
                    if s.tail.len() == TAIL_LINES {
                        s.tail.pop_front();
                    }
                    s.tail.push_back(line.clone());
                    drop(s);
                    if verbose {
                        eprintln!("{line}");
                    }
                }
            })
        })
        .collect();
    let status =
        wait_or_stop(&mut child, control).with_context(|| format!("waiting for {program}"))?;
    for t in threads {
        let _ = t.join();
    }
    bar.finish_and_clear();
    let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
    s.log
        .flush()
        .with_context(|| format!("writing {}", log.display()))?;
    if control.is_stopped() && !status.success() {
        bail!(
            "stopped (another job failed, or SIGINT/SIGTERM arrived); partial log: {}",
            log.display()
        );
    }
    if !status.success() {
        let tail: Vec<&str> = s.tail.iter().map(String::as_str).collect();
        bail!(
            "{program} failed ({status}); last lines:\n{}\nfull log: {}",
            tail.join("\n"),
            log.display()
        );
    }
    Ok(s.objects)
}

/// Waits for `child`; once `control` is stopped, sends it SIGTERM, and
/// SIGKILL when it is still running [`TERMINATE_GRACE`] later.
fn wait_or_stop(
    child: &mut std::process::Child,
    control: &RunControl,
) -> std::io::Result<std::process::ExitStatus> {
    let mut terminated: Option<Instant> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        match terminated {
            None if control.is_stopped() => {
                // make passes SIGTERM on to its children (kbuild's sub-makes
                // and the compilers); SIGKILL would orphan them.
                let _ = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                terminated = Some(Instant::now());
            }
            Some(at) if at.elapsed() > TERMINATE_GRACE => {
                child.kill()?;
                return child.wait();
            }
            _ => {}
        }
        std::thread::sleep(POLL_EVERY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_objects_and_reports_failure_with_the_log_tail() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("build.log");
        let sh = xshell::Shell::new().unwrap();
        let ok: Command = xshell::cmd!(sh, "printf '  CC      a.o\\n  LD      x\\n'").into();
        assert_eq!(
            run_logged(ok, "t", &log, false, None, &RunControl::default()).unwrap(),
            1
        );
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(text.lines().filter(|l| is_object_line(l)).count(), 1);
        let fail: Command = xshell::cmd!(sh, "sh -c 'echo boom >&2; exit 3'").into();
        let err = run_logged(fail, "t", &log, false, None, &RunControl::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("boom") && err.contains("build.log"), "{err}");
    }

    #[test]
    fn a_stop_terminates_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("build.log");
        let control = RunControl::default();
        let stopper = control.clone();
        let clock = Instant::now();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            stopper.stop();
        });
        let mut sleep = Command::new("sleep");
        sleep.arg("30");
        let err = run_logged(sleep, "t", &log, false, None, &control)
            .unwrap_err()
            .to_string();
        t.join().unwrap();
        assert!(err.contains("stopped"), "{err}");
        assert!(clock.elapsed() < Duration::from_secs(10), "not stopped");
    }
}
