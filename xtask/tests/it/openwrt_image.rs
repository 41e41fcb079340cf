//! OpenWrt mode's device kernel images (`<device>-kernel.bin`) against the
//! OpenWrt fixture and the reference tools:
//!
//! * the recipe each workbench target's `openwrt_device` resolves to, as
//!   GNU make evaluates the fixture's image Makefiles (snapshots), with the
//!   `file:line` of its `KERNEL` assignment checked in the file;
//! * a step xtask does not implement (lzma-loader) is refused before
//!   anything runs, naming the device, the line and the step;
//! * the whole recipe of three devices on a tiny kernel built with the
//!   targets' cross compilers, read back with `mkimage -l`, `dumpimage`
//!   and `xz -d`.
//!
//! Each step on its own: `openwrt_image_steps.rs`.

use crate::common::openwrt_fixture;
use crate::common::openwrt_image as openwrt_image_common;

use std::path::{Path, PathBuf};

use expect_test::{expect, Expect};
use openwrt_fixture::Fixture;
use openwrt_image_common::*;
use xshell::{cmd, Shell};
use xtask::inputs::openwrt::image::DeviceRecipe;
use xtask::inputs::openwrt::{Checkout, OpenwrtTarget};
use xtask::inputs::targets;
use xtask::kernel_build::artifacts::OBJCOPY_STRIP;
use xtask::kernel_build::openwrt_image::{self, KernelTree};

/// One workbench target's device recipe as text, paths relative to the fixture.
fn summary(fx: &Fixture, linux: &Path, r: &DeviceRecipe) -> String {
    let origin = r.origin.as_ref().unwrap();
    let rel = |p: &Path| {
        p.strip_prefix(&fx.root)
            .or_else(|_| p.strip_prefix(linux))
            .unwrap_or(p)
            .display()
            .to_string()
    };
    let mut s = format!(
        "{} {}: {}\n  from {}:{}\n  KERNEL_NAME={} DEVICE_DTS={} dtb from {} (-I {})\n",
        r.target,
        r.device,
        r.recipe(),
        rel(&origin.file),
        origin.line,
        r.kernel_name,
        r.device_dts.join(" "),
        rel(&r.dtb_source_dir),
        rel(&r.dts_dir),
    );
    for v in [
        "KERNEL_LOADADDR",
        "KERNEL_ENTRY",
        "UIMAGE_NAME",
        "UIMAGE_MAGIC",
    ] {
        s.push_str(&format!("  {v}={}\n", r.var(v).unwrap_or("")));
    }
    s
}

#[test]
fn each_target_device_resolves_to_its_recipe() {
    let Some(fx) = Fixture::unpack() else { return };
    let dir = tempfile::tempdir().unwrap();
    let linux = fake_linux(dir.path());
    let mut all = String::new();
    for t in targets::load_all(&targets_dir()).unwrap() {
        let Some(device) = &t.openwrt_device else {
            continue;
        };
        let r = recipe(&fx, &t.openwrt, device, &t.arch, &linux);
        // The assignment the origin names is a KERNEL line of that file.
        let origin = r.origin.clone().unwrap();
        let text = std::fs::read_to_string(&origin.file).unwrap();
        let line = text.lines().nth(origin.line - 1).unwrap();
        assert!(line.trim_start().starts_with("KERNEL"), "{origin}: {line}");
        assert!(
            line.contains(r.steps.last().unwrap().name.as_str()),
            "{origin}: {line}"
        );
        all.push_str(&format!("{}: {}", t.name, summary(&fx, &linux, &r)));
    }
    let want: Expect = expect![[r#"
        ath79: ath79/generic tplink_archer-c7-v5: kernel-bin | append-dtb | lzma | uImage lzma
          from target/linux/ath79/image/common-tp-link.mk:82
          KERNEL_NAME=vmlinux DEVICE_DTS=qca9563_tplink_archer-c7-v5 dtb from target/linux/ath79/image/../dts (-I arch/mips/boot/dts)
          KERNEL_LOADADDR=0x80060000
          KERNEL_ENTRY=
          UIMAGE_NAME=
          UIMAGE_MAGIC=
        ath79-tiny: ath79/tiny tplink_tl-wr841-v9: kernel-bin | append-dtb | lzma
          from target/linux/ath79/image/common-tp-link.mk:10
          KERNEL_NAME=vmlinux DEVICE_DTS=qca9533_tplink_tl-wr841-v9 dtb from target/linux/ath79/image/../dts (-I arch/mips/boot/dts)
          KERNEL_LOADADDR=0x80060000
          KERNEL_ENTRY=
          UIMAGE_NAME=
          UIMAGE_MAGIC=
        bcm53xx: bcm53xx/generic netgear_r8500: kernel-bin | append-dtb | lzma-d16
          from target/linux/bcm53xx/image/Makefile:152
          KERNEL_NAME=zImage DEVICE_DTS=bcm47094-netgear-r8500 dtb from arch/arm/boot/dts/broadcom (-I arch/arm/boot/dts/broadcom)
          KERNEL_LOADADDR=
          KERNEL_ENTRY=
          UIMAGE_NAME=
          UIMAGE_MAGIC=
        brcm47xx: bcm47xx/mips74k asus_rt-n66u: kernel-bin
          from target/linux/bcm47xx/image/Makefile:139
          KERNEL_NAME=vmlinux.lzma DEVICE_DTS= dtb from arch/mips/boot/dts (-I arch/mips/boot/dts)
          KERNEL_LOADADDR=
          KERNEL_ENTRY=
          UIMAGE_NAME=
          UIMAGE_MAGIC=
        ramips-mt7621: ramips/mt7621 tplink_archer-c6-v3: kernel-bin | append-dtb | lzma | uImage lzma
          from target/linux/ramips/image/mt7621.mk:2769
          KERNEL_NAME=vmlinux DEVICE_DTS=mt7621_tplink_archer-c6-v3 dtb from target/linux/ramips/image/../dts (-I arch/mips/boot/dts)
          KERNEL_LOADADDR=0x80001000
          KERNEL_ENTRY=
          UIMAGE_NAME=
          UIMAGE_MAGIC=
        ramips-mt76x8: ramips/mt76x8 xiaomi_mi-router-4a-100m: kernel-bin | append-dtb | lzma | uImage lzma
          from target/linux/ramips/image/Makefile:174
          KERNEL_NAME=vmlinux DEVICE_DTS=mt7628an_xiaomi_mi-router-4a-100m dtb from target/linux/ramips/image/../dts (-I arch/mips/boot/dts)
          KERNEL_LOADADDR=0x80000000
          KERNEL_ENTRY=
          UIMAGE_NAME=
          UIMAGE_MAGIC=
    "#]];
    want.assert_eq(&all);
}

#[test]
fn an_unsupported_step_names_device_line_and_step() {
    let Some(fx) = Fixture::unpack() else { return };
    let dir = tempfile::tempdir().unwrap();
    let linux = fake_linux(dir.path());
    let r = recipe(
        &fx,
        "ramips/mt7621",
        "mikrotik_routerboard-750gr3",
        "mips",
        &linux,
    );
    assert_eq!(r.recipe(), "kernel-bin | append-dtb-elf");
    let origin = r.origin.clone().unwrap();
    let text = std::fs::read_to_string(&origin.file).unwrap();
    assert!(text
        .lines()
        .nth(origin.line - 1)
        .unwrap()
        .contains("KERNEL :="));
    let sh = Shell::new().unwrap();
    let kdir = dir.path().join("kdir");
    let tree = KernelTree {
        linux_dir: &linux,
        vmlinux: &dir.path().join("no-vmlinux"),
        cross_compile: "mipsel-linux-gnu-",
        karch: "mips",
        linux_version: "6.12.1",
    };
    let err = format!(
        "{:#}",
        openwrt_image::make_image(&sh, &r, &tree, &kdir).unwrap_err()
    );
    assert!(err.contains("mikrotik_routerboard-750gr3"), "{err}");
    assert!(err.contains("`append-dtb-elf`"), "{err}");
    assert!(err.contains(&origin.to_string()), "{err}");
    assert!(
        !kdir.join("vmlinux").exists(),
        "nothing runs before the check"
    );
    // The same check runs when the build is planned, before the kernel.
    let err = format!("{:#}", openwrt_image::check(&r, &[]).unwrap_err());
    assert!(err.contains("`append-dtb-elf`"), "{err}");

    // bcm53xx's recipe reads the zImage: the kernel build must make it.
    let b = recipe(&fx, "bcm53xx/generic", "netgear_r8500", "arm", &linux);
    openwrt_image::check(&b, &["zImage".to_string()]).unwrap();
    let err = format!("{:#}", openwrt_image::check(&b, &[]).unwrap_err());
    assert!(err.contains("KERNEL_NAME = \"zImage\""), "{err}");
    assert!(err.contains("make_targets"), "{err}");

    // A Build/<step> that no longer says what xtask implements is refused.
    let commands = fx.root.join("include/image-commands.mk");
    let text = std::fs::read_to_string(&commands).unwrap();
    let changed = text.replace(
        "$(call Build/lzma-no-dict,-lc1 -lp2 -pb2 $(1))",
        "$(call Build/lzma-no-dict,-lc0 -lp2 -pb2 $(1))",
    );
    assert_ne!(changed, text);
    std::fs::write(&commands, changed).unwrap();
    let c6 = recipe(&fx, "ramips/mt7621", "tplink_archer-c6-v3", "mips", &linux);
    let err = format!("{:#}", openwrt_image::check(&c6, &[]).unwrap_err());
    assert!(
        err.contains("Build/lzma is not what xtask implements"),
        "{err}"
    );
    assert!(err.contains("-lc0"), "{err}");
    std::fs::write(&commands, text).unwrap();

    let checkout = Checkout::open(&fx.root).unwrap();
    let target = OpenwrtTarget::resolve(&checkout, "ramips/mt7621").unwrap();
    let env = xtask::inputs::openwrt::image::MakeEnv {
        linux_dir: &linux,
        karch: "mips",
        linux_version: "6.12.1",
    };
    let err = xtask::inputs::openwrt::image::evaluate(&checkout, &target, "no_such-device", &env)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no device \"no_such-device\""), "{err}");
    assert!(err.contains("tplink_archer-c6-v3"), "{err}");
}

/// A tiny statically linked MIPS "kernel" for `cross`, linked at 0x80001000.
fn tiny_vmlinux(sh: &Shell, dir: &Path, cross: &str) -> PathBuf {
    let src = dir.join("start.c");
    std::fs::write(
        &src,
        "const char banner[] = \"Linux version 6.12.1 (xtask@xtask)\";\n\
         int counter = 42;\nvoid _start(void) { for (;;) counter++; }\n",
    )
    .unwrap();
    let lds = dir.join("tiny.lds");
    std::fs::write(
        &lds,
        "SECTIONS {\n . = 0x80001000;\n .text : { *(.text*) }\n .rodata : { *(.rodata*) }\n\
         .data : { *(.data*) *(.sdata*) }\n /DISCARD/ : { *(.MIPS.abiflags) *(.note*) }\n}\n",
    )
    .unwrap();
    let out = dir.join(format!("vmlinux-{cross}"));
    let gcc = format!("{cross}gcc");
    cmd!(
        sh,
        "{gcc} -Os -nostdlib -static -fno-pic -mno-abicalls -Wl,--build-id=none -Wl,-e,_start -T {lds} -o {out} {src}"
    )
    .quiet()
    .run()
    .unwrap();
    out
}

fn objcopy_binary(sh: &Shell, cross: &str, vmlinux: &Path, out: &Path) -> Vec<u8> {
    let objcopy = format!("{cross}objcopy");
    let strip = OBJCOPY_STRIP;
    cmd!(sh, "{objcopy} -O binary {strip...} {vmlinux} {out}")
        .quiet()
        .run()
        .unwrap();
    std::fs::read(out).unwrap()
}

#[test]
fn whole_recipes_on_a_tiny_kernel() {
    let Some(fx) = Fixture::unpack() else { return };
    let dir = tempfile::tempdir().unwrap();
    let linux = fake_linux(dir.path());
    let sh = Shell::new().unwrap();
    let src = dir.path().join("dts");
    std::fs::create_dir(&src).unwrap();
    write_test_dts(&src);

    // ramips: kernel-bin | append-dtb | lzma | uImage lzma.
    let cross = "mipsel-linux-gnu-";
    let vmlinux = tiny_vmlinux(&sh, dir.path(), cross);
    let tree = KernelTree {
        linux_dir: &linux,
        vmlinux: &vmlinux,
        cross_compile: cross,
        karch: "mips",
        linux_version: "6.12.1",
    };
    let mut r = recipe(&fx, "ramips/mt7621", "tplink_archer-c6-v3", "mips", &linux);
    r.device_dts = vec!["test_board".into()];
    r.dtb_source_dir = src.clone();
    let kdir = dir.path().join("kdir-ramips");
    let image = openwrt_image::make_image(&sh, &r, &tree, &kdir).unwrap();
    assert!(image.ends_with("tplink_archer-c6-v3-kernel.bin"));
    let fields = mkimage_list(&sh, &image);
    assert_eq!(
        fields["Image Type"],
        "MIPS Linux Kernel Image (lzma compressed)"
    );
    assert_eq!(fields["Load Address"], "80001000");
    let lzma = dir.path().join("payload.lzma");
    cmd!(sh, "dumpimage -T kernel -p 0 -o {lzma} {image}")
        .quiet()
        .run()
        .unwrap();
    let mut want = objcopy_binary(&sh, cross, &vmlinux, &dir.path().join("bin"));
    let dtb = std::fs::read(kdir.join("image-test_board.dtb")).unwrap();
    assert_eq!(&dtb[..4], &[0xd0, 0x0d, 0xfe, 0xed], "a DTB's magic");
    want.extend_from_slice(&dtb);
    assert_eq!(xz_decode(&sh, &lzma), want);

    // bcm47xx: kernel-bin of vmlinux.lzma (Image/Prepare's lzma of $(KDIR)/vmlinux).
    let r = recipe(&fx, "bcm47xx/mips74k", "asus_rt-n66u", "mips", &linux);
    let kdir = dir.path().join("kdir-bcm47xx");
    let image = openwrt_image::make_image(&sh, &r, &tree, &kdir).unwrap();
    let want = objcopy_binary(&sh, cross, &vmlinux, &dir.path().join("bin"));
    assert_eq!(xz_decode(&sh, &image), want);
    assert_eq!(std::fs::read(&image).unwrap()[0], 0x6d);

    // bcm53xx: kernel-bin | append-dtb | lzma-d16 of the zImage.
    let mut r = recipe(&fx, "bcm53xx/generic", "netgear_r8500", "arm", &linux);
    assert_eq!(r.device_dts, vec!["bcm47094-netgear-r8500".to_string()]);
    r.device_dts = vec!["test_board".into()];
    r.dtb_source_dir = src.clone();
    let tree = KernelTree {
        cross_compile: "arm-linux-gnueabi-",
        karch: "arm",
        ..tree
    };
    let kdir = dir.path().join("kdir-bcm53xx");
    let image = openwrt_image::make_image(&sh, &r, &tree, &kdir).unwrap();
    let mut want = std::fs::read(linux.join("arch/arm/boot/zImage")).unwrap();
    want.extend_from_slice(&std::fs::read(kdir.join("image-test_board.dtb")).unwrap());
    assert_eq!(xz_decode(&sh, &image), want);
    assert_eq!(std::fs::read(&image).unwrap()[0], 0x5d);
}

/// Manual check on real router kernels (not run by `cargo test`): with
/// `XTASK_REAL_BUILDS` set to a `target/xtask/build` directory of
/// kernel-tree builds (`<target>/baseline/` with `vmlinux`, `source`, …),
/// makes each workbench target's device image from that target's baseline
/// build and prints its size:
/// `XTASK_REAL_BUILDS=… cargo test --test it openwrt_image:: -- --ignored --nocapture`.
#[test]
#[ignore = "manual: needs real kernel builds in $XTASK_REAL_BUILDS"]
fn real_router_kernels() {
    let builds = PathBuf::from(std::env::var_os("XTASK_REAL_BUILDS").expect("XTASK_REAL_BUILDS"));
    let Some(fx) = Fixture::unpack() else { return };
    let dir = tempfile::tempdir().unwrap();
    let sh = Shell::new().unwrap();
    for t in targets::load_all(&targets_dir()).unwrap() {
        let Some(device) = &t.openwrt_device else {
            continue;
        };
        let build = builds.join(&t.name).join("baseline");
        let source = std::fs::canonicalize(build.join("source")).unwrap();
        // An in-tree view of the out-of-tree build: the source's device
        // trees and headers, the build's dtc and images.
        let linux = dir.path().join(&t.name);
        let link = |from: &Path, to: &str| {
            let to = linux.join(to);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(from, to).unwrap();
        };
        link(&source.join("include"), "include");
        link(
            &source.join("scripts/dtc/include-prefixes"),
            "scripts/dtc/include-prefixes",
        );
        link(&build.join("scripts/dtc/dtc"), "scripts/dtc/dtc");
        let boot = format!("arch/{}/boot", t.arch);
        link(&source.join(&boot).join("dts"), &format!("{boot}/dts"));
        if build.join(&boot).join("zImage").is_file() {
            link(&build.join(&boot).join("zImage"), &format!("{boot}/zImage"));
        }
        let r = recipe(&fx, &t.openwrt, device, &t.arch, &linux);
        let version = std::fs::read_to_string(build.join("include/config/kernel.release"))
            .unwrap_or_else(|_| "6.12".into());
        let tree = KernelTree {
            linux_dir: &linux,
            vmlinux: &build.join("vmlinux"),
            cross_compile: &t.cross_compile,
            karch: &t.arch,
            linux_version: version.trim(),
        };
        let kdir = dir.path().join(format!("kdir-{}", t.name));
        let image = openwrt_image::make_image(&sh, &r, &tree, &kdir).unwrap();
        let size = std::fs::metadata(&image).unwrap().len();
        let input = std::fs::metadata(kdir.join(&r.kernel_name)).unwrap().len();
        println!(
            "{}: {} = {}: {size} bytes (from {} of {input} bytes)",
            t.name,
            openwrt_image::artifact_name(device),
            r.recipe(),
            r.kernel_name
        );
    }
}
