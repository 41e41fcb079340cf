//! The variants a lab compares, chosen by name from `patches/variants.toml`.

use anyhow::Result;

use crate::inputs::variants;
use crate::util::layout::Layout;

/// `names` selected from `patches/variants.toml` (baseline when empty),
/// in order; [`variants::select`] drops repeats.
pub fn chosen_variants(layout: &Layout, names: &[String]) -> Result<Vec<variants::Variant>> {
    let all = variants::load(&layout.variants_file(), &layout.patches_dir())?;
    let names = if names.is_empty() {
        vec![variants::BASELINE.to_string()]
    } else {
        names.to_vec()
    };
    variants::select(&all, &names)
}
