//! One cancellation token for every long step: kernel `make`s, QEMU,
//! iperf3, ssh, tbench.
//!
//! SIGINT (Ctrl-C) and SIGTERM (a CI timeout, `kill`) set one process-wide
//! flag once [`install_handler`] ran; this file is the only place that
//! installs a handler (`ctrlc`, with its `termination` feature). Every
//! [`Token`] sees that flag, and a token can also be cancelled on its own
//! ([`Token::cancel`]): a build run's token stops its other `make`s when
//! one job fails, without touching the rest of the process. The lab's wait
//! loops poll [`check`]; the builds' loops poll their run's token. Nothing
//! bridges one to the other: they are the same flag.
//!
//! The handler is installed only by commands whose loops poll the token
//! (`build`, `bench build`, `lab`, `bench lab`): elsewhere Ctrl-C keeps its
//! default meaning and ends the process at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};

use anyhow::{bail, Result};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static HANDLER: Once = Once::new();

/// Installs the SIGINT/SIGTERM handler that cancels every [`Token`] (once
/// per process; later calls do nothing). When another handler is already
/// installed, says so on stderr: the steps then stop only on their
/// deadlines and errors, and cleanup still runs.
pub fn install_handler() {
    HANDLER.call_once(|| {
        if let Err(e) = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst)) {
            eprintln!(
                "note: no SIGINT/SIGTERM handler ({e}); Ctrl-C may not stop the running steps cleanly"
            );
        }
    });
}

/// Whether SIGINT or SIGTERM arrived (after [`install_handler`]).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Fails once SIGINT or SIGTERM arrived.
pub fn check() -> Result<()> {
    if interrupted() {
        bail!("interrupted (Ctrl-C or SIGTERM); stopping and cleaning up");
    }
    Ok(())
}

/// A cancellation token: cancelled by SIGINT/SIGTERM (see the module
/// docs) or by its own [`Token::cancel`]. Clones share the second.
#[derive(Debug, Clone, Default)]
pub struct Token {
    own: Arc<AtomicBool>,
}

impl Token {
    /// A token cancelled only by the signals until [`Token::cancel`].
    pub fn new() -> Token {
        Token::default()
    }

    /// Cancels this token and its clones (not the process's others).
    pub fn cancel(&self) {
        self.own.store(true, Ordering::SeqCst);
    }

    /// Whether it was cancelled or a signal arrived.
    pub fn is_cancelled(&self) -> bool {
        self.own.load(Ordering::SeqCst) || interrupted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_cancelled_with_its_clones_and_alone() {
        let a = Token::new();
        let b = a.clone();
        let other = Token::new();
        assert!(!a.is_cancelled() && !other.is_cancelled());
        b.cancel();
        assert!(a.is_cancelled() && b.is_cancelled());
        assert!(!other.is_cancelled(), "another run's token stays");
    }
}
