//! The steps of OpenWrt device kernel recipes on small inputs, read back
//! with the reference tools: `xz -d` of the LZMA steps, `mkimage -l` and
//! `dumpimage` of a uImage (whose `mkimage` arguments are also compared
//! with make's expansion of the fixture's `Build/uImage`), `dtc -I dtb`
//! and `fdtget` of a DTB built as image.mk's `Image/BuildDTB` does, and
//! the chosen devices' real device trees compiled against Debian's 6.12
//! headers (their `model` as `fdtget` reads it is the source's).

use crate::common::openwrt_fixture;
use crate::common::openwrt_image as openwrt_image_common;

use std::path::Path;

use openwrt_fixture::{make_eval, Fixture};
use openwrt_image_common::*;
use xshell::{cmd, Shell};
use xtask::inputs::openwrt::image::KernelRecipeStep;
use xtask::kernel_build::openwrt_image::{dtb, steps};

#[test]
fn lzma_steps_decode_with_xz_and_carry_their_parameters() {
    let Some(fx) = Fixture::unpack() else { return };
    let dir = tempfile::tempdir().unwrap();
    let linux = fake_linux(dir.path());
    let sh = Shell::new().unwrap();
    let data = payload(300_000);
    let cases = [
        (
            "ramips/mt7621",
            "tplink_archer-c6-v3",
            "lzma",
            0x6d_u8,
            8u32 << 20,
        ),
        (
            "bcm53xx/generic",
            "netgear_r8500",
            "lzma-d16",
            0x5d,
            64 << 10,
        ),
    ];
    for (openwrt, device, step, props, dict) in cases {
        let r = recipe(&fx, openwrt, device, "mips", &linux);
        let image = dir.path().join(format!("{device}.bin"));
        std::fs::write(&image, &data).unwrap();
        let ctx = steps::StepContext {
            recipe: &r,
            kdir: dir.path(),
            input: &image,
            karch: "mips",
            linux_version: "6.12.1",
            tree: &tree(&linux),
        };
        let step = KernelRecipeStep {
            name: step.into(),
            args: vec![],
        };
        steps::run(&sh, &ctx, &step, &image).unwrap();
        let out = std::fs::read(&image).unwrap();
        // props = (pb * 5 + lp) * 9 + lc; then the dictionary size.
        assert_eq!(out[0], props, "{step}");
        assert_eq!(
            u32::from_le_bytes(out[1..5].try_into().unwrap()),
            dict,
            "{step}"
        );
        assert!(out.len() < data.len() / 2, "{step}: {} bytes", out.len());
        assert_eq!(xz_decode(&sh, &image), data, "{step}");
    }
}

#[test]
fn uimage_step_is_image_commands_mk_mkimage() {
    let Some(fx) = Fixture::unpack() else { return };
    let dir = tempfile::tempdir().unwrap();
    let linux = fake_linux(dir.path());
    let sh = Shell::new().unwrap();
    let r = recipe(&fx, "ramips/mt7621", "tplink_archer-c6-v3", "mips", &linux);
    let image = dir.path().join("k.bin");
    let data = payload(10_000);
    std::fs::write(&image, &data).unwrap();
    let ctx = steps::StepContext {
        recipe: &r,
        kdir: dir.path(),
        input: &image,
        karch: "mips",
        linux_version: "6.12.1",
        tree: &tree(&linux),
    };
    let step = KernelRecipeStep {
        name: "uImage".into(),
        args: vec!["lzma".into()],
    };
    // Our mkimage arguments are make's expansion of the fixture's Build/uImage.
    let (args, epoch) =
        steps::uimage_command(&ctx, &step, Path::new("IN"), Path::new("OUT")).unwrap();
    assert_eq!(epoch, "0");
    let rules = format!(
        "include {}/include/image-commands.mk\ntoupper = $(shell echo '$(1)' | tr a-z A-Z)\n",
        fx.root.display()
    );
    let vars: Vec<(String, String)> = [
        ("LINUX_KARCH", "mips"),
        ("KERNEL_LOADADDR", r.var("KERNEL_LOADADDR").unwrap()),
        ("LINUX_VERSION", "6.12.1"),
        ("VERSION_DIST", "OpenWrt"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let by_make = make_eval(
        &sh,
        &fx.dir(),
        &rules,
        &vars,
        "$(call Build/uImage,lzma)",
        None,
    );
    let quoted: Vec<String> = args
        .iter()
        .map(|a| {
            if a.contains(' ') {
                format!("'{a}'")
            } else {
                a.clone()
            }
        })
        .collect();
    let ours = format!("mkimage {}", quoted.join(" ")).replace("-d IN OUT", "-d  .new");
    let make_words = by_make.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        make_words.starts_with(&ours.split_whitespace().collect::<Vec<_>>().join(" ")),
        "ours: {ours}\nmake: {make_words}"
    );

    steps::run(&sh, &ctx, &step, &image).unwrap();
    let fields = mkimage_list(&sh, &image);
    assert_eq!(fields["Image Name"], "MIPS OpenWrt Linux-6.12.1");
    assert_eq!(
        fields["Image Type"],
        "MIPS Linux Kernel Image (lzma compressed)"
    );
    assert_eq!(fields["Load Address"], "80001000");
    assert_eq!(fields["Entry Point"], "80001000");
    assert!(
        fields["Data Size"].starts_with(&format!("{} Bytes", data.len())),
        "{fields:?}"
    );
    let out = dir.path().join("payload");
    cmd!(sh, "dumpimage -T kernel -p 0 -o {out} {image}")
        .quiet()
        .run()
        .unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), data);
}

#[test]
fn dtb_is_built_as_image_mk_builds_it() {
    let dir = tempfile::tempdir().unwrap();
    let linux = fake_linux(dir.path());
    let sh = Shell::new().unwrap();
    let src = dir.path().join("dts");
    std::fs::create_dir(&src).unwrap();
    let dts = write_test_dts(&src);
    let output = dir.path().join("image-test_board.dtb");
    let dts_dir = linux.join("arch/mips/boot/dts");
    dtb::build(
        &sh,
        &dtb::DtbJob {
            source: dts,
            output: output.clone(),
            dts_dir: &dts_dir,
            linux_dir: &linux,
            cross_compile: "mipsel-linux-gnu-",
        },
    )
    .unwrap();
    let text = cmd!(sh, "dtc -I dtb -O dts {output}")
        .quiet()
        .read()
        .unwrap();
    // -undef: "linux" and "mips" stay words; the header's macro is expanded.
    assert!(text.contains("model = \"linux mips\";"), "{text}");
    assert!(text.contains("compatible = \"xtask,test\";"), "{text}");
    let value = cmd!(sh, "fdtget -t x {output} /node value")
        .quiet()
        .read()
        .unwrap();
    assert_eq!(value.trim(), "1234");
}

/// Debian's 6.12 source (as `cargo xtask setup` installs it), only what
/// device trees include, unpacked into `dir`.
fn kernel_dts_tree(sh: &Shell, dir: &Path) -> std::path::PathBuf {
    let tarball = Path::new("/usr/src/linux-source-6.12.tar.xz");
    assert!(
        tarball.is_file(),
        "{} is missing: `cargo xtask setup` installs linux-source-6.12",
        tarball.display()
    );
    let top = "linux-source-6.12";
    let parts: Vec<String> = [
        "include/dt-bindings",
        "include/uapi/linux/input-event-codes.h",
        "scripts/dtc/include-prefixes",
        "arch/arm/boot/dts/broadcom",
        "arch/mips/boot/dts",
    ]
    .iter()
    .map(|p| format!("{top}/{p}"))
    .collect();
    cmd!(sh, "tar -xJf {tarball} -C {dir} {parts...}")
        .quiet()
        .run()
        .unwrap();
    dir.join(top)
}

/// The first `model = "…";` of a device tree source and what it includes
/// from the same directory.
fn dts_model(dts: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dts).ok()?;
    if let Some(m) = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("model = \"")?.strip_suffix("\";"))
    {
        return Some(m.to_string());
    }
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("#include \"")?.strip_suffix('"'))
        .find_map(|inc| dts_model(&dts.with_file_name(inc)))
}

#[test]
fn the_chosen_devices_trees_compile_against_the_kernel_headers() {
    let Some(fx) = Fixture::unpack() else { return };
    let dir = tempfile::tempdir().unwrap();
    let sh = Shell::new().unwrap();
    let linux = kernel_dts_tree(&sh, dir.path());
    let mut checked = Vec::new();
    for t in xtask::inputs::targets::load_all(&targets_dir()).unwrap() {
        let Some(device) = &t.openwrt_device else {
            continue;
        };
        // With the kernel's real .dts names, bcm53xx's wildcard finds its tree.
        let r = recipe(&fx, &t.openwrt, device, &t.arch, &linux);
        for dts in &r.device_dts {
            let source = r.dtb_source_dir.join(format!("{dts}.dts"));
            let output = dir.path().join(steps::dtb_file_name(dts));
            dtb::build(
                &sh,
                &dtb::DtbJob {
                    source: source.clone(),
                    output: output.clone(),
                    dts_dir: &r.dts_dir,
                    linux_dir: &linux,
                    cross_compile: &t.cross_compile,
                },
            )
            .unwrap();
            let model = cmd!(sh, "fdtget {output} / model").quiet().read().unwrap();
            assert_eq!(Some(model.trim().to_string()), dts_model(&source), "{dts}");
            let text = cmd!(sh, "dtc -I dtb -O dts {output}")
                .quiet()
                .ignore_stderr()
                .read()
                .unwrap();
            assert!(text.contains("compatible = "), "{dts}");
            checked.push(format!("{device}: {dts} ({})", model.trim()));
        }
    }
    assert_eq!(
        checked,
        [
            "tplink_archer-c7-v5: qca9563_tplink_archer-c7-v5 (TP-Link Archer C7 v5)",
            "tplink_tl-wr841-v9: qca9533_tplink_tl-wr841-v9 (TP-Link TL-WR841N/ND v9)",
            "netgear_r8500: bcm47094-netgear-r8500 (Netgear R8500)",
            "tplink_archer-c6-v3: mt7621_tplink_archer-c6-v3 (TP-Link Archer C6 v3)",
            "xiaomi_mi-router-4a-100m: mt7628an_xiaomi_mi-router-4a-100m (Xiaomi Mi Router 4A (100M Edition))",
        ]
    );
}

/// The kernel build a step context names (its vmlinux is not read here).
fn tree(linux: &Path) -> xtask::kernel_build::openwrt_image::KernelTree<'_> {
    xtask::kernel_build::openwrt_image::KernelTree {
        linux_dir: linux,
        vmlinux: linux,
        cross_compile: "mipsel-linux-gnu-",
        karch: "mips",
        linux_version: "6.12.1",
    }
}

/// `pad-to` pads as include/image.mk's `Image/pad-to` (`dd bs=<size>
/// conv=sync`) does: compared with GNU dd on lengths around the block,
/// and run as the step of a real ath79 recipe (adtran_bsap1800-v2's, from
/// Device/adtran_bsap1880: `KERNEL := … | lzma | pad-to $$(BLOCKSIZE)`).
#[test]
fn pad_to_pads_as_dd_conv_sync() {
    let sh = Shell::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in");
    for size in ["4", "512", "64k", "256k", "1M"] {
        let block = xtask::util::shell_arith::dd_bytes(size).unwrap();
        for len in [0, 1, 3, block - 1, block, block + 1, 2 * block + 7] {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8 + 1).collect();
            std::fs::write(&file, &data).unwrap();
            let out = dir.path().join("out");
            let (i, o, bs) = (
                format!("if={}", file.display()),
                format!("of={}", out.display()),
                format!("bs={size}"),
            );
            cmd!(sh, "dd {i} {o} {bs} conv=sync status=none")
                .run()
                .unwrap();
            let want = std::fs::read(&out).unwrap();
            assert_eq!(
                steps::pad_to(data, block),
                want,
                "pad-to {size}, {len} bytes"
            );
        }
    }
    assert!(xtask::util::shell_arith::dd_bytes("0").is_err());
    assert!(xtask::util::shell_arith::dd_bytes("0x10000").is_err());

    let Some(fx) = Fixture::unpack() else { return };
    let linux = fake_linux(dir.path());
    let r = recipe(&fx, "ath79/generic", "adtran_bsap1800-v2", "mips", &linux);
    let step = r
        .steps
        .iter()
        .find(|s| s.name == "pad-to")
        .expect("adtran_bsap1800-v2's KERNEL pads")
        .clone();
    assert_eq!(
        step.args,
        vec!["64k".to_string()],
        "BLOCKSIZE as make expanded it"
    );
    let image = dir.path().join("kernel.bin");
    std::fs::write(&image, payload(100_000)).unwrap();
    let ctx = steps::StepContext {
        recipe: &r,
        kdir: dir.path(),
        input: &image,
        karch: "mips",
        linux_version: "6.12.1",
        tree: &tree(&linux),
    };
    steps::run(&sh, &ctx, &step, &image).unwrap();
    let out = std::fs::read(&image).unwrap();
    assert_eq!(out.len(), 131_072);
    assert_eq!(&out[..100_000], &payload(100_000)[..]);
    assert!(out[100_000..].iter().all(|b| *b == 0));
}
