//! Running `make` with its output kept in a log and shown as progress:
//! objects compiled (kbuild's `  CC`/`  AS` lines), elapsed time and, when
//! the number of objects to expect is known (a full build of a `.config`
//! built before, [`super::estimate`]), the total and an estimate of the
//! time left; or every line with `-v`.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use crate::util::cancel::Token;
use crate::util::process::{Ended, Limits, Output, Supervisor};

/// How many of the log's last lines a failure shows.
const TAIL_LINES: usize = 25;

/// Without a terminal (CI logs), a plain progress line this often.
const PLAIN_PROGRESS_EVERY: Duration = Duration::from_secs(30);

/// After asking a stopped `make` and its process group (sub-makes,
/// compilers) to terminate (SIGTERM), how long to wait before killing
/// the group.
const TERMINATE_GRACE: Duration = Duration::from_secs(20);

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
/// is stopped the command's process group gets SIGTERM (then SIGKILL
/// after 20 s). Returns the number of objects compiled.
///
/// A non-zero exit is an error quoting the last lines of output and naming
/// the log file; a stop is an error saying so.
pub fn run_logged(
    command: Command,
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
    // Pipes, read line by line as they fill (the progress line counts
    // objects as they compile); SIGTERM on a stop reaches make's whole
    // process group (kbuild's sub-makes and the compilers), SIGKILL to
    // the group after the grace orphans nothing.
    let mut child = Supervisor::new(command, &program)
        .output(Output::Pipes)
        .grace(TERMINATE_GRACE)
        .spawn()?;
    let (stdout, stderr) = child.take_pipes().context("no output pipes")?;
    let readers: Vec<Box<dyn std::io::Read + Send>> = vec![Box::new(stdout), Box::new(stderr)];
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
    let ended = child.wait_until(&Limits::until_cancelled(&control.stop), || Ok(()))?;
    for t in threads {
        let _ = t.join();
    }
    bar.finish_and_clear();
    let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
    s.log
        .flush()
        .with_context(|| format!("writing {}", log.display()))?;
    let status = match ended {
        Ended::Exited(status) if status.success() || !control.is_stopped() => status,
        _ => bail!(
            "stopped (another job failed, or SIGINT/SIGTERM arrived); partial log: {}",
            log.display()
        ),
    };
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
