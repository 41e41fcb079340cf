//! Helpers every stage uses: the workspace [`layout`], file-system
//! operations ([`fs`]), advisory locks ([`lock`]), the safe-path check ([`path`]) and sha256 ([`hash`]).

pub mod fs;
pub mod hash;
pub mod layout;
pub mod lock;
pub mod path;
