//! The host the workbench runs on: Debian packages to install ([`setup`])
//! and the test suite as CI runs it ([`selftest`]).

pub mod selftest;
pub mod setup;
pub mod test_times;
