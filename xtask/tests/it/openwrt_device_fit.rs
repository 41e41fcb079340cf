//! Device fit (OpenWrt mode): every device of a target's image Makefiles,
//! its limits and its kernel image made from one kernel, against the
//! OpenWrt fixture and the reference tools (make, mkimage, xz).
//!
//! * the device list make gives for ramips/mt7621 equals the
//!   `TARGET_DEVICES +=` lines of its Makefiles, read as text;
//! * limits as check-size reads them (`6144k`), `DEFAULT := n` on ath79;
//! * each device's image from a tiny kernel has the size of the image
//!   [`openwrt_image::make_image`] makes with mkimage and the LZMA encoder;
//! * a device that cannot be made is listed with the reason.

use crate::common::openwrt_fixture;
use crate::common::openwrt_image as openwrt_image_common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use openwrt_fixture::Fixture;
use openwrt_image_common::*;
use xshell::{cmd, Shell};
use xtask::inputs::openwrt::image::devices::{evaluate_all, DeviceEntry};
use xtask::inputs::openwrt::image::MakeEnv;
use xtask::inputs::openwrt::{Checkout, OpenwrtTarget};
use xtask::kernel_build::openwrt_image::{self, fit, KernelTree};
use xtask::results::device_fit::LimitKind;

fn all(fx: &Fixture, target: &str, linux: &Path) -> Vec<DeviceEntry> {
    all_devices(&fx.root, target, linux)
}

/// `TARGET_DEVICES += <names>` of the subtarget's .mk, read as text (no
/// make): the devices in the order written.
fn target_devices_in_text(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().strip_prefix("TARGET_DEVICES"))
        .filter_map(|l| l.trim_start().strip_prefix("+="))
        .flat_map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect()
}

#[test]
fn every_mt7621_device_with_its_limits() {
    let Some(fx) = Fixture::unpack() else { return };
    let dir = tempfile::tempdir().unwrap();
    let linux = fake_linux(dir.path());
    let entries = all(&fx, "ramips/mt7621", &linux);
    let names: Vec<String> = entries.iter().map(|e| e.device.clone()).collect();
    let text = target_devices_in_text(&fx.root.join("target/linux/ramips/image/mt7621.mk"));
    assert_eq!(names, text);
    assert!(names.len() > 250, "{}", names.len());
    let erx = entries
        .iter()
        .find(|e| e.device == "ubnt_edgerouter-x")
        .unwrap();
    let (r, l) = erx.evaluated.as_ref().unwrap();
    // The ER-X boots through OpenWrt's lzma-loader.
    assert_eq!(
        r.recipe(),
        "kernel-bin | append-dtb | lzma | loader-kernel | uImage none"
    );
    let k = l.kernel_size.as_ref().unwrap();
    assert_eq!((k.text.as_str(), k.bytes), ("6144k", 6144 * 1024));
    // Its NAND sysupgrade image calls no check-size: IMAGE_SIZE does not apply.
    assert!(
        l.image_size_checks.is_empty() && l.image_size.is_none(),
        "{l:?}"
    );
    let ac85p = entries
        .iter()
        .find(|e| e.device == "asus_rt-ac85p")
        .unwrap();
    let (_, l85) = ac85p.evaluated.as_ref().unwrap();
    assert_eq!(l85.image_size_checks, ["factory.bin"]);
    assert_eq!(l85.image_size.as_ref().unwrap().bytes, 51200 * 1024);
    assert!(!l.default_n);
    // Every entry was evaluated (mt7621 has no device make cannot expand).
    for e in &entries {
        assert!(
            e.evaluated.is_ok(),
            "{}: {:?}",
            e.device,
            e.evaluated.as_ref().err()
        );
    }

    // ath79/tiny: OpenWrt marks the Ubiquiti tiny devices DEFAULT := n.
    let tiny = all(&fx, "ath79/tiny", &linux);
    let marked: Vec<&str> = tiny
        .iter()
        .filter(|e| e.evaluated.as_ref().is_ok_and(|(_, l)| l.default_n))
        .map(|e| e.device.as_str())
        .collect();
    let text =
        std::fs::read_to_string(fx.root.join("target/linux/ath79/image/tiny-ubnt.mk")).unwrap();
    let want = text.matches("DEFAULT := n").count();
    assert!(want > 0);
    assert!(marked.len() >= want, "{marked:?}");
}

/// A tiny statically linked MIPS "kernel" (as in openwrt_image.rs).
fn tiny_vmlinux(sh: &Shell, dir: &Path) -> PathBuf {
    let src = dir.join("start.c");
    let mut body = String::from("const char banner[] = \"Linux version 6.12.1\";\n");
    for i in 0..200 {
        body.push_str(&format!(
            "int f{i}(int x) {{ return x * {i} + {}; }}\n",
            i * 7
        ));
    }
    body.push_str("void _start(void) { for (;;) ; }\n");
    std::fs::write(&src, body).unwrap();
    let lds = dir.join("tiny.lds");
    std::fs::write(
        &lds,
        "SECTIONS {\n . = 0x80001000;\n .text : { *(.text*) }\n .rodata : { *(.rodata*) }\n\
         .data : { *(.data*) *(.sdata*) }\n /DISCARD/ : { *(.MIPS.abiflags) *(.note*) }\n}\n",
    )
    .unwrap();
    let out = dir.join("vmlinux");
    cmd!(sh, "mipsel-linux-gnu-gcc -Os -nostdlib -static -fno-pic -mno-abicalls -Wl,--build-id=none -Wl,-e,_start -T {lds} -o {out} {src}")
        .quiet()
        .run()
        .unwrap();
    out
}

#[test]
fn images_equal_the_single_device_path_and_failures_say_why() {
    if !crate::common::gate::Needs::new()
        .program("lzma_alone", "lzma-alone")
        .met()
    {
        return;
    }
    let Some(fx) = Fixture::unpack() else { return };
    let dir = tempfile::tempdir().unwrap();
    let linux = fake_linux(dir.path());
    let sh = Shell::new().unwrap();
    let src = dir.path().join("dts");
    std::fs::create_dir(&src).unwrap();
    write_test_dts(&src);
    // A second board with other content, and one that does not compile.
    std::fs::write(
        src.join("other_board.dts"),
        "/dts-v1/;\n/ { model = \"other\"; chosen { bootargs = \"console=ttyS0,57600\"; }; };\n",
    )
    .unwrap();
    std::fs::write(src.join("broken_board.dts"), "/dts-v1/;\n/ { oops \n").unwrap();
    // A fixed flash layout whose firmware partition is bcm4709-asus-rt-ac87u's.
    std::fs::write(
        src.join("layout_board.dts"),
        "/dts-v1/;\n/ { model = \"layout\"; #address-cells = <1>; #size-cells = <1>;\n\
         flash@1c000000 { reg = <0x1c000000 0x8000000>; partitions {\n\
         compatible = \"fixed-partitions\"; #address-cells = <1>; #size-cells = <1>;\n\
         boot@0 { label = \"boot\"; reg = <0x0 0x80000>; };\n\
         firmware@200000 { label = \"firmware\"; reg = <0x200000 0x7cc0000>; }; }; }; };\n",
    )
    .unwrap();
    let vmlinux = tiny_vmlinux(&sh, dir.path());
    add_mips_headers(&linux);
    let tree = KernelTree {
        linux_dir: &linux,
        vmlinux: &vmlinux,
        cross_compile: "mipsel-linux-gnu-",
        karch: "mips",
        linux_version: "6.12.1",
    };
    let mut entries = all(&fx, "ramips/mt7621", &linux);
    let keep = [
        ("tplink_archer-c6-v3", "test_board"),
        // Without IMAGE_SIZE (cleared below): the DT's firmware partition.
        ("asus_rt-ac85p", "layout_board"),
        ("iptime_t5004", "broken_board"),
        // Both through the lzma-loader, with DTBs of different sizes: the
        // second's loader is the first's code plus its own data.
        ("xiaomi_mi-router-4a-gigabit", "test_board"),
        ("ubnt_edgerouter-x", "other_board"),
        // Through the relocation stub, then a FIT image.
        ("belkin_rt1800", "test_board"),
    ];
    entries.retain(|e| keep.iter().any(|(d, _)| *d == e.device));
    for e in &mut entries {
        let (r, l) = e.evaluated.as_mut().unwrap();
        r.device_dts = vec![keep.iter().find(|(d, _)| *d == e.device).unwrap().1.into()];
        r.dtb_source_dir = src.clone();
        if e.device == "asus_rt-ac85p" {
            l.kernel_size = None;
            l.image_size = None;
        }
    }
    let started = Instant::now();
    let record = fit::fit_all(
        &entries,
        &tree,
        &dir.path().join("kdir"),
        2,
        "ramips/mt7621",
    )
    .unwrap();
    eprintln!("fit_all: {:.2} s", started.elapsed().as_secs_f64());
    let mut loaders = 0;
    assert_eq!(record.devices.len(), entries.len(), "nothing skipped");
    for (e, f) in entries.iter().zip(&record.devices) {
        assert_eq!(e.device, f.device);
        let (r, _) = e.evaluated.as_ref().unwrap();
        let single =
            openwrt_image::make_image(&sh, r, &tree, &dir.path().join(format!("one-{}", e.device)));
        match (&f.kernel_bytes, single) {
            (Some(size), Ok(image)) => {
                assert_eq!(
                    *size,
                    std::fs::metadata(&image).unwrap().len(),
                    "{}",
                    e.device
                );
                assert!(f.error.is_none());
                // mkimage's header and the payload xz decodes.
                let fields = mkimage_list(&sh, &image);
                assert_eq!(fields["Load Address"], "80001000");
                if r.recipe().contains("loader-kernel") {
                    // `uImage none` of the loader: the loader starts with
                    // its code, at LZMA_TEXT_START, and holds the LZMA
                    // stream of kernel + DTB.
                    assert_eq!(
                        fields["Image Type"],
                        "MIPS Linux Kernel Image (uncompressed)"
                    );
                    loaders += 1;
                }
            }
            (None, Err(err)) => {
                let why = f.error.clone().unwrap();
                eprintln!("{}: {why}", e.device);
                if e.device.starts_with("belkin") {
                    assert!(why.contains("`fit"), "{why}");
                    assert!(why.contains("scripts/mkits.sh"), "{why}");
                    assert!(!fx.root.join("scripts/mkits.sh").exists());
                    assert!(why.contains(&r.origin_text()), "{why}");
                } else if e.device.starts_with("iptime") {
                    assert!(why.contains("broken_board.dts"), "{why}");
                } else {
                    panic!("{}: {why} / {err:#}", e.device);
                }
            }
            (size, single) => panic!(
                "{}: {size:?} vs {:?}",
                e.device,
                single.map_err(|e| format!("{e:#}"))
            ),
        }
    }
    let fits: Vec<_> = record
        .devices
        .iter()
        .filter(|d| d.kernel_bytes.is_some())
        .collect();
    assert!(fits.len() >= 4, "{:?}", record.devices);
    assert_eq!(loaders, 2);
    // The firmware partition is the limit only where the Makefile sets none.
    for d in &record.devices {
        let from_dt = d.limits.firmware_partition.as_ref();
        if d.device == "asus_rt-ac85p" {
            assert_eq!(
                from_dt.map(|l| (l.text.as_str(), l.bytes)),
                Some(("0x7cc0000", 0x7cc0000)),
                "{d:?}"
            );
            assert_eq!(d.limit().unwrap().0, LimitKind::FirmwarePartition);
        } else {
            assert_eq!(from_dt, None, "{d:?}");
        }
    }
    assert!(fits.iter().all(|d| d.fits() == Some(true)));
    // Every LZMA-compressed image carries the LZMA SDK encoder's margin:
    // present, and small beside the image (the encoders differ in their
    // match finder's choices, not in the format).
    assert_eq!(record.lzma_sdk_error, None);
    for d in &fits {
        let lzma = d.recipe.as_deref().is_some_and(|r| r.contains("lzma"));
        match d.lzma_margin {
            Some(m) => assert!(
                lzma && m.unsigned_abs() * 20 < d.kernel_bytes.unwrap(),
                "{}: {m} of {:?}",
                d.device,
                d.kernel_bytes
            ),
            None => assert!(!lzma, "{}: no margin", d.device),
        }
    }
}

/// Manual measurement (not run by `cargo test`): device fit for every
/// device of ramips/mt7621 (or `$XTASK_FIT_TARGET`, e.g. ath79/generic,
/// with its cross compiler prefix in `$XTASK_FIT_CROSS`) from a built
/// kernel tree. `XTASK_FIT_BUILD` is a kernel build directory (`vmlinux`,
/// `source` → the kernel source; an OpenWrt-mode build's `linux/`, which
/// is its own source, needs a `source` link to itself):
/// `XTASK_FIT_BUILD=… cargo test --test it openwrt_device_fit:: -- --ignored --nocapture`.
#[test]
#[ignore = "manual: needs a built MIPS kernel in $XTASK_FIT_BUILD"]
fn mt7621_every_device_from_a_real_kernel() {
    let build = PathBuf::from(std::env::var_os("XTASK_FIT_BUILD").expect("XTASK_FIT_BUILD"));
    let Some(fx) = Fixture::unpack() else { return };
    let dir = tempfile::tempdir().unwrap();
    let source = std::fs::canonicalize(build.join("source")).unwrap();
    let vmlinux = dir.path().join("vmlinux");
    std::fs::copy(build.join("vmlinux"), &vmlinux).unwrap();
    let t0 = Instant::now();
    let checkout = Checkout::open(&fx.root).unwrap();
    let target_name =
        std::env::var("XTASK_FIT_TARGET").unwrap_or_else(|_| "ramips/mt7621".to_string());
    let cross =
        std::env::var("XTASK_FIT_CROSS").unwrap_or_else(|_| "mipsel-linux-gnu-".to_string());
    let target = OpenwrtTarget::resolve(&checkout, &target_name).unwrap();
    let env = MakeEnv {
        linux_dir: &source,
        karch: "mips",
        linux_version: "6.12.1",
    };
    let entries = evaluate_all(&checkout, &target, &env).unwrap();
    let t_make = t0.elapsed().as_secs_f64();
    let tree = KernelTree {
        linux_dir: &source,
        vmlinux: &vmlinux,
        cross_compile: &cross,
        karch: "mips",
        linux_version: "6.12.1",
    };
    let record = fit::fit_all(&entries, &tree, &dir.path().join("kdir"), 2, &target_name).unwrap();
    let total = t0.elapsed().as_secs_f64();
    let made = record
        .devices
        .iter()
        .filter(|d| d.kernel_bytes.is_some())
        .count();
    println!(
        "{} devices: make {t_make:.2} s, images {:.2} s, total {total:.2} s; {made} made, {} not",
        record.devices.len(),
        record.seconds,
        record.devices.len() - made
    );
    let mut closest: Vec<_> = record
        .devices
        .iter()
        .filter(|d| d.headroom().is_some())
        .collect();
    closest.sort_by_key(|d| d.headroom());
    for d in closest.iter().take(10) {
        let (kind, limit) = d.limit().unwrap();
        println!(
            "{} {} {:?} {} headroom {} ({:.1} %)",
            d.device,
            d.kernel_bytes.unwrap(),
            kind,
            limit.text,
            d.headroom().unwrap(),
            d.headroom_percent().unwrap()
        );
    }
    if let Some(erx) = record
        .devices
        .iter()
        .find(|d| d.device == "ubnt_edgerouter-x")
    {
        println!(
            "ubnt_edgerouter-x: {:?} bytes, headroom {:?}, fits {:?}, error {:?}",
            erx.kernel_bytes,
            erx.headroom(),
            erx.fits(),
            erx.error
        );
        assert!(erx.fits().is_some(), "the ER-X gets a verdict");
    }
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for d in &record.devices {
        if let Some(e) = &d.error {
            // The step and why, without the device and its file:line.
            let key = match (e.find("KERNEL step `"), e.find(" (supported:")) {
                (Some(a), Some(b)) if a < b => {
                    let step = e[a..].split('`').nth(1).unwrap_or("");
                    let word = step.split_whitespace().next().unwrap_or("");
                    format!("{word}: {}", e[a..b].split(": ").last().unwrap_or(""))
                }
                _ => e.chars().take(160).collect(),
            };
            *reasons.entry(key).or_default() += 1;
        }
    }
    for (r, n) in reasons {
        println!("{n} x …{r}");
    }
}

/// Limits as check-size evaluates them: make's `exp_units` (the stand-in
/// rules.mk's definition), then the shell's `$(( ))`, against
/// [`limits::parse_limit`]. Sizes from the snapshot's Makefiles.
#[test]
fn limits_as_make_and_the_shell_evaluate_them() {
    use xtask::inputs::openwrt::image::{limits, RULES_MK};
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for size in [
        "3072k",
        "15424k",
        "6144k",
        "16m",
        "0xf60000",
        "0x1fb0000",
        "1g",
        "7872k",
    ] {
        let expr = openwrt_fixture::make_eval(
            &sh,
            dir.path(),
            RULES_MK,
            &[],
            &format!("$(call exp_units,{size})"),
            None,
        );
        assert_eq!(expr.trim(), limits::exp_units(size), "{size}");
        let script = "echo $(($1))";
        let want: u64 = cmd!(sh, "sh -c {script} sh {expr}")
            .read()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(limits::parse_limit(size).unwrap().bytes, want, "{size}");
    }
}
