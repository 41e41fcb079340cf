//! The runs' progress on stderr: a bar on a terminal, and `[run i/N,
//! ETA …]` after every run's line elsewhere (a log file). Both give the
//! same ETA, [`eta`]: the mean wall time of the runs so far, boots
//! included, times the runs left; `unknown` before the first run ends.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bar's line. Its ETA is [`eta`]'s (`{msg}`), set after each run:
/// indicatif's own `{eta}` extrapolates the rate of recent steps, which
/// read `ETA 0s` at 0 of 24 runs and `ETA 10d` … `2d` while the first
/// guests booted.
const BAR: &str = "lab [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, ETA {msg}";

/// A bar of `total` runs, and the clock of its ETA.
pub(super) struct Progress {
    pub(super) bar: ProgressBar,
    total: std::cell::Cell<u64>,
    done: std::cell::Cell<u64>,
    pub(super) started: Instant,
}

impl Progress {
    /// A bar on stderr when it is a terminal, else lines in the log.
    pub(super) fn new(total: u64) -> Progress {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Progress::to(target, total)
    }

    /// A bar of `total` runs drawn on `target` (hidden: lines instead).
    pub(super) fn to(target: ProgressDrawTarget, total: u64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), target);
        bar.set_style(
            ProgressStyle::with_template(BAR)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_message(eta(Duration::ZERO, 0, total));
        Progress {
            bar,
            total: std::cell::Cell::new(total),
            done: std::cell::Cell::new(0),
            started: Instant::now(),
        }
    }

    /// Prints `line` above the bar.
    pub(super) fn println(&self, line: &str) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// `n` more runs than planned (a stalled run redone after a boot).
    pub(super) fn add(&self, n: u64) {
        self.total.set(self.total.get() + n);
        self.bar.inc_length(n);
    }

    /// Counts one run done and prints its `line`.
    pub(super) fn done(&self, line: &str) {
        let done = self.done.get() + 1;
        self.done.set(done);
        let eta = eta(self.started.elapsed(), done, self.total.get());
        self.bar.set_message(eta.clone());
        self.bar.inc(1);
        if self.bar.is_hidden() {
            eprintln!("{line} [run {done}/{}, ETA {eta}]", self.total.get());
        } else {
            self.bar.println(line);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// The time left when `done` of `total` runs took `elapsed`, as
/// humantime writes it to the second (`4m 10s`); `unknown` before the
/// first run.
pub(super) fn eta(elapsed: Duration, done: u64, total: u64) -> String {
    if done == 0 {
        return "unknown".to_string();
    }
    let left = elapsed.as_secs_f64() / done as f64 * total.saturating_sub(done) as f64;
    humantime::format_duration(Duration::from_secs(left.round() as u64)).to_string()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use indicatif::TermLike;

    use super::*;

    #[test]
    fn the_eta_is_the_mean_run_time_times_the_runs_left() {
        let s = Duration::from_secs;
        assert_eq!(eta(s(60), 0, 10), "unknown");
        assert_eq!(eta(s(60), 2, 10), "4m");
        assert_eq!(eta(s(25), 4, 10), "38s");
        assert_eq!(eta(s(60), 10, 10), "0s");
    }

    /// A terminal that keeps what is written on it.
    #[derive(Debug, Clone, Default)]
    struct Screen(Arc<Mutex<Vec<String>>>);

    impl Screen {
        /// The last line the bar drew.
        fn last(&self) -> String {
            let lines = self.0.lock().unwrap();
            lines
                .iter()
                .rev()
                .find(|l| l.starts_with("lab ["))
                .cloned()
                .unwrap_or_default()
        }
    }

    impl TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push(s.to_string());
            Ok(())
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.write_line(s)
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The bar read `ETA 0s` at 0 of 24 runs, and days while the first
    /// guests booted (indicatif's rate of recent steps); now it says
    /// `unknown` until a run ends, then the runs' mean time (boots
    /// included) times the runs left, as the log lines do.
    #[test]
    fn the_bar_s_eta_is_unknown_before_the_first_run_then_the_runs_mean() {
        let screen = Screen::default();
        let mut p = Progress::to(ProgressDrawTarget::term_like(Box::new(screen.clone())), 24);
        p.bar.force_draw();
        let first = screen.last();
        assert!(
            first.contains("0/24 runs") && first.ends_with("ETA unknown"),
            "{first}"
        );
        // The first run ends a minute after the lab started (a boot and a
        // warm-up): 23 runs left at a minute each.
        p.started = Instant::now() - Duration::from_secs(60);
        p.done("baseline (warm-up) round 1 of 4 …");
        p.bar.force_draw();
        let after = screen.last();
        assert!(
            after.contains("1/24 runs") && after.ends_with("ETA 23m"),
            "{after}"
        );
    }
}
