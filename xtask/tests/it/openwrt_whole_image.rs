//! Whole-image recipes from the OpenWrt fixture: every
//! device's images that check a size, as `device-fit.json` records them,
//! with `$(BLOCKSIZE)` replaced and the step definitions checked against
//! the checkout's include/image-commands.mk; a changed definition makes
//! the image unsizeable with the reason, and a step xtask does not make
//! is named.

use crate::common::openwrt_fixture::Fixture;
use crate::common::openwrt_image::{all_devices, fake_linux};

use std::path::Path;

use xtask::inputs::openwrt::image::devices::DeviceEntry;
use xtask::kernel_build::openwrt_image::image_recipes::image_recipes;
use xtask::measure::image_sink::Lengths;
use xtask::measure::whole_image::{self, ImageVars};

fn all(root: &Path, target: &str, linux: &Path) -> Vec<DeviceEntry> {
    all_devices(root, target, linux)
}

/// Sizes every image of `entries` with a 2 MiB kernel and a 3 MiB rootfs:
/// (sized, cannot be sized with their reasons).
fn size_all(entries: &[DeviceEntry]) -> (usize, Vec<String>) {
    let (mut sized, mut not) = (0, Vec::new());
    for e in entries {
        let Ok((r, l)) = &e.evaluated else { continue };
        let (blocksize, images) = image_recipes(r);
        for i in images {
            let vars = ImageVars {
                blocksize: blocksize.as_deref(),
                image_size: l.image_size.as_ref().map(|l| l.text.as_str()),
            };
            let mut sink = Lengths {
                len: 0,
                kernel: 2 << 20,
                rootfs: 3 << 20,
            };
            match i.error {
                Some(why) => not.push(format!("{} {}: {why}", e.device, i.image)),
                None => match whole_image::size_checks(&i.recipe, &vars, &mut sink) {
                    Ok(c) if !c.is_empty() => sized += 1,
                    Ok(_) => not.push(format!("{} {}: no check", e.device, i.image)),
                    Err(err) => not.push(format!("{} {}: {err:#}", e.device, i.image)),
                },
            }
        }
    }
    (sized, not)
}

#[test]
fn ath79_and_mt7621_images_are_sized_from_their_recipes() {
    let Some(fx) = Fixture::unpack() else { return };
    let dir = tempfile::tempdir().unwrap();
    let linux = fake_linux(dir.path());
    let generic = all(&fx.root, "ath79/generic", &linux);
    let c7 = generic
        .iter()
        .find(|e| e.device == "tplink_archer-c7-v2")
        .unwrap();
    let (r, _) = c7.evaluated.as_ref().unwrap();
    let (blocksize, images) = image_recipes(r);
    assert_eq!(blocksize.as_deref(), Some("64k"));
    let sysupgrade = images.iter().find(|i| i.image == "sysupgrade.bin");
    // The Archer C7 v2 is a TP-Link v1 image: its sysupgrade is made by
    // mktplinkfw, named as the step xtask does not make.
    let (sized, not) = size_all(&generic);
    eprintln!("ath79/generic: {sized} images sized; not: {not:#?}");
    assert!(sized > 200, "{sized} sized; not: {not:#?}");
    assert!(
        not.iter()
            .any(|n| n.contains("tplink-v1-image") || n.contains("tplink-safeloader")),
        "{not:#?}"
    );
    if let Some(s) = sysupgrade {
        assert!(!s.recipe.contains("$(BLOCKSIZE)"), "{s:?}");
    }
    // A plain uImage + squashfs device.
    let plain = generic
        .iter()
        .filter_map(|e| e.evaluated.as_ref().ok())
        .flat_map(|(r, _)| image_recipes(r).1)
        .find(|i| i.image == "sysupgrade.bin")
        .unwrap();
    assert_eq!(plain.error, None);

    let mt7621 = all(&fx.root, "ramips/mt7621", &linux);
    let (sized, not) = size_all(&mt7621);
    eprintln!("ramips/mt7621: {sized} images sized; not: {not:#?}");
    assert!(sized > 100, "{sized} sized; not: {not:#?}");
    let ac85p = mt7621.iter().find(|e| e.device == "asus_rt-ac85p").unwrap();
    let (r, _) = ac85p.evaluated.as_ref().unwrap();
    let (_, images) = image_recipes(r);
    assert_eq!(images.len(), 1, "{images:?}");
    assert_eq!(images[0].image, "factory.bin");
}

#[test]
fn a_changed_step_definition_makes_the_image_unsizeable_with_the_reason() {
    let Some(fx) = Fixture::unpack() else { return };
    let commands = fx.root.join("include/image-commands.mk");
    let text = std::fs::read_to_string(&commands).unwrap();
    let changed = text.replace(
        "$(if $(BLOCKSIZE),$(BLOCKSIZE:%k=%),4 8 16 64 128 256)",
        "$(if $(BLOCKSIZE),$(BLOCKSIZE:%k=%),4 8 16 64 128 256 512)",
    );
    assert_ne!(text, changed, "the fixture's Build/pad-rootfs moved");
    std::fs::write(&commands, changed).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let linux = fake_linux(dir.path());
    let generic = all(&fx.root, "ath79/generic", &linux);
    let images: Vec<_> = generic
        .iter()
        .filter_map(|e| e.evaluated.as_ref().ok())
        .flat_map(|(r, _)| image_recipes(r).1)
        .filter(|i| {
            whole_image::parse_recipe(&i.recipe)
                .iter()
                .any(|s| s.name == "pad-rootfs")
        })
        .collect();
    assert!(!images.is_empty());
    for i in &images {
        let e = i.error.as_deref().unwrap_or_default();
        assert!(
            e.contains("the checkout's Build/pad-rootfs is not what xtask makes"),
            "{i:?}"
        );
    }
}

/// `build --openwrt ../checkout` ran make with the relative path after
/// `make -C target/linux/<board>/image`, where it names nothing: every
/// device failed with "include/image-commands.mk: No such file".
#[test]
fn a_relative_checkout_path_evaluates_the_devices() {
    let Some(fx) = Fixture::unpack() else { return };
    let cwd = std::env::current_dir().unwrap();
    // Through the working directory's own name: make also looks for an
    // include in /usr/include, from where a plain `../../..` reaches `/`
    // as well.
    let own = cwd.file_name().unwrap().to_str().unwrap();
    let up = format!("../{own}/{}", "../".repeat(cwd.components().count() - 1));
    let relative = Path::new(&up).join(fx.root.strip_prefix("/").unwrap());
    assert!(relative.is_relative() && relative.join("include").is_dir());
    let dir = tempfile::tempdir().unwrap();
    let linux = fake_linux(dir.path());
    let entries = all(&relative, "ramips/mt7621", &linux);
    assert!(entries.len() > 250);
    assert!(entries.iter().all(|e| e.evaluated.is_ok()));
}
