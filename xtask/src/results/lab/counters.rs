//! The cache-model plugin's counters as its snapshot line gives them
//! (lab/plugin/xtask-cache.c): the L1 counters ([`CacheCounters`]), the
//! core model's ([`CoreCounters`]) and the geometry the plugin reports
//! ([`CacheGeometry`]). What they are made into lives beside them: a run's
//! work in `cache.rs` and `per_cpu.rs`, its cycles in `core_model.rs`.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// First word of the plugin's snapshot line, then its format version.
pub const SNAPSHOT_MAGIC: &str = "xtask-cache";
/// The snapshot format this workbench reads (the plugin's `FORMAT_VERSION`:
/// 2 since the core model's fields, 3 since each vCPU's,
/// [`super::per_cpu::Snapshot`]).
pub const SNAPSHOT_VERSION: u32 = 3;

/// One cache's geometry, as modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheGeometry {
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Associativity (ways per set).
    pub ways: u64,
    /// Line size in bytes.
    pub line_bytes: u64,
}

impl CacheGeometry {
    /// `32 KiB, 4-way, 32-byte lines`.
    pub fn describe(&self) -> String {
        let size = if self.size_bytes.is_multiple_of(1024) {
            format!("{} KiB", self.size_bytes / 1024)
        } else {
            format!("{} bytes", self.size_bytes)
        };
        format!("{size}, {}-way, {}-byte lines", self.ways, self.line_bytes)
    }

    /// The plugin's spelling, `SIZE/WAYS/LINE` (`32768/4/32`).
    pub fn triple(&self) -> String {
        format!("{}/{}/{}", self.size_bytes, self.ways, self.line_bytes)
    }
}

/// The plugin's counters at one instant, since QEMU started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheCounters {
    /// Guest instructions executed (every one is an I-cache access).
    pub insns: u64,
    /// Misses of the modelled L1 I-cache.
    pub l1i_misses: u64,
    /// Guest data accesses (loads and stores, I/O left out).
    pub l1d_accesses: u64,
    /// Misses of the modelled L1 D-cache.
    pub l1d_misses: u64,
    /// The core model's counters (branches, L2), when the plugin ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core: Option<CoreCounters>,
}

impl CacheCounters {
    /// Parses the plugin's snapshot line
    /// (`xtask-cache 3 insns=N l1i_misses=N l1d_accesses=N l1d_misses=N
    /// [core fields] icache=S/W/L dcache=S/W/L cores=N`, the core fields
    /// those of [`CoreCounters`]); with `expect`, the geometry it reports
    /// must be those caches'.
    ///
    /// Errors on another first word or format version, a missing or
    /// non-numeric counter, or another geometry.
    pub fn parse(line: &str, expect: Option<(&CacheGeometry, &CacheGeometry)>) -> Result<Self> {
        let mut words = line.split_whitespace();
        if words.next() != Some(SNAPSHOT_MAGIC) {
            bail!("not a snapshot of the cache-model plugin: {line:?}");
        }
        let version = words.next().unwrap_or_default();
        if version != SNAPSHOT_VERSION.to_string() {
            bail!(
                "the cache-model plugin speaks format {version:?}, this workbench reads {SNAPSHOT_VERSION}: {line:?}"
            );
        }
        let fields: Vec<(&str, &str)> = words.filter_map(|w| w.split_once('=')).collect();
        let field = |key: &str| -> Result<&str> {
            fields
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v)
                .with_context(|| format!("the cache-model snapshot has no {key}: {line:?}"))
        };
        let number = |key: &str| -> Result<u64> {
            field(key)?
                .parse()
                .with_context(|| format!("{key} in the cache-model snapshot {line:?}"))
        };
        if let Some((i, d)) = expect {
            for (key, g) in [("icache", i), ("dcache", d)] {
                let got = field(key)?;
                if got != g.triple() {
                    bail!(
                        "the cache-model plugin models {key}={got}, the lab asked for {}",
                        g.triple()
                    );
                }
            }
        }
        Ok(CacheCounters {
            insns: number("insns")?,
            l1i_misses: number("l1i_misses")?,
            l1d_accesses: number("l1d_accesses")?,
            l1d_misses: number("l1d_misses")?,
            core: CoreCounters::from_fields(&fields)
                .with_context(|| format!("in the snapshot {line:?}"))?,
        })
    }

    /// The L1 counters alone (what QEMU's `cache.c` also counts).
    pub fn l1(&self) -> CacheCounters {
        CacheCounters {
            core: None,
            ..*self
        }
    }

    /// `self - before`, each counter; errors when one went backwards (not
    /// the same QEMU, or a damaged record).
    pub fn since(&self, before: &CacheCounters) -> Result<CacheCounters> {
        let d = |a: u64, b: u64, what: &str| {
            a.checked_sub(b)
                .with_context(|| format!("the cache model's {what} went backwards ({b} → {a})"))
        };
        Ok(CacheCounters {
            insns: d(self.insns, before.insns, "instruction count")?,
            l1i_misses: d(self.l1i_misses, before.l1i_misses, "L1I misses")?,
            l1d_accesses: d(self.l1d_accesses, before.l1d_accesses, "L1D accesses")?,
            l1d_misses: d(self.l1d_misses, before.l1d_misses, "L1D misses")?,
            core: match (&self.core, &before.core) {
                (Some(a), Some(b)) => Some(a.since(b)?),
                (None, None) => None,
                _ => bail!("one cache-model snapshot has the core model's counters, the other not"),
            },
        })
    }
}

/// The plugin's core-model counters at one instant (`core` of a snapshot;
/// the plugin's format, xtask-cache.c).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoreCounters {
    /// L1 D-cache misses of stores (the rest of `l1d_misses` are loads').
    pub l1d_store_misses: u64,
    /// Dirty L1 D-cache lines written back.
    pub l1d_writebacks: u64,
    /// L1 line fills looked up in the L2 (every fill without an L2).
    pub l2_accesses: u64,
    /// Fills the L2 missed (every fill without an L2).
    pub l2_misses: u64,
    /// Of `l2_misses`, those of store fills.
    pub l2_store_misses: u64,
    /// Write-backs into the L2.
    pub l2_writebacks: u64,
    /// Conditional branches taken.
    pub cond_taken: u64,
    /// Conditional branches not taken.
    pub cond_not_taken: u64,
    /// Unconditional jumps, calls and returns.
    pub jumps: u64,
    /// Conditional branches whose direction was mispredicted.
    pub cond_mispredicts: u64,
    /// Returns the return stack mispredicted.
    pub return_mispredicts: u64,
    /// Indirect jumps mispredicted (all of them without a BTAC).
    pub indirect_mispredicts: u64,
    /// Taken direct branches without a (right) BTAC entry.
    pub target_mispredicts: u64,
    /// Branches an exception or interrupt came between (not counted).
    pub unresolved: u64,
    /// Accesses to I/O regions (uncached).
    pub uncached: u64,
    /// Data accesses not aligned to their size.
    pub unaligned: u64,
}

/// The snapshot's field names of [`CoreCounters`], in its order.
pub(super) const FIELDS: [&str; 16] = [
    "l1d_store_misses",
    "l1d_writebacks",
    "l2_accesses",
    "l2_misses",
    "l2_store_misses",
    "l2_writebacks",
    "cond_taken",
    "cond_not_taken",
    "jumps",
    "cond_mispredicts",
    "return_mispredicts",
    "indirect_mispredicts",
    "target_mispredicts",
    "unresolved",
    "uncached",
    "unaligned",
];

impl CoreCounters {
    fn as_array(&self) -> [u64; 16] {
        [
            self.l1d_store_misses,
            self.l1d_writebacks,
            self.l2_accesses,
            self.l2_misses,
            self.l2_store_misses,
            self.l2_writebacks,
            self.cond_taken,
            self.cond_not_taken,
            self.jumps,
            self.cond_mispredicts,
            self.return_mispredicts,
            self.indirect_mispredicts,
            self.target_mispredicts,
            self.unresolved,
            self.uncached,
            self.unaligned,
        ]
    }

    /// The counters from their sixteen values in the snapshot's order
    /// (`l1d_store_misses` … `unaligned`, as lab/plugin/xtask-cache.c
    /// writes a vCPU's).
    pub fn from_values(a: [u64; 16]) -> CoreCounters {
        CoreCounters::from_array(a)
    }

    fn from_array(a: [u64; 16]) -> CoreCounters {
        CoreCounters {
            l1d_store_misses: a[0],
            l1d_writebacks: a[1],
            l2_accesses: a[2],
            l2_misses: a[3],
            l2_store_misses: a[4],
            l2_writebacks: a[5],
            cond_taken: a[6],
            cond_not_taken: a[7],
            jumps: a[8],
            cond_mispredicts: a[9],
            return_mispredicts: a[10],
            indirect_mispredicts: a[11],
            target_mispredicts: a[12],
            unresolved: a[13],
            uncached: a[14],
            unaligned: a[15],
        }
    }

    /// The counters of a snapshot's `key=value` fields; `None` when it has
    /// none of them (a plugin without the core model). Errors when some
    /// are there and others missing or not numbers.
    pub fn from_fields(fields: &[(&str, &str)]) -> Result<Option<CoreCounters>> {
        let get = |key: &str| fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        if FIELDS.iter().all(|f| get(f).is_none()) {
            return Ok(None);
        }
        let mut a = [0u64; 16];
        for (slot, key) in a.iter_mut().zip(FIELDS) {
            let v = get(key).with_context(|| format!("the cache-model snapshot has no {key}"))?;
            *slot = v
                .parse()
                .with_context(|| format!("{key}={v} in the cache-model snapshot"))?;
        }
        Ok(Some(CoreCounters::from_array(a)))
    }

    /// `self - before`, each counter; errors when one went backwards.
    pub fn since(&self, before: &CoreCounters) -> Result<CoreCounters> {
        let (a, b) = (self.as_array(), before.as_array());
        let mut d = [0u64; 16];
        for i in 0..16 {
            d[i] = a[i].checked_sub(b[i]).with_context(|| {
                format!(
                    "the core model's {} went backwards ({} → {})",
                    FIELDS[i], b[i], a[i]
                )
            })?;
        }
        Ok(CoreCounters::from_array(d))
    }

    /// Taken conditional branches and jumps.
    pub fn taken(&self) -> u64 {
        self.cond_taken + self.jumps
    }

    /// Every misprediction the formula charges.
    pub fn mispredicts(&self) -> u64 {
        self.cond_mispredicts
            + self.return_mispredicts
            + self.indirect_mispredicts
            + self.target_mispredicts
    }

    /// L2 misses of instruction fetches and loads (those the formula
    /// charges).
    pub fn demand_l2_misses(&self) -> u64 {
        self.l2_misses - self.l2_store_misses.min(self.l2_misses)
    }
}
