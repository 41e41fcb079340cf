//! `size-report --by file|dir` over fixture results: the rows add up to
//! each side's `size` figures in every format, and a missing, stale or
//! inconsistent `attribution.json` is refused with the command that makes
//! it. (`tests/it/size_attribution.rs` checks the attribution itself against
//! binutils `size`.)

use crate::common::report_fixture;

use report_fixture::{request, write_attribution, Fixture};
use xtask::measure::linkmap::{Grouping, FILL, GAPS};
use xtask::report::{self, Format, Style};
use xtask::results::attribution::AttributionRecord;

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.standard("bcm53xx");
    write_attribution(
        &f.results_dir("bcm53xx", "baseline"),
        [
            &[
                ("net/ipv4/tcp.o", 12_000),
                ("net/ipv4/udp.o", 3_000),
                ("kernel/fork.o", 9_000),
                (FILL, 10),
            ],
            &[("net/ipv4/tcp.o", 1_000), ("kernel/fork.o", 2_000)],
            &[("kernel/fork.o", 2_000)],
        ],
    );
    write_attribution(
        &f.results_dir("bcm53xx", "no-reorder-blocks"),
        [
            &[
                ("net/ipv4/tcp.o", 11_800),
                ("net/ipv4/udp.o", 3_100),
                ("kernel/fork.o", 8_990),
                ("lib/new.o", 12),
                (FILL, 6),
            ],
            &[("net/ipv4/tcp.o", 1_004), ("kernel/fork.o", 2_000)],
            &[("kernel/fork.o", 2_000)],
        ],
    );
    f
}

fn by(g: Grouping) -> xtask::report::ReportRequest {
    xtask::report::ReportRequest {
        by: Some(g),
        ..request(&["bcm53xx"], &["no-reorder-blocks"])
    }
}

#[test]
fn rows_add_up_to_size_in_every_format() {
    let f = fixture();
    for g in [Grouping::File, Grouping::Dir] {
        let r = report::load(&f.layout(), &by(g)).unwrap();
        let diff = r.targets[0].comparisons[0].attribution.as_ref().unwrap();
        let sum = |after: bool| -> (u64, u64, u64) {
            diff.rows.iter().fold((0, 0, 0), |(t, d, b), r| {
                let c = if after { r.after } else { r.before };
                (t + c.text, d + c.data, b + c.bss)
            })
        };
        assert_eq!(sum(false), (30_000, 4_000, 2_000));
        assert_eq!(sum(true), (29_712, 4_004, 2_000));
        let text = report::render(&r, Format::Text, &Style::default()).unwrap();
        assert!(
            text.contains(
                "Total: text 30000 → 29712, data 4000 → 4004, bss 2000 → 2000, dec 36000 → 35716 (-284): size's figures"
            ),
            "{text}"
        );
        // Largest |change| first: files tcp.o -196, gaps -186, udp.o +100,
        // new.o +12, fork.o -10, fill -4; directories gaps -186,
        // net/ipv4/ -96, lib/ +12, kernel/ -10, fill -4.
        let order: &[&str] = if g == Grouping::Dir {
            &["(alignment gaps)", "net/ipv4/", "lib/", "kernel/", "(fill)"]
        } else {
            &[
                "net/ipv4/tcp.o",
                "(alignment gaps)",
                "net/ipv4/udp.o",
                "lib/new.o",
                "kernel/fork.o",
                "(fill)",
            ]
        };
        let names: Vec<&str> = diff.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(&names[..order.len()], order);
        let at = |name: &str| {
            text.find(&format!("\n{name} "))
                .unwrap_or_else(|| panic!("{name}: {text}"))
        };
        assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
        for format in [Format::Mail, Format::Markdown] {
            let out = report::render(&r, format, &Style::default()).unwrap();
            assert!(out.contains("size's figures"), "{format}: {out}");
        }
        let json: serde_json::Value =
            serde_json::from_str(&report::render(&r, Format::Json, &Style::default()).unwrap())
                .unwrap();
        let a = &json["targets"][0]["comparisons"][0]["attribution"];
        let rows = a["rows"].as_array().unwrap();
        let text_after: u64 = rows
            .iter()
            .map(|r| r["after"]["text"].as_u64().unwrap())
            .sum();
        assert_eq!(text_after, 29_712);
        assert_eq!(a["after"]["data"], 4_004);
        let csv = report::render(&r, Format::Csv, &Style::default()).unwrap();
        let kind = if g == Grouping::Dir {
            "by-dir"
        } else {
            "by-file"
        };
        assert!(
            csv.contains(&format!("{kind}-total,dec,36000,35716,-284")),
            "{csv}"
        );
        let (net, text_row) = if g == Grouping::Dir {
            ("net/ipv4/", "15000,14900,-100")
        } else {
            ("net/ipv4/tcp.o", "12000,11800,-200")
        };
        assert!(
            csv.contains(&format!("{kind}-text,{net},{text_row}")),
            "{csv}"
        );
        assert!(!csv.contains(&format!("{kind}-bss,{net},")), "{csv}");
        assert!(report::render(&r, Format::Svg, &Style::default()).is_err());
    }
    // Cut to one level: net/ holds net/ipv4/; JSON says dir:1, CSV by-dir.
    let r = report::load(&f.layout(), &by(Grouping::DirDepth(1))).unwrap();
    let diff = r.targets[0].comparisons[0].attribution.as_ref().unwrap();
    let names: Vec<&str> = diff.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        ["(alignment gaps)", "net/", "lib/", "kernel/", "(fill)"]
    );
    let json = report::render(&r, Format::Json, &Style::default()).unwrap();
    assert!(
        json.contains("\"grouping\":\"dir:1\"") || json.contains("\"grouping\": \"dir:1\""),
        "{json}"
    );
    let csv = report::render(&r, Format::Csv, &Style::default()).unwrap();
    assert!(csv.contains("by-dir,net/,16000,15904,-96"), "{csv}");
    // Directories: net/ipv4/ holds tcp.o and udp.o.
    let r = report::load(&f.layout(), &by(Grouping::Dir)).unwrap();
    let diff = r.targets[0].comparisons[0].attribution.as_ref().unwrap();
    let row = diff.rows.iter().find(|r| r.name == "net/ipv4/").unwrap();
    assert_eq!(
        row.delta(),
        (11_800 + 3_100 + 1_004) - (12_000 + 3_000 + 1_000)
    );
}

#[test]
fn missing_stale_or_inconsistent_attributions_are_refused() {
    let f = fixture();
    let dir = f.results_dir("bcm53xx", "no-reorder-blocks");
    let file = dir.join("attribution.json");
    let text = std::fs::read_to_string(&file).unwrap();

    std::fs::remove_file(&file).unwrap();
    let e = format!(
        "{:#}",
        report::load(&f.layout(), &by(Grouping::File)).unwrap_err()
    );
    assert!(e.contains("attribution.json"), "{e}");
    assert!(
        e.contains("cargo xtask build --target bcm53xx --variant no-reorder-blocks"),
        "{e}"
    );

    let mut stale: AttributionRecord = serde_json::from_str(&text).unwrap();
    stale.vmlinux_sha256 = "f".repeat(64);
    stale.write(&dir).unwrap();
    let e = format!(
        "{:#}",
        report::load(&f.layout(), &by(Grouping::File)).unwrap_err()
    );
    assert!(e.contains("describes another vmlinux"), "{e}");

    let mut off: AttributionRecord = serde_json::from_str(&text).unwrap();
    *off.sections[0].objects.get_mut(GAPS).unwrap() += 1;
    off.write(&dir).unwrap();
    let e = format!(
        "{:#}",
        report::load(&f.layout(), &by(Grouping::File)).unwrap_err()
    );
    assert!(e.contains("adds up to text 29713"), "{e}");

    // Sizes no 32-bit section holds are refused before anything is added
    // (u64::MAX overflowed the sums and the differences: a panic).
    for bytes in [u64::MAX, 1 << 63, (1 << 32) + 1] {
        let mut huge: AttributionRecord = serde_json::from_str(&text).unwrap();
        let first = huge.sections[0].objects.keys().next().unwrap().clone();
        huge.sections[0].objects.insert(first, bytes);
        huge.write(&dir).unwrap();
        let e = format!(
            "{:#}",
            report::load(&f.layout(), &by(Grouping::Dir)).unwrap_err()
        );
        assert!(e.contains("more than a vmlinux section holds"), "{e}");
    }

    // A name with a newline would break out of a Markdown fence.
    let mut fenced: AttributionRecord = serde_json::from_str(&text).unwrap();
    let first = fenced.sections[0].objects.keys().next().unwrap().clone();
    let bytes = fenced.sections[0].objects.remove(&first).unwrap();
    fenced.sections[0]
        .objects
        .insert("x\n```\n# Injected\ny.o".to_string(), bytes);
    fenced.write(&dir).unwrap();
    let e = format!(
        "{:#}",
        report::load(&f.layout(), &by(Grouping::File)).unwrap_err()
    );
    assert!(e.contains("holds control characters"), "{e}");

    // Without --by nothing is read.
    std::fs::write(&file, "not json").unwrap();
    report::load(&f.layout(), &request(&["bcm53xx"], &["no-reorder-blocks"])).unwrap();
}
