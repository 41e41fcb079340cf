//! The [`Stack`] itself: what the stack's operations (in `mod.rs`) and
//! its recovery ([`super::journal`]) both work on, in a file of its own
//! so that neither imports the other for it.

use std::path::PathBuf;

use super::state::State;
use crate::patches::engine::ApplyOptions;

/// A patch series applied (partly) to one tree.
#[derive(Debug, Clone)]
pub struct Stack {
    /// The working tree and its state directory.
    pub state: State,
    /// `patches/`: patch names are relative to it.
    pub patches_dir: PathBuf,
    /// The series, bottom first (names relative to `patches_dir`).
    pub series: Vec<String>,
    /// `-p` level and fuzz for pushes (OpenWrt: `-p1`; fuzz 2 as GNU patch).
    pub options: ApplyOptions,
}
