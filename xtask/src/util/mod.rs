//! Helpers every stage uses: the workspace [`layout`], file-system
//! operations ([`fs`]), advisory locks ([`lock`]), the safe-path check ([`path`]), sha256 ([`hash`]),
//! subprocesses that die with their parent ([`process`]), text shown on a terminal ([`text`])
//! and the one cancellation token of long steps ([`cancel`]); for the unit
//! tests, the gate of those that run a host tool (`test_gate`).

pub mod cancel;
pub mod capped;
pub mod cpu_mask;
pub mod elf_ident;
pub mod fs;
pub mod hash;
pub mod layout;
pub mod lock;
pub mod path;
pub mod process;
pub mod shell_arith;
#[cfg(test)]
pub mod test_gate;
pub mod text;
