//! One row of device fit: a device's kernel image or one of its whole
//! images, base → variant, and its verdict.

use serde::Serialize;

use crate::results::device_fit::LimitKind;

/// Which side of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FitSide {
    /// The base build.
    Base,
    /// The variant build.
    Variant,
}

/// One device's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceRow {
    /// The device.
    pub device: String,
    /// The whole image this row sizes (`sysupgrade.bin`), with the rootfs;
    /// `None`: the kernel image, `<device>-kernel.bin`.
    pub image: Option<String>,
    /// The side whose device list alone has it (the checkout's device list
    /// changed between the builds), else `None`. Its limit, headroom and
    /// verdict are that side's.
    pub only_in: Option<FitSide>,
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
    /// Limit minus the variant's size (the base's for a device only the
    /// base has), bytes (negative: over).
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
    /// The LZMA SDK encoder's kernel image minus liblzma's, bytes (the
    /// variant's, else the base's).
    pub lzma_margin: Option<i64>,
    /// Whether the verdict may differ with OpenWrt's `lzma`: for a kernel
    /// row, the headroom is within the margin either way; for a whole
    /// image, sizing it with the kernel image that many bytes longer or
    /// shorter changes the verdict (padding may absorb the difference).
    pub lzma_near: bool,
}

/// Whether `headroom` is within `margin` bytes either way (a kernel row's
/// [`DeviceRow::lzma_near`]).
pub fn within(headroom: Option<i64>, margin: Option<i64>) -> bool {
    match (headroom, margin) {
        (Some(h), Some(m)) => h.unsigned_abs() <= m.unsigned_abs(),
        _ => false,
    }
}

/// A row's verdict, as the text table words it and CSV tags it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FitVerdict {
    /// Either side's image could not be made ([`DeviceRow::error`]).
    CannotMake,
    /// The base fits, the variant does not.
    StopsFitting,
    /// The base does not fit, the variant does.
    FitsAgain,
    /// Fits (both sides, or the one side that lists the device).
    Fits,
    /// Does not fit.
    DoesNotFit,
    /// No limit.
    NoLimit,
    /// A limit, but no image size (and no error saying why).
    NoSize,
}

impl FitVerdict {
    /// The words of the text table.
    pub fn words(self) -> &'static str {
        match self {
            FitVerdict::CannotMake => "cannot make",
            FitVerdict::StopsFitting => "fits → does not fit",
            FitVerdict::FitsAgain => "does not fit → fits",
            FitVerdict::Fits => "fits",
            FitVerdict::DoesNotFit => "does not fit",
            FitVerdict::NoLimit => "no limit",
            FitVerdict::NoSize => "no size recorded",
        }
    }

    /// The CSV tag.
    pub fn tag(self) -> &'static str {
        match self {
            FitVerdict::CannotMake => "cannot-make",
            FitVerdict::StopsFitting => "stops-fitting",
            FitVerdict::FitsAgain => "fits-again",
            FitVerdict::Fits => "fits",
            FitVerdict::DoesNotFit => "does-not-fit",
            FitVerdict::NoLimit => "no-limit",
            FitVerdict::NoSize => "no-size",
        }
    }
}

impl DeviceRow {
    /// The row's verdict: an error first, then a flip, then the fit of the
    /// variant (of the base, for a device only the base lists).
    pub fn verdict(&self) -> FitVerdict {
        let fits = match self.only_in {
            Some(FitSide::Base) => self.base_fits,
            _ => self.variant_fits,
        };
        match (&self.error, self.base_fits.zip(self.variant_fits), fits) {
            (Some(_), _, _) => FitVerdict::CannotMake,
            (None, Some((true, false)), _) => FitVerdict::StopsFitting,
            (None, Some((false, true)), _) => FitVerdict::FitsAgain,
            (None, _, Some(true)) => FitVerdict::Fits,
            (None, _, Some(false)) => FitVerdict::DoesNotFit,
            (None, _, None) if self.limit.is_some() => FitVerdict::NoSize,
            (None, _, None) => FitVerdict::NoLimit,
        }
    }
}
