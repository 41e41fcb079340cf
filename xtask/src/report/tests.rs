//! Unit tests of the model's arithmetic, and that renderers walk the
//! model: a family no renderer knows of appears in every format.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::document::{Comparison, Report, TargetReport};
use super::model::{mean, stddev, Change, Decimal, Family, Metric, Number, Samples, UnitLabel};
use super::render;
use super::style::{Format, Style};
use crate::measure::sections::SectionSizes;
use crate::results::{
    ArtifactRecord, BuildResult, Cflags, SourceRecord, TargetRecord, VariantRecord, SCHEMA,
};

fn result(variant: &str, zimage: u64) -> BuildResult {
    let artifacts = BTreeMap::from([(
        "zImage".to_string(),
        ArtifactRecord {
            size: zimage,
            sha256: "0".repeat(64),
        },
    )]);
    BuildResult {
        schema: SCHEMA,
        build_key: "f".repeat(64),
        target: TargetRecord {
            name: "bcm53xx".to_string(),
            openwrt: "bcm53xx/generic".to_string(),
            aliases: Vec::new(),
            soc: "BCM47094".to_string(),
            cpu: "ARM Cortex-A9".to_string(),
            arch: "arm".to_string(),
            cross_compile: "arm-linux-gnueabi-".to_string(),
            compiler_package: "gcc-arm-linux-gnueabi".to_string(),
            kernel: "6.12".to_string(),
            in_all: true,
            kconfig_base: "multi_v7_defconfig".to_string(),
            kconfig_fragments: Vec::new(),
            make_targets: vec!["zImage".to_string()],
            artifacts: vec!["zImage".to_string()],
            uimage: None,
        },
        variant: VariantRecord {
            name: variant.to_string(),
            description: String::new(),
            os_flags: "-Os".to_string(),
            o2_flags: "-O2".to_string(),
            patches: Vec::new(),
            kconfig: Vec::new(),
        },
        backend: "kernel-tree".to_string(),
        kernel_source: SourceRecord {
            version: "6.12.117".to_string(),
            origin: "linux-6.12.117.tar.xz".to_string(),
            sha256: None,
        },
        compiler: "arm-linux-gnueabi-gcc 12.2.0".to_string(),
        kbuild_cflags: Cflags {
            os: "-Os".to_string(),
            o2: "-O2".to_string(),
            effective: "os".to_string(),
            compile_command: String::new(),
        },
        patches: Vec::new(),
        config_sha256: "c".repeat(64),
        artifacts,
        lzma: None,
        vmlinux_sections: SectionSizes {
            text: 1000,
            data: 100,
            bss: 10,
        },
        started: String::new(),
        finished: String::new(),
        duration_seconds: 1.0,
        ccache: None,
        incremental_from: None,
        openwrt: None,
    }
}

/// A size report of one comparison plus a made-up family: `gizmo`, 3
/// samples per side, means 110 → 121 widgets (+10.00%).
fn report_with_made_up_family() -> Report {
    let root = PathBuf::from("/ws");
    let (base, variant) = (result("baseline", 4000), result("other", 4100));
    let (sizes, unpaired) = super::sizes::family(&base, &variant);
    let mut made_up = Family::new("made-up", "widgets", UnitLabel::Shown);
    made_up.metrics.push(
        Metric::new(
            "made-up",
            "gizmo",
            "gizmo",
            "gizmo output",
            Samples::Real(vec![100.0, 110.0, 120.0]),
            Samples::Real(vec![120.0, 121.0, 122.0]),
        )
        .unwrap(),
    );
    Report {
        base: "baseline".to_string(),
        root: root.clone(),
        targets: vec![TargetReport {
            name: "bcm53xx".to_string(),
            base,
            base_dir: root.join("results/bcm53xx/baseline"),
            comparisons: vec![Comparison {
                variant,
                dir: root.join("results/bcm53xx/other"),
                families: vec![sizes, made_up],
                unpaired_artifacts: unpaired,
                warnings: Vec::new(),
                notes: Vec::new(),
                symbols: None,
                attribution: None,
                device_fit: None,
            }],
        }],
        skipped: Vec::new(),
        symbols: None,
        by: None,
        labs: Vec::new(),
        agreement: None,
    }
}

#[test]
fn every_format_renders_a_family_it_does_not_know() {
    let report = report_with_made_up_family();
    for format in Format::ALL {
        let out = render(&report, format, &Style::default()).unwrap();
        assert!(out.contains("gizmo"), "{format}: no metric name\n{out}");
        // The sizes are still there.
        assert!(out.contains("zImage"), "{format}: no sizes\n{out}");
        match format {
            // Means 110 and 121 are exact, so the percent is exactly 10.
            Format::Csv => assert!(
                out.contains("\nbcm53xx,bcm53xx/generic,BCM47094,baseline,other,made-up,gizmo,110,121,11,10,made-up,widgets,,,,,,,,,,\n"),
                "{format}\n{out}"
            ),
            Format::Json => {
                let v: serde_json::Value = serde_json::from_str(&out).unwrap();
                let m = &v["targets"][0]["comparisons"][0]["metrics"][0];
                assert_eq!(m["family"], "made-up", "{out}");
                assert_eq!(m["unit"], "widgets", "{out}");
                assert_eq!(m["base_samples"].as_array().unwrap().len(), 3);
                assert_eq!(m["before"], 110.0);
                assert_eq!(m["after"], 121.0);
                assert_eq!(m["percent_text"], "+10.00%");
                assert_eq!(m["base_stddev"], 10.0);
                assert_eq!(m["variant_stddev"], 1.0);
            }
            _ => {
                for part in ["110.00", "121.00", "+10.00%"] {
                    assert!(out.contains(part), "{format}: {part} missing\n{out}");
                }
            }
        }
    }
    let text = render(&report, Format::Text, &Style::default()).unwrap();
    assert!(
        text.contains("gizmo output: 110.00 → 121.00 widgets (+10.00%, mean of 3 samples)\n"),
        "{text}"
    );
    let markdown = render(&report, Format::Markdown, &Style::default()).unwrap();
    assert!(
        markdown.contains("| gizmo (widgets) | 110.00 | 121.00 | +11.00 (+10.00%) |\n"),
        "{markdown}"
    );
    let comma = render(
        &report,
        Format::Text,
        &Style {
            decimal_comma: true,
        },
    )
    .unwrap();
    assert!(
        comma.contains("110,00 → 121,00 widgets (+10,00%"),
        "{comma}"
    );
}

#[test]
fn mean_and_stddev() {
    assert_eq!(mean(&[]), None);
    assert_eq!(mean(&[2.0, 4.0, 9.0]), Some(5.0));
    assert_eq!(stddev(&[3.0]), None);
    // 2, 4, 4, 4, 5, 5, 7, 9: sample variance 32/7.
    let sd = stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
    assert!((sd - (32.0f64 / 7.0).sqrt()).abs() < 1e-12, "{sd}");
}

#[test]
fn sampled_metric_arithmetic() {
    let m = Metric::new(
        "throughput",
        "tcp",
        "tcp",
        "tcp throughput",
        Samples::Real(vec![900.0, 940.0, 980.0]),
        Samples::Real(vec![950.0, 950.0]),
    )
    .unwrap();
    assert_eq!(m.before(), Number::Real(940.0));
    assert_eq!(m.after(), Number::Real(950.0));
    assert_eq!(m.delta().signed_text(Decimal::Comma), "+10,00");
    assert_eq!(m.percent_text(Decimal::Point), "+1.06%");
    assert_eq!(m.sample_note().unwrap(), "mean of 3 → 2 samples");
    assert_eq!(m.base().stddev(), Some(40.0));
    let none = Metric::new(
        "k",
        "i",
        "l",
        "p",
        Samples::Real(vec![]),
        Samples::Whole(vec![1]),
    );
    assert!(none.unwrap_err().to_string().contains("at least one"));
}

#[test]
fn whole_single_samples_are_exact() {
    let m = Metric::whole(
        "artifact",
        "zImage",
        "zImage",
        "zImage size",
        Change {
            before: 800,
            after: 801,
        },
    );
    assert_eq!(m.percent_text(Decimal::Point), "+0.13%");
    assert_eq!(m.delta(), Number::Signed(1));
    assert_eq!(m.sample_note(), None);
}

#[test]
fn an_openwrt_mode_base_says_what_became_of_openwrts_series_and_config() {
    use crate::results::openwrt::{ChangedSymbol, DroppedPatch, KconfigChanges, OpenwrtRecord};
    let mut report = report_with_made_up_family();
    let text = render(&report, Format::Text, &Style::default()).unwrap();
    assert!(
        !text.contains("OpenWrt "),
        "a default-mode base has no OpenWrt line"
    );
    report.targets[0].base.openwrt = Some(OpenwrtRecord {
        checkout: "/src/openwrt".into(),
        target: "bcm53xx/generic".into(),
        kernel: "6.12".into(),
        kcflags: vec!["-fno-caller-saves".into(), "-falign-functions=32".into()],
        patch_counts: BTreeMap::from([
            ("clean".into(), 300),
            ("offset".into(), 40),
            ("fuzz".into(), 10),
            ("upstream".into(), 11),
            ("conflict".into(), 2),
        ]),
        dropped: vec![DroppedPatch {
            name: "generic/1.patch".into(),
            class: "conflict".into(),
            note: "a.c: Hunk #1 FAILED at 1.".into(),
        }],
        kconfig: KconfigChanges {
            unknown: vec!["OPENWRT_ONLY".into()],
            unmet: Vec::new(),
            changed: vec![ChangedSymbol {
                symbol: "X".into(),
                wanted: "y".into(),
                got: Some("m".into()),
            }],
        },
        config_files: Vec::new(),
        lab: None,
    });
    let line = "OpenWrt bcm53xx/generic (Linux 6.12 series on 6.12.117, KCFLAGS -fno-caller-saves -falign-functions=32): 350 patches applied, 11 dropped (upstream), 2 left out (conflict); olddefconfig: 1 symbols the source does not know, 0 set symbols with unmet dependencies, 1 values changed\n";
    for format in [Format::Text, Format::Mail, Format::Markdown] {
        let out = render(&report, format, &Style::default()).unwrap();
        assert!(out.contains(line), "{format:?}:\n{out}");
    }
}

#[test]
fn an_openwrt_lab_kernel_says_what_is_openwrts_and_what_the_lab_added() {
    use crate::results::openwrt::{
        CpuRecord, FragmentRecord, KconfigChanges, LabSymbol, LeftOutPatch, OpenwrtLabRecord,
        OpenwrtRecord,
    };
    let mut report = report_with_made_up_family();
    let symbol = |name: &str, openwrt: Option<&str>, set_by: Option<&str>| LabSymbol {
        symbol: name.into(),
        openwrt: openwrt.map(String::from),
        lab: Some("y".into()),
        set_by: set_by.map(String::from),
    };
    report.targets[0].base.openwrt = Some(OpenwrtRecord {
        checkout: "/src/openwrt".into(),
        target: "armsr/armv7".into(),
        kernel: "6.12".into(),
        kcflags: vec!["-fno-caller-saves".into(), "-falign-functions=32".into()],
        patch_counts: BTreeMap::from([
            ("clean".into(), 172),
            ("offset".into(), 119),
            ("fuzz".into(), 17),
            ("upstream".into(), 11),
            ("conflict".into(), 28),
        ]),
        dropped: Vec::new(),
        kconfig: KconfigChanges::default(),
        config_files: vec![
            "target/linux/generic/config-6.12".into(),
            "target/linux/armsr/config-6.12".into(),
            "target/linux/armsr/armv7/config-6.12".into(),
        ],
        lab: Some(OpenwrtLabRecord {
            router_target: "bcm53xx/generic".into(),
            kcflags_from: "bcm53xx/generic: EXTRA_OPTIMIZATION from config/Config-devel.in:210, KERNEL_CFLAGS from config/Config-devel.in:148".into(),
            cpu: CpuRecord {
                cpu_type: "cortex-a9".into(),
                cpu_subtype: String::new(),
                from: "target/linux/bcm53xx/Makefile:11".into(),
                flags: vec!["-mcpu=cortex-a9".into()],
                flags_from: "OpenWrt's ARM toolchain default".into(),
            },
            fragments: vec![FragmentRecord {
                file: "kconfig/lab-openwrt.config".into(),
                sha256: "0".repeat(64),
            }],
            added: vec![
                symbol("ARCH_VEXPRESS", Some("n"), Some("kconfig/lab-vexpress.config:7")),
                symbol("CLK_SP810", None, None),
            ],
            left_out: vec![LeftOutPatch {
                name: "target/linux/bcm53xx/patches-6.12".into(),
                reason: "not in this checkout".into(),
            }],
        }),
    });
    let lines = [
        "OpenWrt-mode lab kernel of bcm53xx/generic (Linux 6.12 series on 6.12.117):\n",
        "- config: OpenWrt's armsr/armv7 (target/linux/generic/config-6.12, target/linux/armsr/config-6.12, target/linux/armsr/armv7/config-6.12)\n",
        "- patches: OpenWrt's armsr/armv7 series, 308 applied, 11 dropped (upstream), 28 left out (conflict); left out on purpose: target/linux/bcm53xx/patches-6.12 (not in this checkout)\n",
        "- KCFLAGS: bcm53xx/generic's, -fno-caller-saves -falign-functions=32 (bcm53xx/generic: EXTRA_OPTIMIZATION from config/Config-devel.in:210, KERNEL_CFLAGS from config/Config-devel.in:148)\n",
        "- CPU: bcm53xx/generic's CPU_TYPE cortex-a9 (target/linux/bcm53xx/Makefile:11) gives -mcpu=cortex-a9 (OpenWrt's ARM toolchain default) to OpenWrt's userspace and toolchain; OpenWrt's kernel build passes none of it (include/kernel.mk), so neither does the lab\n",
        "- the lab added 2 symbols to OpenWrt's config (kconfig/lab-openwrt.config): 1 set by its fragments, ARCH_VEXPRESS=y (OpenWrt: n); 1 follow from them: CLK_SP810\n",
    ]
    .concat();
    for format in [Format::Text, Format::Mail, Format::Markdown] {
        let out = render(&report, format, &Style::default()).unwrap();
        assert!(out.contains(&lines), "{format:?}:\n{out}");
        assert!(
            !out.contains("OpenWrt armsr/armv7 (Linux"),
            "{format:?}:\n{out}"
        );
    }
}

#[test]
fn a_lab_run_of_openwrt_kernels_notes_their_record_and_the_ruleset() {
    use crate::results::lab::{LabRecord, MachineInfo};
    use crate::results::openwrt::{
        CpuRecord, KconfigChanges, LeftOutPatch, OpenwrtLabRecord, OpenwrtRecord,
    };
    let dir = tempfile::tempdir().unwrap();
    let mut base = result("baseline", 4000);
    base.openwrt = Some(OpenwrtRecord {
        checkout: "/src/openwrt".into(),
        target: "malta/le".into(),
        kernel: "6.12".into(),
        kcflags: vec!["-fno-caller-saves".into()],
        patch_counts: BTreeMap::from([("clean".into(), 300)]),
        dropped: Vec::new(),
        kconfig: KconfigChanges::default(),
        config_files: vec!["target/linux/generic/config-6.12".into()],
        lab: Some(OpenwrtLabRecord {
            router_target: "bcm47xx/mips74k".into(),
            kcflags_from: "bcm47xx/mips74k: EXTRA_OPTIMIZATION from config/Config-devel.in:210"
                .into(),
            cpu: CpuRecord::default(),
            fragments: Vec::new(),
            added: Vec::new(),
            left_out: vec![LeftOutPatch {
                name: "target/linux/bcm47xx/patches-6.12".into(),
                reason: "not in this checkout".into(),
            }],
        }),
    });
    base.write(dir.path()).unwrap();
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lab_fixture/lab.json");
    let mut record: LabRecord =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let notes = super::openwrt_lab::run_notes(&record);
    assert!(notes.is_empty(), "a default-mode run: {notes:?}");
    for arm in record.arms.iter_mut() {
        if let Some(k) = arm.kernel.as_mut() {
            k.results_dir = dir.path().to_path_buf();
        }
    }
    let MachineInfo::Qemu { initramfs, .. } = &mut record.machine else {
        panic!("the fixture is a QEMU run");
    };
    initramfs.ruleset = Some("firewall4 (table inet fw4: …)".into());
    let notes = super::openwrt_lab::run_notes(&record);
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].starts_with("the lab kernels are OpenWrt's malta/le kernel (its config files and patch series, on Linux 6.12 series) with bcm47xx/mips74k's KCFLAGS -fno-caller-saves; "),
        "{}",
        notes[0]
    );
    assert_eq!(
        notes[1],
        "the guest's masquerade ruleset: firewall4 (table inet fw4: …)"
    );
}

/// `--by kconfig` finds the patched tree a result names, refuses clearly
/// when it is gone, and rows a record's objects by symbol from it.
#[test]
fn by_kconfig_reads_the_tree_the_result_names() {
    use crate::measure::linkmap::SectionAttribution;
    use crate::measure::sections::SectionClass;
    use crate::results::attribution::AttributionRecord;

    let scratch = tempfile::tempdir().unwrap();
    let layout = crate::util::layout::Layout::new(scratch.path());
    let mut r = result("epoll", 1);
    r.target.arch = "arm".to_string();
    let e = super::kconfig::source_tree(&layout, &r)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--by kconfig") && e.contains("--force"), "{e}");

    let src = &r.kernel_source;
    let identity = src.sha256.clone().unwrap_or_else(|| src.origin.clone());
    let tree =
        crate::patches::patched_source::tree_dir(&layout, &src.version, &identity, &r.patches);
    for (path, text) in [
        ("Kbuild", "obj-y += fs/\n"),
        ("Makefile", "libs-y := lib/\n"),
        (
            "fs/Makefile",
            "obj-y := open.o\nobj-$(CONFIG_EPOLL) += eventpoll.o\n",
        ),
    ] {
        let p = tree.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    assert_eq!(super::kconfig::source_tree(&layout, &r).unwrap(), tree);
    let record = AttributionRecord {
        schema: crate::results::attribution::SCHEMA,
        vmlinux_sha256: "0".repeat(64),
        map: "test".to_string(),
        sections: vec![SectionAttribution {
            name: ".text".to_string(),
            class: SectionClass::Text,
            size: 111,
            objects: BTreeMap::from([
                ("fs/open.o".to_string(), 100),
                ("fs/eventpoll.o".to_string(), 10),
                ("drivers/x.o".to_string(), 1),
            ]),
        }],
    };
    let (rows, unknown) = super::kconfig::rows(&tree, "arm", &record).unwrap();
    let text: BTreeMap<&str, u64> = rows.iter().map(|(k, v)| (k.as_str(), v.text)).collect();
    assert_eq!(
        text,
        BTreeMap::from([("(always)", 100), ("(unknown)", 1), ("CONFIG_EPOLL", 10)])
    );
    assert_eq!(unknown.len(), 1);
    assert!(unknown[0].starts_with("drivers/x.o: "), "{unknown:?}");
}
