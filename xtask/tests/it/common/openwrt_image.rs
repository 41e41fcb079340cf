//! Helpers of the device-image tests (`openwrt_image*.rs`): a stand-in
//! kernel tree, fixture recipes, payloads and the reference tools' output.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use xshell::{cmd, Shell};
use xtask::inputs::openwrt::image::{evaluate, DeviceRecipe, MakeEnv};
use xtask::inputs::openwrt::{Checkout, OpenwrtTarget};

use crate::common::openwrt_fixture::Fixture;

/// The workbench's `targets/`.
pub fn targets_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../targets")
}

/// A stand-in kernel tree: the `.dts` names bcm53xx's recipe finds with
/// `$(wildcard $(DTS_DIR)/*-<device>.dtb)`, an include directory with one
/// dt-bindings header, and a zImage.
pub fn fake_linux(dir: &Path) -> PathBuf {
    let linux = dir.join("linux");
    let broadcom = linux.join("arch/arm/boot/dts/broadcom");
    std::fs::create_dir_all(&broadcom).unwrap();
    for name in ["bcm47094-netgear-r8500", "bcm4708-netgear-r6250"] {
        std::fs::write(broadcom.join(format!("{name}.dts")), "/dts-v1/;\n/ { };\n").unwrap();
    }
    std::fs::create_dir_all(linux.join("arch/mips/boot/dts")).unwrap();
    let bindings = linux.join("include/dt-bindings/xtask");
    std::fs::create_dir_all(&bindings).unwrap();
    std::fs::write(bindings.join("test.h"), "#define XTASK_VALUE 0x1234\n").unwrap();
    std::fs::create_dir_all(linux.join("arch/arm/boot")).unwrap();
    let zimage: Vec<u8> = (0..50_000u32)
        .flat_map(|i| (i * 7 % 251).to_le_bytes())
        .collect();
    std::fs::write(linux.join("arch/arm/boot/zImage"), zimage).unwrap();
    linux
}

/// The recipe of `device` of `openwrt` in the fixture, for `linux`.
pub fn recipe(fx: &Fixture, openwrt: &str, device: &str, arch: &str, linux: &Path) -> DeviceRecipe {
    let checkout = Checkout::open(&fx.root).unwrap();
    let target = OpenwrtTarget::resolve(&checkout, openwrt).unwrap();
    let env = MakeEnv {
        linux_dir: linux,
        karch: arch,
        linux_version: "6.12.1",
    };
    evaluate(&checkout, &target, device, &env).unwrap()
}

/// `len` bytes that compress somewhat, as a kernel does.
pub fn payload(len: usize) -> Vec<u8> {
    let mut x = 0x1234_5678u32;
    (0..len)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if i % 3 == 0 {
                (x % 7) as u8
            } else {
                b"router kernel "[i % 14]
            }
        })
        .collect()
}

pub fn xz_decode(sh: &Shell, file: &Path) -> Vec<u8> {
    cmd!(sh, "xz -d --format=lzma -c {file}")
        .quiet()
        .output()
        .unwrap()
        .stdout
}

/// `mkimage -l`'s `Field: value` lines.
pub fn mkimage_list(sh: &Shell, image: &Path) -> std::collections::BTreeMap<String, String> {
    let text = cmd!(sh, "mkimage -l {image}").quiet().read().unwrap();
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// A device tree using a dt-bindings header and a `.dtsi` beside it.
pub fn write_test_dts(dir: &Path) -> PathBuf {
    std::fs::write(
        dir.join("common.dtsi"),
        "/ { compatible = \"xtask,test\"; };\n",
    )
    .unwrap();
    let dts = dir.join("test_board.dts");
    std::fs::write(
        &dts,
        "/dts-v1/;\n#include <dt-bindings/xtask/test.h>\n#include \"common.dtsi\"\n\
         / {\n\tmodel = \"linux mips\";\n\tnode {\n\t\tvalue = <XTASK_VALUE>;\n\t};\n};\n",
    )
    .unwrap();
    dts
}

/// Debian's kernel source tarball, where the MIPS headers the loaders
/// include come from.
pub const KERNEL_TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";

/// The kernel's MIPS headers OpenWrt's lzma-loader and relocation stub
/// include (`arch/mips/include/asm/asm.h` and what it includes), from
/// [`KERNEL_TARBALL`] (extracted once into the cargo target directory),
/// copied into the stand-in tree `linux`.
pub fn add_mips_headers(linux: &Path) {
    let members = [
        "asm/asm.h",
        "asm/regdef.h",
        "asm/asm-eva.h",
        "asm/isa-rev.h",
        "uapi/asm/sgidefs.h",
    ];
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mips-headers-6.12");
    if !cache.join("done").is_file() {
        assert!(
            Path::new(KERNEL_TARBALL).is_file(),
            "{KERNEL_TARBALL} is missing: apt-get install linux-source-6.12"
        );
        std::fs::create_dir_all(&cache).unwrap();
        let scratch = tempfile::tempdir_in(&cache).unwrap();
        let dir = scratch.path();
        let sh = Shell::new().unwrap();
        let names: Vec<String> = members
            .iter()
            .map(|m| format!("linux-source-6.12/arch/mips/include/{m}"))
            .collect();
        cmd!(sh, "tar -xJf {KERNEL_TARBALL} -C {dir} {names...}")
            .quiet()
            .run()
            .expect("extracting the MIPS headers from the kernel source tarball");
        let from = dir.join("linux-source-6.12/arch/mips/include");
        for m in members {
            let to = cache.join(m);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(from.join(m), to).unwrap();
        }
        std::fs::write(cache.join("done"), b"").unwrap();
    }
    for m in members {
        let to = linux.join("arch/mips/include").join(m);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(cache.join(m), to).unwrap();
    }
}

/// Every device of `target` (`ath79/generic`) in the checkout at `root`,
/// evaluated by make against the MIPS kernel tree `linux`
/// ([`xtask::inputs::openwrt::image::devices::evaluate_all`]).
pub fn all_devices(
    root: &Path,
    target: &str,
    linux: &Path,
) -> Vec<xtask::inputs::openwrt::image::devices::DeviceEntry> {
    let checkout = Checkout::open(root).unwrap();
    let target = OpenwrtTarget::resolve(&checkout, target).unwrap();
    let env = MakeEnv {
        linux_dir: linux,
        karch: "mips",
        linux_version: "6.12.1",
    };
    xtask::inputs::openwrt::image::devices::evaluate_all(&checkout, &target, &env).unwrap()
}
