//! The lab's L1 cache model (`cargo xtask lab --cache-model`): a TCG
//! plugin of ours (`lab/plugin/xtask-cache.c`) that counts the guest's
//! instructions and simulates the target's L1 I- and D-caches (geometry
//! from `[lab.l1]` in its target file), loaded into every boot; the lab
//! reads its counters right before and right after each run and divides
//! the differences by the run's forwarded packets
//! ([`crate::results::lab::cache`]).
//!
//! * [`source`]: the installed QEMU's `qemu-plugin.h`, from its Debian
//!   source package (private apt configuration, fetched once);
//! * [`compile`]: gcc builds of the plugin (and of QEMU's own
//!   `contrib/plugins/cache.c`, the tests' reference), cached by sha256;
//! * [`read_counters`]: one snapshot from the plugin's unix socket (the
//!   sums and each vCPU's counters).
//!
//! The model sees the instruction stream TCG executes and the addresses
//! it touches: how code and data map onto the SoC's cache sets, hence
//! what a layout change (`-fno-reorder-blocks`, alignment) does to misses.
//! Its L1 counts are exact for that model, not cycles of a real router.
//! On a target with `[lab.timing]` the plugin also runs the core model
//! ([`core`]: the SoC's branch predictor and L2), and every run is costed
//! in cycles ([`crate::results::lab::core_model`]).

pub mod compile;
pub mod core;
pub mod source;

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::host_tools::require_tools;
use crate::inputs::lab::{CacheSpec, LabSpec};
use crate::inputs::targets::Target;
use crate::results::lab::per_cpu::Snapshot;
use crate::results::lab::{CacheGeometry, CacheModelInfo};
use crate::util::layout::Layout;

/// Host programs the cache model needs, with their Debian packages.
pub const HOST_TOOLS: &[(&str, &str)] = &[
    ("gcc", "gcc"),
    ("tar", "tar"),
    ("xz", "xz-utils"),
    ("dpkg-query", "dpkg"),
    ("apt-get", "apt"),
];

/// Debian packages of [`HOST_TOOLS`], and the C library's headers the
/// plugin includes (pthread, sockets).
pub fn host_packages() -> Vec<String> {
    let mut p: Vec<String> = HOST_TOOLS.iter().map(|(_, p)| p.to_string()).collect();
    p.push("libc6-dev".to_string());
    p
}

/// How long a snapshot may take to arrive.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The model, ready to load into QEMU.
#[derive(Debug, Clone)]
pub struct CacheModel {
    /// The plugin (`.so`).
    pub plugin: PathBuf,
    /// What `lab.json` records of it.
    pub info: CacheModelInfo,
    /// The core model's plugin arguments ([`core::plugin_args`]), when
    /// the target has `[lab.timing]`.
    pub core_args: Option<String>,
}

/// The recorded form of a `[lab.l1]` cache.
pub fn geometry(spec: &CacheSpec) -> CacheGeometry {
    CacheGeometry {
        size_bytes: spec.size,
        ways: spec.ways,
        line_bytes: spec.line,
    }
}

/// The model of `target`'s L1 caches: its `[lab.l1]` geometry, the plugin
/// built against the installed QEMU's header. Errors before anything is
/// built when the target declares no L1 or a tool is missing.
pub fn prepare(layout: &Layout, target: &Target, spec: &LabSpec) -> Result<CacheModel> {
    let l1 = spec.l1.with_context(|| {
        format!(
            "target {} has no [lab.l1] table in {}: the cache model needs the SoC's L1 geometry (size, ways, line size of each cache, from its documentation)",
            target.name,
            target.file.display()
        )
    })?;
    let core_args = spec
        .timing
        .as_ref()
        .map(|t| core::plugin_args(spec, t))
        .transpose()?;
    require_tools("the cache model", HOST_TOOLS)?;
    let qemu = source::fetch(layout, &spec.qemu_package)?;
    let built = compile::plugin(layout, &qemu)?;
    let file = target
        .file
        .strip_prefix(layout.root())
        .unwrap_or(&target.file);
    let timing = spec
        .timing
        .as_ref()
        .map(|t| core::timing_record(t, &format!("{} [lab.timing]", file.display())));
    Ok(CacheModel {
        plugin: built.path,
        core_args,
        info: CacheModelInfo {
            icache: geometry(&l1.icache),
            dcache: geometry(&l1.dcache),
            geometry_from: format!("{} [lab.l1]", file.display()),
            plugin_source: compile::PLUGIN_SOURCE_PATH.to_string(),
            plugin_source_sha256: compile::plugin_source_sha256(),
            plugin_sha256: built.sha256,
            compiler: built.compiler,
            qemu_source: qemu.describe(),
            plugin_header_sha256: qemu.header_sha256,
            timing,
        },
    })
}

/// QEMU's `-plugin` value for `plugin` with geometry `(icache, dcache)`,
/// serving its counters on `socket` (none: only the report at exit). The
/// names are those of QEMU's `cache.c`, so the tests give both plugins one
/// string. Paths with a comma (QEMU's option separator) are refused.
pub fn plugin_arg(
    plugin: &Path,
    (icache, dcache): (&CacheGeometry, &CacheGeometry),
    socket: Option<&Path>,
) -> Result<String> {
    let mut arg = no_comma(plugin)?;
    arg.push(',');
    arg.push_str(&geometry_args(icache, dcache));
    if let Some(socket) = socket {
        arg.push_str(",socket=");
        arg.push_str(&no_comma(socket)?);
    }
    Ok(arg)
}

/// `icachesize=…,iassoc=…,iblksize=…,dcachesize=…,dassoc=…,dblksize=…`.
pub fn geometry_args(icache: &CacheGeometry, dcache: &CacheGeometry) -> String {
    format!(
        "icachesize={},iassoc={},iblksize={},dcachesize={},dassoc={},dblksize={}",
        icache.size_bytes,
        icache.ways,
        icache.line_bytes,
        dcache.size_bytes,
        dcache.ways,
        dcache.line_bytes
    )
}

fn no_comma(p: &Path) -> Result<String> {
    let s = p.display().to_string();
    if s.contains(',') {
        bail!("{s}: QEMU's -plugin option cannot take a path with a comma");
    }
    Ok(s)
}

impl CacheModel {
    /// [`plugin_arg`] of this model, with the core model's arguments.
    pub fn plugin_arg(&self, socket: &Path) -> Result<String> {
        let mut arg = plugin_arg(
            &self.plugin,
            (&self.info.icache, &self.info.dcache),
            Some(socket),
        )?;
        if let Some(core) = &self.core_args {
            arg.push(',');
            arg.push_str(core);
        }
        Ok(arg)
    }

    /// The counters now, from the plugin serving `socket`; its geometry
    /// must be this model's.
    pub fn read(&self, socket: &Path) -> Result<Snapshot> {
        read_counters(socket, Some((&self.info.icache, &self.info.dcache)))
    }
}

/// One snapshot from the plugin listening on `socket` (it writes one line
/// and closes); with `expect`, the geometry the plugin reports is checked.
pub fn read_counters(
    socket: &Path,
    expect: Option<(&CacheGeometry, &CacheGeometry)>,
) -> Result<Snapshot> {
    let mut stream = UnixStream::connect(socket).with_context(|| {
        format!(
            "connecting to the cache model's socket {} (did QEMU exit?)",
            socket.display()
        )
    })?;
    stream
        .set_read_timeout(Some(READ_TIMEOUT))
        .context("setting a read timeout")?;
    let mut line = String::new();
    stream.read_to_string(&mut line).with_context(|| {
        format!(
            "reading the cache model's counters from {}",
            socket.display()
        )
    })?;
    Snapshot::parse(&line, expect)
}
