//! Device fit base → variant: every device of an OpenWrt-mode target, its
//! kernel image size on each side, its limit, headroom and whether it
//! stopped fitting (or started again), from each result's `device-fit.json`
//! ([`crate::results::device_fit`]).
//!
//! The limit is `KERNEL_SIZE` when the device sets one (check-size on the
//! kernel image itself, exact), else `IMAGE_SIZE` where an image recipe
//! applies it: the whole image's limit, of which the report gives the
//! kernel's share (the headroom is what is left for the rootfs, which the
//! workbench does not build). Devices OpenWrt marks `DEFAULT := n` say so;
//! a device whose image could not be made is listed with the reason.

use std::fmt::Write as _;

use serde::Serialize;

use crate::results::device_fit::{DeviceFit, DeviceFitRecord, LimitKind};

/// One device's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceRow {
    /// The device.
    pub device: String,
    /// `kernel_size` or `image_size` (the rootfs share); `None`: no limit.
    pub limit_kind: Option<LimitKind>,
    /// The limit as written (`3072k`).
    pub limit: Option<String>,
    /// The limit in bytes.
    pub limit_bytes: Option<u64>,
    /// `<device>-kernel.bin` of the base, bytes.
    pub base_bytes: Option<u64>,
    /// The same of the variant.
    pub variant_bytes: Option<u64>,
    /// Limit minus the variant's size, bytes (negative: over).
    pub headroom: Option<i64>,
    /// The headroom in percent of the limit.
    pub headroom_percent: Option<f64>,
    /// check-size's verdict for the base.
    pub base_fits: Option<bool>,
    /// The same for the variant.
    pub variant_fits: Option<bool>,
    /// OpenWrt marks it `DEFAULT := n`.
    pub default_n: bool,
    /// Why an image could not be made (either side).
    pub error: Option<String>,
}

impl DeviceRow {
    /// `fits → does not fit`, `does not fit → fits`, or `None`.
    pub fn flip(&self) -> Option<&'static str> {
        match (self.base_fits?, self.variant_fits?) {
            (true, false) => Some("fits → does not fit"),
            (false, true) => Some("does not fit → fits"),
            _ => None,
        }
    }
}

/// The device fit of one comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceFitDiff {
    /// The OpenWrt target.
    pub openwrt_target: String,
    /// The `--devices` pattern applied, if any.
    pub pattern: Option<String>,
    /// Rows in the Makefiles' order.
    pub rows: Vec<DeviceRow>,
}

/// Whether `device` matches `pattern`: a glob with `*` and `?` when it has
/// one, else a substring.
pub fn matches(pattern: &str, device: &str) -> bool {
    if !pattern.contains(['*', '?']) {
        return device.contains(pattern);
    }
    fn glob(p: &[u8], s: &[u8]) -> bool {
        match (p.first(), s.first()) {
            (None, None) => true,
            (Some(b'*'), _) => glob(&p[1..], s) || (!s.is_empty() && glob(p, &s[1..])),
            (Some(b'?'), Some(_)) => glob(&p[1..], &s[1..]),
            (Some(a), Some(b)) if a == b => glob(&p[1..], &s[1..]),
            _ => false,
        }
    }
    glob(pattern.as_bytes(), device.as_bytes())
}

impl DeviceFitDiff {
    /// Rows for the devices of `new` matching `pattern`, with `old`'s sizes
    /// (a device only one side has is listed with what that side says).
    pub fn new(old: &DeviceFitRecord, new: &DeviceFitRecord, pattern: Option<&str>) -> Self {
        let rows = new
            .devices
            .iter()
            .filter(|d| pattern.is_none_or(|p| matches(p, &d.device)))
            .map(|v| {
                let b = old.devices.iter().find(|b| b.device == v.device);
                row(b, v)
            })
            .collect();
        DeviceFitDiff {
            openwrt_target: new.openwrt_target.clone(),
            pattern: pattern.map(str::to_string),
            rows,
        }
    }

    /// The devices that stop fitting.
    pub fn stop_fitting(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.flip() == Some("fits → does not fit"))
            .count()
    }

    /// A plain-text table, the devices closest to their limit first, then
    /// those without a limit, then those that could not be made.
    pub fn render(&self, top: Option<usize>) -> String {
        let mut rows: Vec<&DeviceRow> = self.rows.iter().collect();
        rows.sort_by_key(|r| (r.error.is_some(), r.headroom.is_none(), r.headroom));
        let made = self.rows.iter().filter(|r| r.error.is_none()).count();
        let mut out = format!(
            "{} devices ({} made, {} could not be), {} stop fitting, {} fit again\n",
            self.rows.len(),
            made,
            self.rows.len() - made,
            self.stop_fitting(),
            self.rows
                .iter()
                .filter(|r| r.flip() == Some("does not fit → fits"))
                .count()
        );
        let _ = writeln!(
            out,
            "{:<40} {:>10} {:>10} {:>13} {:>11} {:>7}  verdict",
            "device", "base", "variant", "limit", "headroom", "%"
        );
        let n = top.unwrap_or(rows.len());
        for r in rows.iter().take(n) {
            let num = |v: Option<u64>| v.map_or("-".into(), |v| v.to_string());
            let limit = match (&r.limit, r.limit_kind) {
                (Some(l), Some(LimitKind::ImageSize)) => format!("IMAGE {l}"),
                (Some(l), _) => format!("KERNEL {l}"),
                _ => "none".into(),
            };
            let verdict = match (&r.error, r.flip(), r.variant_fits) {
                (Some(e), _, _) => format!("cannot make: {e}"),
                (None, Some(f), _) => f.to_string(),
                (None, None, Some(true)) => "fits".into(),
                (None, None, Some(false)) => "does not fit".into(),
                (None, None, None) => "no limit".into(),
            };
            let _ = writeln!(
                out,
                "{:<40} {:>10} {:>10} {:>13} {:>11} {:>7}  {verdict}{}",
                r.device,
                num(r.base_bytes),
                num(r.variant_bytes),
                limit,
                r.headroom.map_or("-".into(), |h| h.to_string()),
                r.headroom_percent.map_or("-".into(), |p| format!("{p:.1}")),
                if r.default_n {
                    " (OpenWrt: DEFAULT := n)"
                } else {
                    ""
                }
            );
        }
        if rows.len() > n {
            let _ = writeln!(out, "… {} more devices", rows.len() - n);
        }
        out.push_str(
            "IMAGE limits are the whole image's (kernel + rootfs): the headroom is what is left \
             for the rootfs, which is not built here.\n",
        );
        out
    }
}

fn row(base: Option<&DeviceFit>, v: &DeviceFit) -> DeviceRow {
    let limit = v.limit();
    DeviceRow {
        device: v.device.clone(),
        limit_kind: limit.map(|(k, _)| k),
        limit: limit.map(|(_, l)| l.text.clone()),
        limit_bytes: limit.map(|(_, l)| l.bytes),
        base_bytes: base.and_then(|b| b.kernel_bytes),
        variant_bytes: v.kernel_bytes,
        headroom: v.headroom(),
        headroom_percent: v.headroom_percent(),
        base_fits: base.and_then(DeviceFit::fits),
        variant_fits: v.fits(),
        default_n: v.limits.default_n,
        error: v
            .error
            .clone()
            .or_else(|| base.and_then(|b| b.error.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::device_fit::{DeviceLimits, Limit};

    fn record(bytes: u64) -> DeviceFitRecord {
        let limits = DeviceLimits {
            kernel_size: Some(Limit {
                text: "3072k".into(),
                bytes: 3072 * 1024,
            }),
            ..Default::default()
        };
        DeviceFitRecord {
            schema: 1,
            vmlinux_sha256: String::new(),
            openwrt_target: "ramips/mt7621".into(),
            seconds: 0.0,
            devices: vec![
                DeviceFit {
                    device: "ubnt_edgerouter-x".into(),
                    recipe: None,
                    kernel_bytes: Some(bytes),
                    error: None,
                    limits,
                },
                DeviceFit {
                    device: "xiaomi_mi-router-4a-gigabit".into(),
                    recipe: None,
                    kernel_bytes: None,
                    error: Some("KERNEL step `loader-kernel` is not supported".into()),
                    limits: Default::default(),
                },
            ],
        }
    }

    #[test]
    fn a_device_stops_fitting_at_one_byte_over() {
        let at = 3072 * 1024;
        let d = DeviceFitDiff::new(&record(at), &record(at + 1), None);
        assert_eq!(d.rows[0].base_fits, Some(true), "size = limit fits (-ge)");
        assert_eq!(d.rows[0].flip(), Some("fits → does not fit"));
        assert_eq!(d.rows[0].headroom, Some(-1));
        assert_eq!(d.stop_fitting(), 1);
        let back = DeviceFitDiff::new(&record(at + 1), &record(at), None);
        assert_eq!(back.rows[0].flip(), Some("does not fit → fits"));
        let text = d.render(None);
        assert!(text.contains("fits → does not fit"), "{text}");
        assert!(
            text.contains("cannot make: KERNEL step `loader-kernel`"),
            "{text}"
        );
        let only = DeviceFitDiff::new(&record(at), &record(at), Some("ubnt_*"));
        assert_eq!(only.rows.len(), 1);
        assert!(matches("xiaomi", "xiaomi_mi-router-4a-gigabit"));
        assert!(!matches("ubnt_?", "ubnt_edgerouter-x"));
    }
}
