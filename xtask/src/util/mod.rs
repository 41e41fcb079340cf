//! Helpers every stage uses: the workspace [`layout`], file-system
//! operations ([`fs`]), advisory locks ([`lock`]), the safe-path check ([`path`]), sha256 ([`hash`])
//! and the one cancellation token of long steps ([`cancel`]).

pub mod cancel;
pub mod fs;
pub mod hash;
pub mod layout;
pub mod lock;
pub mod path;
