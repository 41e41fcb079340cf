//! The `[lab.timing]` table of `targets/<t>.toml`: the real SoC's clock
//! and the costs the lab's core model (`cargo xtask lab --cache-model`)
//! turns counts into cycles with, each value with its source.
//!
//! ```toml
//! [lab.timing]
//! core = "MIPS 1004Kc"
//! clock_mhz.value = 880
//! clock_mhz.source = "MediaTek MT7621A datasheet: 880 MHz"
//! base_cpi.value = 1.0
//! base_cpi.source = "the model's single-issue in-order core"
//! # … every parameter of [`TimingSpec`] the same way; a value without a
//! # source says so:
//! l2_hit_cycles.value = 20
//! l2_hit_cycles.source = "no source: …why this value"
//! ```
//!
//! A source is a document (the core's Software User's Manual or TRM, the
//! SoC's datasheet, a published `lat_mem_rd`, Linux's boot log of the
//! SoC), or the words `no source` and why the value was chosen: the report
//! names every such value ([`TimingSpec::unsourced`]).

use anyhow::{bail, Result};
use serde::Deserialize;

/// One value and where it comes from.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sourced<T> {
    /// The value, in the unit its key names.
    pub value: T,
    /// The document it comes from, or `no source: <why>`.
    pub source: String,
}

impl<T> Sourced<T> {
    /// Whether the source says there is none (it starts with `no source`,
    /// any case).
    pub fn has_source(&self) -> bool {
        !self
            .source
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("no source")
    }
}

/// The branch predictors the core model simulates (the plugin's `bp=`).
pub const PREDICTORS: &[&str] = &["bimodal", "gshare", "majority"];

/// A target's `[lab.timing]`: the SoC's clock and the model's costs in
/// core clock cycles, the L2 and the branch predictor (see the module
/// docs; xtask/src/results/lab/core_model.rs has the formula).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingSpec {
    /// The modelled core in words, e.g. `MIPS 74Kc`.
    pub core: String,
    /// The SoC's CPU clock, MHz.
    pub clock_mhz: Sourced<f64>,
    /// Cycles per instruction with no branch or miss cost (1.0: a
    /// single-issue in-order pipeline).
    pub base_cpi: Sourced<f64>,
    /// Cycles lost by each taken branch or jump the predictor got right
    /// (fetch redirected).
    pub taken_branch_cycles: Sourced<f64>,
    /// Cycles lost by each misprediction (direction, return address,
    /// indirect target, BTAC miss).
    pub mispredict_cycles: Sourced<f64>,
    /// Cycles an L1 miss (instruction fetch or load) costs when the L2
    /// hits; 0 without an L2.
    pub l2_hit_cycles: Sourced<f64>,
    /// Cycles an L1 miss costs when it goes to DRAM (through the L2, if
    /// any): the whole load-to-use latency of memory, as `lat_mem_rd`
    /// measures it, in core cycles.
    pub dram_cycles: Sourced<f64>,
    /// Whether the L1 D-cache is write-back (dirty lines go to the L2 on
    /// eviction); the model simulates write-back L1 D-caches only.
    pub l1d_write_back: Sourced<bool>,
    /// L2 capacity in bytes; 0: no L2.
    pub l2_size_bytes: Sourced<u64>,
    /// L2 associativity (0 without an L2).
    pub l2_ways: Sourced<u64>,
    /// L2 line size in bytes (0 without an L2).
    pub l2_line_bytes: Sourced<u64>,
    /// The direction predictor's kind: one of [`PREDICTORS`].
    pub predictor: Sourced<String>,
    /// 2-bit counters per predictor table, a power of two.
    pub predictor_entries: Sourced<u64>,
    /// Global history bits (gshare, majority); 0 for bimodal.
    pub predictor_history_bits: Sourced<u64>,
    /// Return address stack entries.
    pub return_stack_entries: Sourced<u64>,
    /// Branch target address cache entries (2-way); 0: none (the MIPS
    /// cores compute direct targets in the fetch unit and do not predict
    /// indirect ones).
    pub btac_entries: Sourced<u64>,
}

impl TimingSpec {
    /// Every value's name, rendered value and source, in file order.
    pub fn values(&self) -> Vec<(&'static str, String, &str)> {
        fn v<'a, T: ToString>(
            name: &'static str,
            s: &'a Sourced<T>,
        ) -> (&'static str, String, &'a str) {
            (name, s.value.to_string(), s.source.as_str())
        }
        vec![
            v("clock_mhz", &self.clock_mhz),
            v("base_cpi", &self.base_cpi),
            v("taken_branch_cycles", &self.taken_branch_cycles),
            v("mispredict_cycles", &self.mispredict_cycles),
            v("l2_hit_cycles", &self.l2_hit_cycles),
            v("dram_cycles", &self.dram_cycles),
            v("l1d_write_back", &self.l1d_write_back),
            v("l2_size_bytes", &self.l2_size_bytes),
            v("l2_ways", &self.l2_ways),
            v("l2_line_bytes", &self.l2_line_bytes),
            v("predictor", &self.predictor),
            v("predictor_entries", &self.predictor_entries),
            v("predictor_history_bits", &self.predictor_history_bits),
            v("return_stack_entries", &self.return_stack_entries),
            v("btac_entries", &self.btac_entries),
        ]
    }

    /// The names of the values whose source says `no source`.
    pub fn unsourced(&self) -> Vec<&'static str> {
        self.values()
            .into_iter()
            .filter(|(_, _, source)| {
                !Sourced {
                    value: (),
                    source: source.to_string(),
                }
                .has_source()
            })
            .map(|(name, _, _)| name)
            .collect()
    }

    /// Checks what the model can compute with: every source given (or
    /// `no source: …`), positive clock and CPI, costs of 0 or more, DRAM
    /// no faster than the L2, an L2 that is a power-of-two number of sets
    /// (or none, with no L2 cost), a known predictor of a power-of-two
    /// size with history bits that fit it, a write-back L1 D-cache.
    /// Errors name the key and the fix.
    pub fn check(&self) -> Result<()> {
        for (name, _, source) in self.values() {
            if source.trim().is_empty() {
                bail!(
                    "[lab.timing] {name}.source is empty: name the document the value comes from, or write \"no source: <why this value>\""
                );
            }
        }
        if !(self.clock_mhz.value > 0.0 && self.clock_mhz.value.is_finite()) {
            bail!("[lab.timing] clock_mhz.value must be above 0");
        }
        if !(self.base_cpi.value > 0.0 && self.base_cpi.value.is_finite()) {
            bail!("[lab.timing] base_cpi.value must be above 0");
        }
        for (name, v) in [
            ("taken_branch_cycles", self.taken_branch_cycles.value),
            ("mispredict_cycles", self.mispredict_cycles.value),
            ("l2_hit_cycles", self.l2_hit_cycles.value),
            ("dram_cycles", self.dram_cycles.value),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                bail!("[lab.timing] {name}.value = {v}: cycles are 0 or more");
            }
        }
        if self.dram_cycles.value < self.l2_hit_cycles.value {
            bail!("[lab.timing] dram_cycles.value is below l2_hit_cycles.value: a miss to DRAM includes the L2's latency");
        }
        if !self.l1d_write_back.value {
            bail!("[lab.timing] l1d_write_back.value = false: the model simulates write-back L1 D-caches only");
        }
        let (size, ways, line) = (
            self.l2_size_bytes.value,
            self.l2_ways.value,
            self.l2_line_bytes.value,
        );
        if size == 0 {
            if ways != 0 || line != 0 || self.l2_hit_cycles.value != 0.0 {
                bail!("[lab.timing] l2_size_bytes.value = 0 (no L2) needs l2_ways, l2_line_bytes and l2_hit_cycles of 0");
            }
        } else if !(4..=4096).contains(&line)
            || !line.is_power_of_two()
            || !(1..=64).contains(&ways)
            || size % (ways * line) != 0
            || !(size / (ways * line)).is_power_of_two()
        {
            bail!(
                "[lab.timing] L2 of {size} bytes, {ways} ways, {line}-byte lines: the model needs a line of a power of two (4 to 4096), 1 to 64 ways and a power-of-two number of sets"
            );
        }
        let kind = self.predictor.value.as_str();
        if !PREDICTORS.contains(&kind) {
            bail!("[lab.timing] predictor.value = {kind:?}: one of {PREDICTORS:?}");
        }
        let entries = self.predictor_entries.value;
        if !entries.is_power_of_two() || entries > 1 << 20 {
            bail!("[lab.timing] predictor_entries.value = {entries}: a power of two up to 2^20");
        }
        let hist = self.predictor_history_bits.value;
        match kind {
            "bimodal" if hist != 0 => {
                bail!("[lab.timing] predictor_history_bits.value = {hist}: a bimodal predictor keeps no history (0)")
            }
            "gshare" | "majority" if !(1..=30).contains(&hist) => {
                bail!("[lab.timing] predictor_history_bits.value = {hist}: 1 to 30 for {kind}")
            }
            _ => {}
        }
        if self.return_stack_entries.value > 64 {
            bail!("[lab.timing] return_stack_entries.value: at most 64");
        }
        let btac = self.btac_entries.value;
        if btac != 0 && (btac < 2 || !btac.is_power_of_two()) {
            bail!("[lab.timing] btac_entries.value = {btac}: 0 or a power of two of at least 2 (the BTAC is 2-way)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = r#"
core = "MIPS 24Kc"
clock_mhz.value = 720
clock_mhz.source = "datasheet"
base_cpi.value = 1.0
base_cpi.source = "single issue"
taken_branch_cycles.value = 1
taken_branch_cycles.source = "No source: one fetch slot"
mispredict_cycles.value = 4
mispredict_cycles.source = "manual"
l2_hit_cycles.value = 0
l2_hit_cycles.source = "no L2"
dram_cycles.value = 70
dram_cycles.source = "no source: DDR2"
l1d_write_back.value = true
l1d_write_back.source = "manual"
l2_size_bytes.value = 0
l2_size_bytes.source = "datasheet: none"
l2_ways.value = 0
l2_ways.source = "none"
l2_line_bytes.value = 0
l2_line_bytes.source = "none"
predictor.value = "bimodal"
predictor.source = "manual"
predictor_entries.value = 512
predictor_entries.source = "manual"
predictor_history_bits.value = 0
predictor_history_bits.source = "bimodal"
return_stack_entries.value = 4
return_stack_entries.source = "manual"
btac_entries.value = 0
btac_entries.source = "none"
"#;

    fn table(edit: &str) -> TimingSpec {
        let mut doc: toml_edit::DocumentMut = TABLE.parse().unwrap();
        let patch: toml_edit::DocumentMut = edit.parse().unwrap();
        for (k, v) in patch.iter() {
            for (kk, vv) in v.as_table_like().unwrap().iter() {
                doc[k][kk] = vv.clone();
            }
        }
        toml_edit::de::from_str(&doc.to_string()).unwrap()
    }

    #[test]
    fn a_table_lists_what_has_no_source() {
        let t = table("");
        t.check().unwrap();
        assert_eq!(t.unsourced(), ["taken_branch_cycles", "dram_cycles"]);
        assert_eq!(t.values()[0], ("clock_mhz", "720".to_string(), "datasheet"));
    }

    #[test]
    fn a_table_the_model_cannot_use_is_refused() {
        for (edit, why) in [
            ("clock_mhz = { value = 0 }", "clock_mhz"),
            ("dram_cycles = { value = -1 }", "0 or more"),
            ("l2_hit_cycles = { value = 80 }", "below l2_hit_cycles"),
            ("l2_hit_cycles = { value = 10 }", "no L2"),
            (
                "l2_size_bytes = { value = 262144 }\nl2_ways = { value = 8 }\nl2_line_bytes = { value = 24 }",
                "power of two",
            ),
            ("predictor = { value = \"perceptron\" }", "one of"),
            ("predictor_entries = { value = 500 }", "power of two"),
            ("predictor_history_bits = { value = 8 }", "no history"),
            ("predictor = { value = \"gshare\" }", "1 to 30"),
            ("btac_entries = { value = 3 }", "2-way"),
            ("l1d_write_back = { value = false }", "write-back"),
            ("mispredict_cycles = { source = \" \" }", "mispredict_cycles.source"),
        ] {
            let err = table(edit).check().unwrap_err().to_string();
            assert!(err.contains(why), "{edit}: {err}");
        }
    }
}
