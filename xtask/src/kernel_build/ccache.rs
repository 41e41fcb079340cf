//! ccache for the kernel's compiler, set up as OpenWrt's `CONFIG_CCACHE`
//! does it (`rules.mk`: `CCACHE_NOHASHDIR`, `CCACHE_COMPILERCHECK` from
//! the compiler's `-dumpmachine` and `-dumpversion`; the kernel is made
//! with `CC="ccache <cross>gcc"`), except `CCACHE_BASEDIR`: OpenWrt builds
//! the kernel in its tree, where kbuild's paths are relative anyway; out
//! of tree (`make -C src O=build`) kbuild passes absolute source paths and
//! `-fmacro-prefix-map=<src>/=`, and a base directory would make ccache
//! hand gcc `../../../src/<tree>/net/core/dev.c` instead, which the prefix
//! map no longer strips: every `__FILE__` (BUG/WARN sites) then carried
//! that prefix, 23,584 bytes more `.data` in a bcm53xx vmlinux than the
//! same build without ccache.
//!
//! The cache lives in `target/xtask/ccache/`, shared by every target and
//! variant (ccache keys each object by its preprocessed source, flags and
//! compiler, so a cached object is only ever reused for identical input).
//! Each build writes its own stats log (`CCACHE_STATSLOG`) in its build
//! directory, so the hits and misses of builds that run side by side are
//! counted apart. ccache is not part of the build key: it changes how long
//! a build takes, never the bytes (`tests/it/e2e_patch_only.rs` checks it).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::results::CcacheStats;
use crate::util::layout::Layout;

/// The default `--ccache-size`.
pub const DEFAULT_SIZE: &str = "5G";

/// Whether builds go through ccache, and how large its cache may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ccache {
    /// `CC=<cross>gcc` (`--no-ccache`).
    Off,
    /// `CC="ccache <cross>gcc"`, the cache limited to this many bytes.
    On {
        /// `CCACHE_MAXSIZE`, in bytes.
        max_bytes: u64,
    },
}

impl Default for Ccache {
    fn default() -> Ccache {
        Ccache::On {
            max_bytes: parse_size(DEFAULT_SIZE).expect("the default size parses"),
        }
    }
}

/// Parses a cache size as ccache writes it: a number with an optional
/// suffix `k`, `M`, `G`, `T` (powers of 1000) or `Ki`, `Mi`, `Gi`, `Ti`
/// (powers of 1024); no suffix means bytes.
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    let (number, suffix) = t.split_at(digits);
    let factor: u64 = match suffix {
        "" => 1,
        "k" | "K" => 1000,
        "M" => 1000_u64.pow(2),
        "G" => 1000_u64.pow(3),
        "T" => 1000_u64.pow(4),
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        _ => bail!("cache size {text:?}: use a number with k, M, G, T, Ki, Mi, Gi or Ti (e.g. 5G)"),
    };
    let n: u64 = number
        .parse()
        .with_context(|| format!("cache size {text:?}: no number before the unit (e.g. 5G)"))?;
    match n.checked_mul(factor) {
        Some(0) | None => bail!("cache size {text:?}: must be above zero and below 16 EB"),
        Some(bytes) => Ok(bytes),
    }
}

/// The cache directory: `target/xtask/ccache/`.
pub fn cache_dir(layout: &Layout) -> PathBuf {
    layout.work_dir().join("ccache")
}

/// The per-build stats log in a build directory.
pub fn stats_log(build: &Path) -> PathBuf {
    build.join(".xtask-ccache-stats.log")
}

/// `make` with ccache: the `CC=` argument and the environment, as OpenWrt
/// sets them. `None` when off.
pub fn make_setup(
    layout: &Layout,
    ccache: Ccache,
    cc: &str,
    build: &Path,
) -> Option<(String, Vec<(&'static str, String)>)> {
    let Ccache::On { max_bytes } = ccache else {
        return None;
    };
    let env = vec![
        ("CCACHE_DIR", cache_dir(layout).display().to_string()),
        ("CCACHE_NOHASHDIR", "true".to_string()),
        (
            "CCACHE_COMPILERCHECK",
            "%compiler% -dumpmachine; %compiler% -dumpversion".to_string(),
        ),
        ("CCACHE_MAXSIZE", format!("{}k", max_bytes.div_ceil(1000))),
        ("CCACHE_STATSLOG", stats_log(build).display().to_string()),
    ];
    Some((format!("CC=ccache {cc}"), env))
}

/// Removes the build's previous stats log, so the next one counts only
/// this build.
pub fn reset_stats(build: &Path) -> Result<()> {
    let log = stats_log(build);
    match std::fs::remove_file(&log) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}; remove it by hand", log.display()))
        }
        _ => Ok(()),
    }
}

/// The hits and misses in a stats log's text: one `# <source>` line per
/// compiler call, then its counters (`direct_cache_hit`,
/// `preprocessed_cache_hit`, `cache_miss`, …).
pub fn count_stats(text: &str) -> CcacheStats {
    let mut stats = CcacheStats { hits: 0, misses: 0 };
    for line in text.lines().map(str::trim) {
        match line {
            "direct_cache_hit" | "preprocessed_cache_hit" => stats.hits += 1,
            "cache_miss" => stats.misses += 1,
            _ => {}
        }
    }
    stats
}

/// The hits and misses of the build in `build` (after [`reset_stats`]);
/// `None` when ccache was off.
pub fn read_stats(ccache: Ccache, build: &Path) -> Result<Option<CcacheStats>> {
    if ccache == Ccache::Off {
        return Ok(None);
    }
    let log = stats_log(build);
    match crate::util::fs::read_limited(
        &log,
        crate::util::fs::FileLimit::log("ccache stats log"),
        "build again with --force",
    ) {
        Ok(text) => Ok(Some(count_stats(&text))),
        // Nothing compiled: ccache never wrote the log.
        Err(e) if crate::util::fs::is_not_found(&e) => Ok(Some(CcacheStats { hits: 0, misses: 0 })),
        Err(e) => Err(e).context("reading ccache's stats log; build again with --force"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_ccache_writes_them() {
        assert_eq!(parse_size("5G").unwrap(), 5_000_000_000);
        assert_eq!(parse_size("500M").unwrap(), 500_000_000);
        assert_eq!(parse_size("2Gi").unwrap(), 2 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        for bad in ["", "G", "5X", "0", "-1G", "99999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_stats_log_counts_hits_and_misses() {
        let log = "# a.c\ncache_miss\ndirect_cache_miss\nlocal_storage_miss\n\
                   # a.c\ndirect_cache_hit\nlocal_storage_hit\n\
                   # b.c\npreprocessed_cache_hit\n# c.S\ncache_miss\n";
        assert_eq!(count_stats(log), CcacheStats { hits: 2, misses: 2 });
    }

    #[test]
    fn off_sets_nothing_and_on_sets_openwrt_s_variables() {
        let layout = Layout::new(Path::new("/w"));
        let build = Path::new("/w/target/xtask/build/t/v");
        assert!(make_setup(&layout, Ccache::Off, "gcc", build).is_none());
        let (cc, env) = make_setup(&layout, Ccache::default(), "arm-gcc", build).unwrap();
        assert_eq!(cc, "CC=ccache arm-gcc");
        let get = |k: &str| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("CCACHE_DIR"), Some("/w/target/xtask/ccache"));
        // Never: it defeats kbuild's -fmacro-prefix-map (module docs).
        assert_eq!(get("CCACHE_BASEDIR"), None);
        assert_eq!(get("CCACHE_NOHASHDIR"), Some("true"));
        assert_eq!(get("CCACHE_MAXSIZE"), Some("5000000k"));
        assert!(get("CCACHE_COMPILERCHECK")
            .unwrap()
            .contains("-dumpversion"));
    }
}
