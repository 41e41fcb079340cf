//! LZMA of one kernel followed by many device trees, fast and exact.
//!
//! Most device recipes are `kernel-bin | append-dtb | lzma | …`: the same
//! few MiB of kernel, then each device's DTB, compressed as one stream.
//! Compressing each concatenation (a few seconds per device) would take
//! minutes for a target's hundreds of devices. The encoder is sequential:
//! after it has consumed the kernel, its state (dictionary, match finder,
//! probabilities, pending lookahead) is the same for every device. So the
//! kernel is fed once ([`PrefixEncoder::new`], `LZMA_RUN`: nothing is
//! flushed, the lookahead stays in the encoder) and the state is copied
//! per device by `fork(2)`: the child feeds the DTB, finishes the stream
//! and sends back the bytes it wrote; the parent's bytes so far (final:
//! the range coder emits a byte only once no carry can change it) plus the
//! child's are byte for byte [`crate::kernel_build::artifacts::lzma_alone`] of the
//! concatenation (a test says so, and compares with `xz --format=lzma`).
//!
//! Other threads run `make` and compilers meanwhile. The pipe a child
//! writes to is made close-on-exec (`pipe2(O_CLOEXEC)`): a program another
//! thread starts between the `pipe2` and the parent's `close` of the write
//! end would otherwise inherit it, and the parent's read would wait for
//! that program's exit, not the child's. Each child has a deadline
//! ([`CHILD_TIMEOUT`]), after which it is killed and reaped.

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use liblzma::stream::{Action, Status, Stream};

use crate::kernel_build::artifacts::lzma_options;
use crate::results::LzmaRecord;

/// How long one child may take to finish its stream: a DTB of some KiB
/// after a kernel's lookahead, milliseconds; a child past it is killed.
pub const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

/// An LZMA encoder that has consumed a shared prefix.
pub struct PrefixEncoder {
    stream: Stream,
    /// What the encoder wrote while consuming the prefix.
    head: Vec<u8>,
}

impl PrefixEncoder {
    /// Feeds `prefix` to a new encoder with `params` (the "alone" format
    /// of [`crate::kernel_build::artifacts::lzma_alone`]).
    pub fn new(prefix: &[u8], params: &LzmaRecord) -> Result<PrefixEncoder> {
        let mut stream =
            Stream::new_lzma_encoder(&lzma_options(params)?).context("creating an LZMA encoder")?;
        let mut head = Vec::with_capacity(prefix.len() / 2 + 4096);
        let mut consumed = 0;
        while consumed < prefix.len() {
            if head.capacity() - head.len() < 4096 {
                head.reserve(head.len() / 2 + 4096);
            }
            let before = stream.total_in();
            stream
                .process_vec(&prefix[consumed..], &mut head, Action::Run)
                .context("LZMA compression")?;
            consumed += (stream.total_in() - before) as usize;
        }
        Ok(PrefixEncoder { stream, head })
    }

    /// The complete stream of prefix + each of `tails`, at most `jobs`
    /// children at a time; an entry is an error when its child failed.
    pub fn finish_each(&mut self, tails: &[&[u8]], jobs: usize) -> Vec<Result<Vec<u8>>> {
        let mut out = Vec::with_capacity(tails.len());
        for batch in tails.chunks(jobs.max(1)) {
            let children: Vec<Result<Child>> = batch.iter().map(|tail| self.spawn(tail)).collect();
            for child in children {
                out.push(child.and_then(|c| c.collect(CHILD_TIMEOUT)).map(|rest| {
                    let mut all = Vec::with_capacity(self.head.len() + rest.len());
                    all.extend_from_slice(&self.head);
                    all.extend_from_slice(&rest);
                    all
                }));
            }
        }
        out
    }

    fn spawn(&mut self, tail: &[u8]) -> Result<Child> {
        // Everything the child uses is allocated before the fork: it runs
        // no allocator, takes no lock, and leaves by _exit(2).
        let mut buf = vec![0u8; tail.len() + tail.len() / 2 + (1 << 20)];
        let (read, write) = cloexec_pipe()?;
        // SAFETY: the child runs the encoder on memory allocated above,
        // write(2) and _exit(2); the encoder is not shared with another
        // thread. liblzma's LZMA1 encoder allocates its window, match
        // finder and coder state when it is created (lz_encoder.c's
        // lzma_lz_encoder_init), not in lzma_code; and were it to,
        // glibc's fork resets malloc's locks in the child (its fork
        // handlers take and release every arena's lock around fork), so an
        // allocation could not wait for a thread that is not there.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            bail!("fork(2): {}", std::io::Error::last_os_error());
        }
        if pid == 0 {
            let code = match self.finish_in_child(tail, &mut buf) {
                Some(n) => write_all(write.as_raw_fd(), &buf[..n]),
                None => 2,
            };
            // SAFETY: ends the child without running the parent's exit
            // handlers or destructors.
            unsafe { libc::_exit(code) };
        }
        drop(write);
        Ok(Child {
            pid,
            read: std::fs::File::from(read),
        })
    }

    /// In the child: the encoder's copy finishes the stream with `tail`
    /// into `buf`; the number of bytes written, `None` on an error.
    fn finish_in_child(&mut self, tail: &[u8], buf: &mut [u8]) -> Option<usize> {
        // After fork(2) this is the child's own copy of the encoder; the
        // parent's is untouched.
        let stream = &mut self.stream;
        let (in0, out0) = (stream.total_in(), stream.total_out());
        loop {
            let consumed = (stream.total_in() - in0) as usize;
            let written = (stream.total_out() - out0) as usize;
            if written >= buf.len() {
                return None;
            }
            match stream.process(&tail[consumed..], &mut buf[written..], Action::Finish) {
                Ok(Status::StreamEnd) => return Some((stream.total_out() - out0) as usize),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }
}

fn write_all(fd: i32, mut bytes: &[u8]) -> i32 {
    while !bytes.is_empty() {
        // SAFETY: writes from a live slice to an open descriptor.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            return 3;
        }
        bytes = &bytes[n as usize..];
    }
    0
}

/// A pipe whose two ends (read, write) close on exec: no program another
/// thread starts inherits them.
fn cloexec_pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2(2) with a valid two-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("pipe2(2): {}", std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

struct Child {
    pid: libc::pid_t,
    read: std::fs::File,
}

impl Child {
    /// The child's bytes, once it exited with 0 within `timeout`; past
    /// it, the child is killed and reaped, and the error says so.
    fn collect(mut self, timeout: Duration) -> Result<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        let mut rest = Vec::new();
        let read = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break Err(anyhow::anyhow!(
                    "the LZMA child process did not finish within {} s; it was killed",
                    timeout.as_secs_f64()
                ));
            }
            let mut poll = libc::pollfd {
                fd: self.read.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
            // SAFETY: poll(2) on one valid pollfd of an open descriptor.
            if unsafe { libc::poll(&mut poll, 1, ms) } < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                break Err(anyhow::Error::new(e).context("poll(2) on the LZMA child's pipe"));
            }
            if poll.revents == 0 {
                continue;
            }
            let mut chunk = [0u8; 1 << 16];
            match self.read.read(&mut chunk) {
                Ok(0) => break Ok(()),
                Ok(n) => rest.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    break Err(anyhow::Error::new(e).context("reading the LZMA child's output"))
                }
            }
        };
        if read.is_err() {
            // SAFETY: signals our own child, not yet reaped.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        let waited = unsafe { libc::waitpid(self.pid, &mut status, 0) };
        read?;
        anyhow::ensure!(
            waited == self.pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the LZMA child process failed (wait status {status})"
        );
        Ok(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel_build::artifacts::{lzma_alone, OPENWRT_LZMA};

    #[test]
    fn each_stream_equals_the_whole_concatenation_compressed() {
        let mut x = 0x9e37_79b9u32;
        let kernel: Vec<u8> = (0..300_000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                if i % 5 == 0 {
                    x as u8
                } else {
                    b"mips kernel text "[i % 17]
                }
            })
            .collect();
        let tails: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"/dts-v1/; model = \"a\"".repeat(300),
            kernel[1000..9000].to_vec(),
        ];
        let mut enc = PrefixEncoder::new(&kernel, &OPENWRT_LZMA).unwrap();
        let refs: Vec<&[u8]> = tails.iter().map(Vec::as_slice).collect();
        let got = enc.finish_each(&refs, 2);
        for (tail, got) in tails.iter().zip(got) {
            let mut whole = kernel.clone();
            whole.extend_from_slice(tail);
            assert_eq!(got.unwrap(), lzma_alone(&whole, &OPENWRT_LZMA).unwrap());
        }
    }

    /// The pipe's inode as /proc names a descriptor's target (`pipe:[N]`).
    fn target(pid: u32, fd: i32) -> Option<std::path::PathBuf> {
        std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok()
    }

    #[test]
    fn a_program_another_thread_starts_meanwhile_inherits_no_end_of_the_pipe() {
        let (read, write) = cloexec_pipe().unwrap();
        let me = std::process::id();
        let ends = [
            target(me, read.as_raw_fd()).unwrap(),
            target(me, write.as_raw_fd()).unwrap(),
        ];
        assert!(ends[0].to_string_lossy().starts_with("pipe:["), "{ends:?}");
        // What a make started by another thread between pipe and close is:
        // spawn returns once the program was exec'd.
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let theirs: Vec<_> = std::fs::read_dir(format!("/proc/{}/fd", sleeper.id()))
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.unwrap().path()).ok())
            .collect();
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        for end in &ends {
            assert!(
                !theirs.contains(end),
                "the sleeper holds {end:?}: {theirs:?}"
            );
        }
    }

    #[test]
    fn a_child_past_its_deadline_is_killed_and_reaped() {
        let (read, write) = cloexec_pipe().unwrap();
        // SAFETY: the child only sleeps (holding the write end) and exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            unsafe {
                libc::sleep(30);
                libc::_exit(0)
            };
        }
        drop(write);
        let child = Child {
            pid,
            read: std::fs::File::from(read),
        };
        let e = child.collect(Duration::from_millis(300)).unwrap_err();
        assert!(
            format!("{e:#}").contains("did not finish within 0.3 s"),
            "{e:#}"
        );
        // Reaped: the pid names no process (not even a zombie) any more.
        assert_eq!(unsafe { libc::kill(pid, 0) }, -1);
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ESRCH)
        );
    }
}
