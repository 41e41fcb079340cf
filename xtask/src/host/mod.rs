//! The host the workbench runs on: Debian packages to install ([`setup`]),
//! the test suite as CI runs it ([`selftest`]) and the symbol-diff
//! benchmark that times the built workbench ([`symbols_bench`]).

pub mod selftest;
pub mod setup;
pub mod test_times;
