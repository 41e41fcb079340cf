//! Measuring built kernels beyond their sizes.
//!
//! * [`lab`]: boot a variant's router kernel in QEMU between two network
//!   namespaces and measure forwarding (Mbit/s, guest CPU time per packet).

pub mod lab;
