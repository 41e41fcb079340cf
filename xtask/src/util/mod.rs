//! Helpers every stage uses: the workspace [`layout`] and file-system
//! operations ([`fs`]).

pub mod fs;
pub mod layout;
