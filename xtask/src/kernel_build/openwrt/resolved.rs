//! Everything one OpenWrt-mode job is built from ([`Resolved`]), as
//! [`super::OpenwrtBackend`] resolves it.

use std::path::PathBuf;

use crate::inputs::kernel_source::PristineTree;
use crate::inputs::openwrt::image::DeviceRecipe;
use crate::inputs::openwrt::{flags, Selection};
use crate::kernel_build::openwrt_lab::LabResolved;
use crate::kernel_build::plan::Unevaluated;
use crate::patches::openwrt_series::PreparedTree;
use crate::patches::series::SeriesPatch;

/// Everything one job is built from, before the variant's own patches.
pub(super) struct Resolved {
    pub(super) pristine: PristineTree,
    pub(super) selection: Selection,
    pub(super) openwrt: PreparedTree,
    pub(super) variant_series: Vec<SeriesPatch>,
    pub(super) kcflags: flags::KernelFlags,
    pub(super) dot_config: Vec<u8>,
    /// The target's `openwrt_device` recipe, for the tree `openwrt.dir`.
    pub(super) image: Option<DeviceRecipe>,
    /// Its stand-in when a dry run did not evaluate it.
    pub(super) image_unevaluated: Option<Unevaluated>,
    /// The config files merged into `dot_config`, in order.
    pub(super) config_files: Vec<PathBuf>,
    /// A lab kernel's side ([`super::openwrt_lab`]).
    pub(super) lab: Option<LabResolved>,
}

impl Resolved {
    /// Whether OpenWrt's config sets `symbol` (to anything but `is not set`).
    pub(super) fn dot_config_sets(&self, symbol: &str) -> bool {
        let line = format!("CONFIG_{symbol}=");
        String::from_utf8_lossy(&self.dot_config)
            .lines()
            .any(|l| l.starts_with(&line))
    }
}
