//! Helpers every stage uses: the workspace [`layout`], file-system
//! operations ([`fs`]), the safe-path check ([`path`]) and sha256 ([`hash`]).

pub mod fs;
pub mod hash;
pub mod layout;
pub mod path;
