//! A process as `/proc/<pid>/stat` shows it: what a supervisor asks of a
//! child it did not reap, and of its process group.

/// A process as `/proc/<pid>/stat` shows it (proc(5)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Its state letter: `R`, `S`, `D`, `Z` (a zombie), `X` (dead), ….
    pub state: char,
    /// Its process group.
    pub pgrp: i32,
}

impl ProcStat {
    /// Whether it has exited: a zombie waiting for its parent (for an
    /// orphan, init) to reap it, or dead.
    pub fn exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// `/proc/<pid>/stat` of process `pid`; `None` when it is gone (or the
/// file does not read as proc(5) says: `pid (comm) state ppid pgrp …`,
/// the fields after the last `)`, since `comm` may hold any byte).
pub fn proc_stat(pid: u32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let pgrp = fields.nth(1)?.parse().ok()?;
    Some(ProcStat { state, pgrp })
}
