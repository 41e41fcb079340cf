#![deny(missing_docs)]
//! Library behind `cargo xtask`: everything an OpenWrt kernel developer needs to
//! answer "what does this compiler flag or kernel patch do to my router?".
//!
//! One folder per pipeline stage. Data flows one way: inputs → patched
//! tree → build → results → measurements → reports. Imports follow a
//! stricter rule, because the records ([`results`]) and the ELF readers
//! ([`measure`]) are types the build uses to write what it measured. Each
//! stage may import only these (the tidy test checks the code against its
//! table `ALLOWED` and that table against this one):
//!
//! ```text
//! stage    may import
//! util     -
//! inputs   util
//! measure  util
//! results  measure, util
//! patches  inputs, results, util
//! kernel_build inputs, patches, measure, results, util
//! report   patches, measure, results, util
//! lab      inputs, kernel_build, measure, results, util
//! host     inputs, kernel_build, results, lab, util
//! bench    inputs, patches, kernel_build, measure, results, report, lab, util
//! experiment inputs, kernel_build, results, lab, report, util
//! ```
//!
//! The report never reads inputs (`targets/`, `variants.toml`): only the
//! records, and for `size-report --by kconfig` the kbuild files of the
//! patched tree a record names.
//!
//! * [`inputs`]: targets, variants, kconfig fragments, kernel source.
//! * [`patches`]: the patch engine (GNU patch semantics), the diff writer,
//!   the OpenWrt-ordered series, the generated `201-extra_optimization.patch`,
//!   the patched source cache, the quilt-style stack, rebase, OpenWrt sync.
//! * [`kernel_build`]: the plan (jobs), the kbuild backend, toolchain checks,
//!   artifacts (images) and progress.
//! * [`results`]: `result.json`, what one build produced.
//! * [`measure`]: measurements of built kernels: vmlinux sections, symbols,
//!   bloat-o-meter diffs, statistics of repeated runs.
//! * [`lab`]: the runtime lab: each variant's router kernel booted in QEMU
//!   between two network namespaces, forwarding measured (after `kernel_build`,
//!   whose pipeline makes the lab kernels).
//! * [`report`]: loading results, comparability checks, the metric model and
//!   one renderer per format.
//! * [`util`]: the workspace layout and file-system helpers every stage uses.
//! * [`experiment`]: `experiments/<name>.toml` as one command: builds,
//!   labs and the report, planned first, resumable.
//! * [`host`]: `setup` (Debian packages) and `test` (the suite as CI runs it).

pub mod bench;
pub mod experiment;
pub mod host;
pub mod inputs;
pub mod kernel_build;
pub mod lab;
pub mod measure;
pub mod patches;
pub mod report;
pub mod results;
pub mod util;
