//! Every device of a target's image Makefiles (`TARGET_DEVICES`), evaluated
//! in one make run: the stand-in image.mk expands them in order, as
//! include/image.mk's `BuildImage` does, and prints each one's recipe.

use anyhow::Result;

use super::{limits, DeviceRecipe, MakeEnv, MakeRun};
use crate::inputs::openwrt::{Checkout, OpenwrtTarget};

/// One device as make evaluated it.
#[derive(Debug, Clone)]
pub struct DeviceEntry {
    /// The device (`ubnt_edgerouter-x`).
    pub device: String,
    /// Its recipe and limits, or why they could not be read (the device is
    /// listed, never skipped).
    pub evaluated: Result<(DeviceRecipe, limits::MakefileLimits), String>,
}

/// Every device of `TARGET_DEVICES` of `target`'s image Makefiles, in
/// their order, with its kernel recipe ([`super::evaluate`]) and limits
/// ([`limits::limits`]).
///
/// Errors when make itself fails (its stderr included) or prints no device
/// list; a device make printed too little for is an entry with the reason.
pub fn evaluate_all(
    checkout: &Checkout,
    target: &OpenwrtTarget,
    env: &MakeEnv<'_>,
) -> Result<Vec<DeviceEntry>> {
    let run = MakeRun::run(checkout, target, env, "XTASK_ALL_DEVICES=1")?;
    run.ensure_success("every device")?;
    let devices = run.printed.devices.clone().unwrap_or_default();
    let mut out = Vec::with_capacity(devices.len());
    let mut seen = std::collections::BTreeSet::new();
    for device in devices {
        // TARGET_DEVICES may name a device twice; image.mk expands it twice
        // and the second expansion wins, as here.
        if !seen.insert(device.clone()) {
            continue;
        }
        let evaluated = match run.printed.per_device.get(&device) {
            None => Err("make printed nothing for it".to_string()),
            Some(p) => run
                .recipe(&device, p.clone())
                .and_then(|r| limits::limits(&r).map(|l| (r, l)))
                .map_err(|e| format!("{e:#}")),
        };
        out.push(DeviceEntry { device, evaluated });
    }
    Ok(out)
}
