//! An OpenWrt device's kernel image (`<device>-kernel.bin`, recorded by
//! OpenWrt mode next to the target's own artifacts) is compared in
//! `size-report` like the other artifacts.

use crate::common::report_fixture;

use report_fixture::{render, request, Fixture};
use xtask::report::{Format, Style};

#[test]
fn a_device_image_is_compared_with_the_other_artifacts() {
    let f = Fixture::new();
    for (variant, size) in [("baseline", 1_973_455), ("no-reorder-blocks", 1_980_000)] {
        let result = f.result(
            "ath79",
            variant,
            &[
                ("uImage", 1_900_000),
                ("tplink_archer-c7-v5-kernel.bin", size),
            ],
            (30_000, 4_000, 2_000),
        );
        f.write(result, &[]);
    }
    let out = render(
        &f,
        &request(&["ath79"], &[]),
        Format::Text,
        Style::default(),
    );
    assert!(
        out.contains("tplink_archer-c7-v5-kernel.bin size: 1973455 → 1980000 (+0.33%)"),
        "{out}"
    );
    let csv = render(&f, &request(&["ath79"], &[]), Format::Csv, Style::default());
    assert!(csv.contains("tplink_archer-c7-v5-kernel.bin"), "{csv}");
}
