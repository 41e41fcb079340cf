//! The core model's half of the plugin's arguments: which instruction set
//! it decodes (from the target's QEMU binary), its branch predictor and
//! L2 (from `[lab.timing]`), and the timing table as `lab.json` records
//! it ([`timing_record`]).

use anyhow::{bail, Result};

use crate::inputs::lab::LabSpec;
use crate::inputs::timing::TimingSpec;
use crate::results::lab::core_model::{CoreCosts, CoreTiming, PredictorInfo, ValueSource};
use crate::results::lab::CacheGeometry;

/// The instruction set and byte order the plugin decodes branches of,
/// from `spec`'s QEMU binary: `qemu-system-mipsel` → MIPS little-endian,
/// `qemu-system-mips` → MIPS big-endian, `qemu-system-arm` → ARM.
/// Errors for another emulator.
pub fn isa(spec: &LabSpec) -> Result<(&'static str, &'static str)> {
    Ok(match spec.qemu.as_str() {
        "qemu-system-mipsel" => ("mips", "little"),
        "qemu-system-mips" => ("mips", "big"),
        "qemu-system-arm" => ("arm", "little"),
        other => bail!(
            "the core model decodes MIPS32 and ARM branches; [lab] qemu = {other:?} runs neither (leave [lab.timing] out for it)"
        ),
    })
}

/// The plugin's core-model arguments for `spec` with `timing`:
/// `isa=…,endian=…,bp=…,bpentries=…,bphist=…,ras=…,btac=…` and, with an
/// L2, `l2size=…,l2assoc=…,l2blksize=…`.
pub fn plugin_args(spec: &LabSpec, timing: &TimingSpec) -> Result<String> {
    let (isa, endian) = isa(spec)?;
    let mut arg = format!(
        "isa={isa},endian={endian},bp={},bpentries={},bphist={},ras={},btac={}",
        timing.predictor.value,
        timing.predictor_entries.value,
        timing.predictor_history_bits.value,
        timing.return_stack_entries.value,
        timing.btac_entries.value
    );
    if timing.l2_size_bytes.value > 0 {
        arg.push_str(&format!(
            ",l2size={},l2assoc={},l2blksize={}",
            timing.l2_size_bytes.value, timing.l2_ways.value, timing.l2_line_bytes.value
        ));
    }
    Ok(arg)
}

/// `timing` as `lab.json` records it; `from` names the file and table.
pub fn timing_record(timing: &TimingSpec, from: &str) -> CoreTiming {
    let l2 = (timing.l2_size_bytes.value > 0).then_some(CacheGeometry {
        size_bytes: timing.l2_size_bytes.value,
        ways: timing.l2_ways.value,
        line_bytes: timing.l2_line_bytes.value,
    });
    CoreTiming {
        core: timing.core.clone(),
        from: from.to_string(),
        costs: CoreCosts {
            clock_mhz: timing.clock_mhz.value,
            base_cpi: timing.base_cpi.value,
            taken_branch_cycles: timing.taken_branch_cycles.value,
            mispredict_cycles: timing.mispredict_cycles.value,
            l2_hit_cycles: timing.l2_hit_cycles.value,
            dram_cycles: timing.dram_cycles.value,
        },
        l2,
        predictor: PredictorInfo {
            kind: timing.predictor.value.clone(),
            entries: timing.predictor_entries.value,
            history_bits: timing.predictor_history_bits.value,
            return_stack: timing.return_stack_entries.value,
            btac: timing.btac_entries.value,
        },
        sources: timing
            .values()
            .into_iter()
            .map(|(name, value, source)| ValueSource {
                name: name.to_string(),
                value,
                source: source.to_string(),
            })
            .collect(),
    }
}
