//! End-to-end checks of the real tiny-profile builds that `cargo xtask test`
//! makes before running the tests: results are complete, the two variants
//! really were built with different KBUILD_CFLAGS, and every recorded number
//! agrees with the files and with binutils `size`.

use crate::common::gate;

use std::path::Path;

use xshell::{cmd, Shell};
use xtask::host::selftest::E2E_VARIANTS;
use xtask::results::BuildResult;
use xtask::util::hash::sha256_file;

fn results() -> Option<Vec<(std::path::PathBuf, BuildResult)>> {
    let mut out = Vec::new();
    for variant in E2E_VARIANTS {
        let dir = gate::e2e_results_dir(variant)?;
        let result = BuildResult::read(&dir).unwrap();
        out.push((dir, result));
    }
    Some(out)
}

#[test]
fn artifacts_exist_and_match_their_records() {
    let Some(results) = results() else { return };
    for (dir, result) in &results {
        assert!(dir.join("zImage").is_file(), "{}: no zImage", dir.display());
        for (name, record) in &result.artifacts {
            let file = dir.join(name);
            assert_eq!(
                std::fs::metadata(&file).unwrap().len(),
                record.size,
                "{}",
                file.display()
            );
            assert_eq!(
                sha256_file(&file).unwrap(),
                record.sha256,
                "{}",
                file.display()
            );
        }
        for name in ["zImage", "vmlinux", "vmlinux.lzma"] {
            assert!(
                result.artifacts.contains_key(name),
                "{}: {name} not recorded",
                dir.display()
            );
        }
    }
}

#[test]
fn variants_differ_in_flags_and_sizes() {
    let Some(results) = results() else { return };
    let (base, other) = (&results[0].1, &results[1].1);
    // arm-tiny builds at -O2, as OpenWrt builds bcm53xx (targets/kconfig/o2.config).
    assert_ne!(base.kbuild_cflags.o2, other.kbuild_cflags.o2);
    assert!(base.kbuild_cflags.o2.contains("-fno-reorder-blocks"));
    assert!(!other.kbuild_cflags.o2.contains("-fno-reorder-blocks"));
    for r in [base, other] {
        // The flags in effect are really on kbuild's recorded compiler command line.
        assert_eq!(r.kbuild_cflags.effective, "o2");
        assert_eq!(r.kbuild_cflags.in_effect(), r.kbuild_cflags.o2);
        assert!(
            r.kbuild_cflags
                .compile_command
                .contains(r.kbuild_cflags.in_effect()),
            "{}: {:?} not in {}",
            r.variant.name,
            r.kbuild_cflags.o2,
            r.kbuild_cflags.compile_command
        );
    }
    assert_ne!(
        base.artifacts["zImage"].size,
        other.artifacts["zImage"].size
    );
    assert_ne!(
        base.artifacts["vmlinux"].sha256,
        other.artifacts["vmlinux"].sha256
    );
    // Same source, same config: only the flags patch differs.
    assert_eq!(base.kernel_source.sha256, other.kernel_source.sha256);
    assert_eq!(base.config_sha256, other.config_sha256);
    let flag_patch = |r: &BuildResult| {
        r.patches
            .iter()
            .find(|p| p.name.ends_with("201-extra_optimization.patch"))
            .map(|p| p.sha256.clone())
            .expect("201-extra_optimization.patch applied")
    };
    assert_ne!(flag_patch(base), flag_patch(other));
}

/// result.json's text/data/bss equal what the cross binutils `size` prints.
#[test]
fn vmlinux_sections_equal_binutils_size() {
    let Some(results) = results() else { return };
    let sh = Shell::new().unwrap();
    for (dir, result) in &results {
        let vmlinux = dir.join("vmlinux");
        let out = cmd!(sh, "arm-linux-gnueabi-size {vmlinux}").read().unwrap();
        let numbers: Vec<u64> = out
            .lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .take(3)
            .map(|n| n.parse().unwrap())
            .collect();
        let s = result.vmlinux_sections;
        assert_eq!(
            numbers,
            vec![s.text, s.data, s.bss],
            "{}",
            Path::new(&vmlinux).display()
        );
    }
}

/// vmlinux.lzma decompresses (with xz, the reference decoder) to vmlinux.bin.
#[test]
fn lzma_image_unpacks_to_the_raw_kernel() {
    let Some(results) = results() else { return };
    let sh = Shell::new().unwrap();
    for (dir, _) in &results {
        let lzma = dir.join("vmlinux.lzma");
        let out = cmd!(sh, "xz --format=lzma -dc {lzma}").output().unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, std::fs::read(dir.join("vmlinux.bin")).unwrap());
    }
}

#[test]
fn a_second_build_of_the_same_inputs_is_up_to_date() {
    let Some(results) = results() else { return };
    let sh = Shell::new().unwrap();
    let bin = env!("CARGO_BIN_EXE_xtask");
    let [a, b] = E2E_VARIANTS;
    let started = std::time::Instant::now();
    let out = cmd!(
        sh,
        "{bin} build --target arm-tiny --variant {a} --variant {b} --dry-run"
    )
    .read()
    .unwrap();
    for (_, r) in &results {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("arm-tiny/{} ", r.variant.name)))
            .unwrap_or_else(|| panic!("no plan line for {}:\n{out}", r.variant.name));
        assert!(
            line.contains(&r.build_key),
            "{line}\nrecorded {}",
            r.build_key
        );
        assert!(line.ends_with("up to date"), "{line}");
    }
    // The real command skips both and says so, without running make.
    let log = cmd!(
        sh,
        "{bin} build --target arm-tiny --variant {a} --variant {b}"
    )
    .read_stderr()
    .unwrap();
    assert_eq!(log.matches(": up to date").count(), 2, "{log}");
    eprintln!(
        "plan and skip took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
