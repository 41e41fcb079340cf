//! ssh and scp to the router, as argv with fixed command words.
//!
//! ssh does not pass its command's argv through: it joins the words after
//! the destination with spaces into one string, which the router's login
//! shell (OpenWrt's ash, Debian's bash) parses again. So every remote
//! word is checked here ([`check_remote_word`]) to be one the shell takes
//! literally — no spaces, quotes, `$`, backquotes, `;`, `&`, `|`,
//! redirections, globs — and the words themselves are fixed command names
//! and paths plus names the lab file's checks already held to letters,
//! digits and `_ . - @`. Nothing is quoted, because nothing needs to be.
//!
//! Every call runs within a deadline (ssh's own `ConnectTimeout`, the
//! lab file's command and copy timeouts), stops on Ctrl-C, and is logged
//! with its output to the current log file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::inputs::ssh_lab::{Destination, Timeouts};
use crate::util::process::{Limits, Output, Supervised, Supervisor};

/// How the lab reaches the router.
#[derive(Debug, Clone)]
pub struct Ssh {
    /// Where it logs in.
    pub destination: Destination,
    /// `ssh -i`.
    pub identity: Option<PathBuf>,
    /// Checked `-o Key=Value` options.
    pub options: Vec<String>,
    /// The namespace ssh and scp run in (`ip netns exec`), if not the host's.
    pub netns: Option<String>,
    /// Bounds of the remote steps.
    pub timeouts: Timeouts,
    /// Where each call and its output are appended.
    pub log: Option<PathBuf>,
}

/// What a remote command did.
#[derive(Debug, Clone)]
pub struct Remote {
    /// ssh's exit status: the remote command's, or 255 when ssh itself
    /// failed (connection refused, dropped, timed out).
    pub status: ExitStatus,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error (and ssh's).
    pub stderr: String,
}

/// ssh's exit status when the connection, not the command, failed.
pub const SSH_FAILED: i32 = 255;

/// Fails unless `word` is one the remote shell takes literally: letters,
/// digits and `_ . / : = @ % + , -`, not empty (see the module docs).
pub fn check_remote_word(word: &str) -> Result<()> {
    let literal = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=@%+,-".contains(c));
    if !literal {
        bail!("refusing to send {word:?} to the router's shell: only plain words go over ssh");
    }
    Ok(())
}

impl Ssh {
    fn program(&self, program: &str) -> Command {
        match &self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, program]);
                c
            }
            None => Command::new(program),
        }
    }

    /// Options both ssh and scp take: batch mode (never a prompt), the
    /// connect timeout, keep-alives (a router that went away ends the call
    /// within 15 s), the identity and the lab file's options.
    fn common_options(&self, command: &mut Command) {
        command.args(["-o", "BatchMode=yes"]);
        command.args([
            "-o".to_string(),
            format!("ConnectTimeout={}", self.timeouts.connect_seconds),
        ]);
        command.args(["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]);
        if let Some(identity) = &self.identity {
            command.arg("-i").arg(identity);
        }
        for option in &self.options {
            command.args(["-o", option]);
        }
    }

    /// Runs `words` on the router within the command timeout; any exit
    /// status is returned, not judged.
    pub fn run(&self, words: &[&str]) -> Result<Remote> {
        self.run_within(
            words,
            Duration::from_secs(self.timeouts.command_seconds.into()),
        )
    }

    /// Runs `words` on the router within `timeout`.
    pub fn run_within(&self, words: &[&str], timeout: Duration) -> Result<Remote> {
        let (command, what) = self.ssh(words)?;
        self.call(command, &what, timeout)
    }

    /// `ssh … -- LOGIN WORDS…` with its options, and the call in words
    /// for messages. Errors: a word the remote shell would not take
    /// literally ([`check_remote_word`]).
    fn ssh(&self, words: &[&str]) -> Result<(Command, String)> {
        for w in words {
            check_remote_word(w)?;
        }
        let mut command = self.program("ssh");
        self.common_options(&mut command);
        command.args(["-p", &self.destination.port.to_string()]);
        command.arg("--").arg(self.destination.login()).args(words);
        let what = format!("ssh {} {}", self.destination.login(), words.join(" "));
        Ok((command, what))
    }

    /// Starts `words` on the router with the session's input a pipe this
    /// side closes ([`Supervised::close_stdin`]) to end a command that
    /// reads it to the end; its output is captured. The caller waits.
    pub fn spawn_reading_input(&self, words: &[&str]) -> Result<Supervised> {
        let (command, what) = self.ssh(words)?;
        self.note(&format!("$ {what} (until its input ends)\n"));
        Supervisor::new(command, &format!("`{what}`"))
            .output(Output::Capture)
            .stdin_piped()
            .hint("is openssh-client installed? (`cargo xtask setup`)")
            .spawn()
    }

    /// Runs `words` on the router, failing on a non-zero status with its
    /// output; returns its standard output.
    pub fn check(&self, words: &[&str]) -> Result<String> {
        let out = self.run(words)?;
        if !out.status.success() {
            bail!(
                "`{}` on {} failed ({}): {}",
                words.join(" "),
                self.destination.login(),
                out.status,
                crate::lab::process::last_lines(&out.stderr, 5)
            );
        }
        Ok(out.stdout)
    }

    /// Copies `local` to `remote` on the router with `scp -O` (OpenWrt's
    /// dropbear has no sftp-server), within the copy timeout.
    pub fn copy(&self, local: &Path, remote: &str) -> Result<()> {
        check_remote_word(remote)?;
        let local = std::path::absolute(local)
            .with_context(|| format!("making {} absolute", local.display()))?;
        let mut command = self.program("scp");
        command.arg("-O");
        self.common_options(&mut command);
        command.args(["-P", &self.destination.port.to_string()]);
        // An absolute path: scp takes it as local even with a ':' in it.
        command
            .arg("--")
            .arg(&local)
            .arg(self.destination.scp_target(remote));
        let what = format!(
            "scp -O {} {}",
            local.display(),
            self.destination.scp_target(remote)
        );
        let timeout = Duration::from_secs(self.timeouts.copy_seconds.into());
        let out = self.call(command, &what, timeout)?;
        if !out.status.success() {
            bail!(
                "`{what}` failed ({}): {}",
                out.status,
                crate::lab::process::last_lines(&out.stderr, 5)
            );
        }
        Ok(())
    }

    /// Runs `command` with its output in temporary files (no pipe to fill
    /// up), stopping it after `timeout` or on Ctrl-C; logs it.
    fn call(&self, command: Command, what: &str, timeout: Duration) -> Result<Remote> {
        let mut child = Supervisor::new(command, &format!("`{what}`"))
            .output(Output::Capture)
            .hint("is openssh-client installed? (`cargo xtask setup`)")
            .spawn()?;
        let status = match child.wait(&Limits::within(timeout)) {
            Ok(status) => status,
            Err(e) => {
                self.note(&format!(
                    "$ {what}\n(killed after {} s)\n",
                    timeout.as_secs()
                ));
                return Err(e);
            }
        };
        let (stdout, stderr) = child.captured()?;
        let remote = Remote {
            status,
            stdout,
            stderr,
        };
        self.note(&format!(
            "$ {what}\n{}{}({status})\n",
            remote.stdout, remote.stderr
        ));
        Ok(remote)
    }

    /// Appends `text` to the log, if any; a log that cannot be written is
    /// not worth stopping the lab for.
    fn note(&self, text: &str) {
        if let Some(log) = &self.log {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
            {
                let _ = f.write_all(text.as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_literal_words_reach_the_remote_shell() {
        for ok in [
            "cat",
            "/proc/stat",
            "-K",
            "br-lan",
            "gro",
            "on",
            "/tmp/xtask.bin",
        ] {
            check_remote_word(ok).unwrap();
        }
        for bad in [
            "", "a b", "$(id)", "`id`", "a;b", "a&&b", "a|b", ">x", "*", "'", "\"", "~", "a\nb",
        ] {
            assert!(check_remote_word(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn argv_is_fixed_words_after_the_options() {
        let ssh = Ssh {
            destination: Destination::parse("ssh://root@192.0.2.1:2222").unwrap(),
            identity: Some(PathBuf::from("/k/id")),
            options: vec!["StrictHostKeyChecking=no".to_string()],
            netns: Some("lan".to_string()),
            timeouts: Timeouts::default(),
            log: None,
        };
        let mut c = ssh.program("ssh");
        ssh.common_options(&mut c);
        let argv: Vec<String> = std::iter::once(c.get_program())
            .chain(c.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            argv.join(" "),
            "ip netns exec lan ssh -o BatchMode=yes -o ConnectTimeout=10 \
             -o ServerAliveInterval=5 -o ServerAliveCountMax=3 -i /k/id \
             -o StrictHostKeyChecking=no"
        );
        let err = ssh.run(&["cat", "/proc/version;reboot"]).unwrap_err();
        assert!(err.to_string().contains("refusing"), "{err}");
    }
}
