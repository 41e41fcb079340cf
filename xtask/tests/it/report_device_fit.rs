//! `size-report --devices` over hostile and uneven `device-fit.json` files:
//! every device either side lists is in the table, a pattern of many `*`
//! answers at once, and a record that describes another build, lists a
//! device twice, names one with a newline, writes a limit whose text is not
//! its bytes or holds sizes out of range is refused, naming the file, the
//! side and the fix.

use crate::common::report_fixture;

use std::path::Path;

use report_fixture::{request, Fixture};
use serde_json::{json, Value};
use xtask::report::{self, Format, Style};
use xtask::results::BuildResult;

/// A 3072k kernel limit.
fn limits() -> Value {
    json!({ "kernel_size": { "text": "3072k", "bytes": 3_145_728 },
            "image_size": null, "image_size_checks": [], "default_n": false, "broken": false })
}

fn device(name: &str, bytes: u64) -> Value {
    json!({ "device": name, "recipe": "kernel-bin | lzma | uImage lzma",
            "kernel_bytes": bytes, "error": null, "limits": limits(),
            "blocksize": "64k", "images": [] })
}

/// Makes `dir`'s result an OpenWrt-mode build of bcm53xx/generic and
/// writes its `device-fit.json` with `devices`, `edit` applied last.
pub fn write_fit(dir: &Path, devices: Vec<Value>, edit: impl FnOnce(&mut Value)) {
    let mut result: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("result.json")).unwrap()).unwrap();
    result["openwrt"] = json!({
        "checkout": "/openwrt", "target": "bcm53xx/generic", "kernel": "6.12",
        "kcflags": [], "patch_counts": {}, "dropped": [],
        "kconfig": { "unknown": [], "unmet": [], "changed": [] }
    });
    std::fs::write(dir.join("result.json"), result.to_string()).unwrap();
    let sha = BuildResult::read(dir).unwrap().artifacts["vmlinux"]
        .sha256
        .clone();
    let mut record = json!({ "schema": 2, "vmlinux_sha256": sha,
                             "openwrt_target": "bcm53xx/generic", "seconds": 1.5,
                             "devices": devices });
    edit(&mut record);
    std::fs::write(dir.join("device-fit.json"), record.to_string()).unwrap();
}

fn report_text(f: &Fixture, pattern: &str) -> Result<String, String> {
    let mut req = request(&["bcm53xx"], &[]);
    req.devices = Some(pattern.to_string());
    let report = report::load(&f.layout(), &req).map_err(|e| format!("{e:#}"))?;
    Ok(report::render(&report, Format::Text, &Style::default()).unwrap())
}

/// A base with devices a (fits) and gone (over its limit, dropped from the
/// variant's device list), a variant where a stops fitting.
fn fixture() -> Fixture {
    let f = Fixture::new();
    f.standard("bcm53xx");
    write_fit(
        &f.results_dir("bcm53xx", "baseline"),
        vec![device("a", 3_000_000), device("gone", 3_200_000)],
        |_| {},
    );
    write_fit(
        &f.results_dir("bcm53xx", "no-reorder-blocks"),
        vec![device("a", 3_145_729)],
        |_| {},
    );
    f
}

#[test]
fn a_device_only_the_base_lists_is_in_the_table() {
    let f = fixture();
    let text = report_text(&f, "*").unwrap();
    assert!(
        text.contains("2 devices (2 made, 0 could not be), 1 stop fitting"),
        "{text}"
    );
    let gone = text.lines().find(|l| l.starts_with("gone ")).expect(&text);
    assert!(
        gone.contains("3200000") && gone.ends_with("only in the base: does not fit"),
        "{gone}"
    );
    let a = text.lines().find(|l| l.starts_with("a ")).expect(&text);
    assert!(a.ends_with("fits → does not fit"), "{a}");
    let mut req = request(&["bcm53xx"], &[]);
    req.devices = Some("*".to_string());
    let loaded = report::load(&f.layout(), &req).unwrap();
    let csv = report::render(&loaded, Format::Csv, &Style::default()).unwrap();
    assert!(
        csv.contains("gone limit=3145728 only-in-base:does-not-fit"),
        "{csv}"
    );
}

/// The glob matcher backtracked exponentially on
/// repeated `*` (16 stars on one device: 20 s). These would not finish.
#[test]
fn a_pattern_of_many_stars_answers_at_once() {
    let f = fixture();
    let stars = "*".repeat(60);
    let text = report_text(&f, &format!("{stars}x")).unwrap();
    assert!(text.contains("0 devices"), "{text}");
    let text = report_text(&f, &format!("{stars}e")).unwrap();
    assert!(
        text.contains("1 devices") && text.contains("gone"),
        "{text}"
    );
    assert!(xtask::report::device_fit::matches(
        &"*?".repeat(40),
        &"y".repeat(45)
    ));
    assert!(!xtask::report::device_fit::matches(
        &format!("{}z", "*a".repeat(40)),
        &"a".repeat(200)
    ));
}

#[test]
fn a_hostile_device_fit_json_is_refused_naming_the_file_and_side() {
    type Edit = fn(&mut Value);
    let cases: [(&str, Edit, &str); 15] = [
        (
            "an image name that is a path",
            |r| {
                r["devices"][0]["images"] =
                    json!([{ "image": "../x", "recipe": "check-size", "error": null }])
            },
            "image name \"../x\" is not a plain file name",
        ),
        (
            "an escape in an image recipe",
            |r| {
                r["devices"][0]["images"] = json!([{ "image": "sysupgrade.bin",
                    "recipe": "append-kernel\u{1b}[2J | check-size", "error": null }])
            },
            "image sysupgrade.bin: recipe is longer than 4096 characters or holds control",
        ),
        (
            "an image name with an escape",
            |r| {
                r["devices"][0]["images"] =
                    json!([{ "image": "x\u{1b}[2J", "recipe": "check-size", "error": null }])
            },
            "is not a plain file name",
        ),
        (
            "an image listed twice",
            |r| {
                let i = json!({ "image": "sysupgrade.bin", "recipe": "check-size", "error": null });
                r["devices"][0]["images"] = json!([i.clone(), i]);
            },
            "image sysupgrade.bin is listed twice",
        ),
        (
            "a name with a newline",
            |r| r["devices"][0]["device"] = json!("a\nfake_row 1 2 3 fits"),
            "device name \"a\\nfake_row 1 2 3 fits\"",
        ),
        (
            "a device listed twice",
            |r| r["devices"][1]["device"] = json!("a"),
            "device a is listed twice",
        ),
        (
            "a limit whose text is not its bytes",
            |r| r["devices"][0]["limits"]["kernel_size"]["text"] = json!("8m"),
            "\"8m\" is 8388608 bytes as check-size reads it, but the record says 3145728",
        ),
        (
            "a size out of range",
            |r| r["devices"][0]["kernel_bytes"] = json!(9_223_372_036_854_775_813u64),
            "kernel_bytes 9223372036854775813 is more than",
        ),
        (
            "u64::MAX",
            |r| r["devices"][0]["kernel_bytes"] = json!(u64::MAX),
            "is more than",
        ),
        (
            "another vmlinux",
            |r| r["vmlinux_sha256"] = json!("0".repeat(64)),
            "describes another vmlinux than bcm53xx/baseline's (sha256 000000000000)",
        ),
        (
            "another target",
            |r| r["openwrt_target"] = json!("ramips/mt7621"),
            "is of OpenWrt target ramips/mt7621, but bcm53xx/baseline was built for bcm53xx/generic",
        ),
        (
            "a right-to-left override in a name",
            |r| r["devices"][0]["device"] = json!("a\u{202e}stif"),
            "not printable ASCII",
        ),
        (
            "a limit that overflows check-size's arithmetic",
            |r| r["devices"][0]["limits"]["kernel_size"]["text"] = json!("(-9223372036854775807-1)/-1"),
            "overflow",
        ),
        (
            "a limit of 200,000 parentheses",
            |r| {
                r["devices"][0]["limits"]["kernel_size"]["text"] =
                    json!(format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000)))
            },
            "is longer than 128 characters",
        ),
        (
            "an escape in a limit",
            |r| r["devices"][0]["limits"]["kernel_size"]["text"] = json!("3072k\u{1b}[2J"),
            "holds control characters",
        ),
    ];
    for (what, edit, says) in cases {
        let f = fixture();
        write_fit(
            &f.results_dir("bcm53xx", "baseline"),
            vec![device("a", 3_000_000), device("gone", 3_200_000)],
            edit,
        );
        let err = report_text(&f, "*").unwrap_err();
        assert!(err.contains(says), "{what}: {err}");
        assert!(
            err.starts_with("--devices, the base bcm53xx/baseline: "),
            "{what}: {err}"
        );
        assert!(
            err.contains("bcm53xx/baseline/device-fit.json")
                && err.contains("cargo xtask build --openwrt"),
            "{what}: {err}"
        );
    }
    // One side without the file: the message says which.
    let f = fixture();
    std::fs::remove_file(
        f.results_dir("bcm53xx", "no-reorder-blocks")
            .join("device-fit.json"),
    )
    .unwrap();
    let err = report_text(&f, "*").unwrap_err();
    assert!(
        err.contains("the variant bcm53xx/no-reorder-blocks has no"),
        "{err}"
    );
}

/// A device whose Makefile sets no limit is judged by its
/// device tree's firmware partition, and one with neither says so.
#[test]
fn a_limit_from_the_device_tree_is_shown_as_such_and_no_limit_says_why() {
    let f = Fixture::new();
    f.standard("bcm53xx");
    let dt = |name: &str, bytes: u64| {
        let mut d = device(name, bytes);
        d["limits"] = json!({ "kernel_size": null, "image_size": null,
            "image_size_checks": [], "default_n": false, "broken": false,
            "firmware_partition": { "text": "0x1e00000", "bytes": 0x1e0_0000 } });
        d
    };
    let none = |name: &str, bytes: u64| {
        let mut d = device(name, bytes);
        d["limits"]["kernel_size"] = Value::Null;
        d
    };
    // `old_base`: the base's record was made before xtask read device
    // trees; the variant's limit judges both sides.
    write_fit(
        &f.results_dir("bcm53xx", "baseline"),
        vec![
            dt("netgear_r8000", 30_000_000),
            none("cfe_board", 2_000_000),
            none("old_base", 31_000_000),
        ],
        |_| {},
    );
    write_fit(
        &f.results_dir("bcm53xx", "no-reorder-blocks"),
        vec![
            dt("netgear_r8000", 31_500_000),
            none("cfe_board", 2_000_100),
            dt("old_base", 31_500_000),
        ],
        |_| {},
    );
    let text = report_text(&f, "*").unwrap();
    assert!(text.contains("2 stop fitting"), "{text}");
    let old = text
        .lines()
        .find(|l| l.starts_with("old_base"))
        .expect(&text);
    assert!(old.contains("fits → does not fit"), "{old}");
    let mut req = request(&["bcm53xx"], &[]);
    req.devices = Some("*".to_string());
    let loaded = report::load(&f.layout(), &req).unwrap();
    let csv = report::render(&loaded, Format::Csv, &Style::default()).unwrap();
    assert!(
        csv.contains("netgear_r8000 limit=dt:31457280 kernel-only:"),
        "{csv}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("netgear_r8000"))
        .expect(&text);
    assert!(
        row.contains("DT 0x1e00000") && row.contains("fits → does not fit (kernel only)"),
        "{row}"
    );
    assert!(
        text.contains("the firmware partition of the device tree's fixed flash layout"),
        "{text}"
    );
    assert!(
        text.contains("no limit: no check-size applies KERNEL_SIZE or IMAGE_SIZE to it"),
        "{text}"
    );
    // A limit text that is not its bytes is refused for this limit too.
    write_fit(
        &f.results_dir("bcm53xx", "no-reorder-blocks"),
        vec![dt("netgear_r8000", 31_500_000)],
        |r| r["devices"][0]["limits"]["firmware_partition"]["text"] = json!("0x1f00000"),
    );
    let err = report_text(&f, "*").unwrap_err();
    assert!(err.contains("firmware_partition \"0x1f00000\""), "{err}");
    // Recorded only where the Makefile sets no limit.
    write_fit(
        &f.results_dir("bcm53xx", "no-reorder-blocks"),
        vec![dt("netgear_r8000", 31_500_000)],
        |r| r["devices"][0]["limits"]["kernel_size"] = json!({"text": "3072k", "bytes": 3_145_728}),
    );
    let err = report_text(&f, "*").unwrap_err();
    assert!(
        err.contains("firmware_partition is recorded only without"),
        "{err}"
    );
}

/// With a rootfs, a device judged by its device tree's firmware partition
/// gets a `kernel + rootfs` row: the least its image holds, against the
/// partition (the ath79/tiny TL-WR841N v9 case: a kernel that fits alone,
/// an image that cannot).
#[test]
fn with_a_rootfs_a_dt_limited_device_counts_kernel_and_rootfs() {
    use xtask::report::device_fit::images::RootfsSummary;
    use xtask::util::elf_ident::elf_kind;
    let f = Fixture::new();
    f.standard("bcm53xx");
    let dt = |bytes: u64| {
        let mut d = device("tplink_tl-wr841-v9", bytes);
        d["limits"] = json!({ "kernel_size": null, "image_size": null,
            "image_size_checks": [], "default_n": false, "broken": false,
            "firmware_partition": { "text": "0x3d0000", "bytes": 0x3d_0000 } });
        d
    };
    write_fit(
        &f.results_dir("bcm53xx", "baseline"),
        vec![dt(1_790_000)],
        |_| {},
    );
    write_fit(
        &f.results_dir("bcm53xx", "no-reorder-blocks"),
        vec![dt(1_800_000)],
        |_| {},
    );
    let vmlinux = f.results_dir("bcm53xx", "baseline").join("vmlinux");
    let kind = elf_kind(&std::fs::read(&vmlinux).unwrap()[..64]).expect("an ELF vmlinux");
    let mut req = request(&["bcm53xx"], &[]);
    req.devices = Some("*".to_string());
    req.rootfs = Some(RootfsSummary {
        source: "root.squashfs".into(),
        origin: "a squashfs".into(),
        bytes: 2_200_000,
        sha256: "0".repeat(64),
        arch: Some((kind, "bin/busybox".into())),
    });
    let loaded = report::load(&f.layout(), &req).unwrap();
    let text = report::render(&loaded, Format::Text, &Style::default()).unwrap();
    let both = text
        .lines()
        .find(|l| l.starts_with("tplink_tl-wr841-v9 kernel + rootfs"))
        .expect(&text);
    // 1,790,000 + 2,200,000 = 3,990,000 fits 0x3d0000 (3,997,696);
    // 4,000,000 does not.
    assert!(
        both.contains("3990000")
            && both.contains("4000000")
            && both.contains("fits → does not fit"),
        "{both}"
    );
    assert!(text.contains("1 stop fitting"), "{text}");
    let alone = text
        .lines()
        .find(|l| l.starts_with("tplink_tl-wr841-v9 "))
        .filter(|l| l.contains("(kernel only)"))
        .or_else(|| text.lines().find(|l| l.contains("(kernel only)")))
        .expect(&text);
    assert!(alone.contains("fits (kernel only)"), "{alone}");
}
