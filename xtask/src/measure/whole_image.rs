//! A device's whole image (`IMAGE/<image>`, include/image.mk
//! `Device/Build/image`) measured: the recipe's steps on `$@`, from the
//! device's kernel image (`IMAGE_KERNEL`, `<device>-kernel.bin`) and a
//! rootfs (`IMAGE_ROOTFS`), up to its `check-size`.
//!
//! The steps, as the checkout's include/image-commands.mk defines them
//! (each definition is checked against [`IMAGE_DEFINITIONS`]):
//!
//! * `append-kernel`: `dd if=$(IMAGE_KERNEL) >> $@`;
//! * `append-rootfs`: `dd if=$(IMAGE_ROOTFS) >> $@`;
//! * `pad-to <size>`: `dd bs=<size> conv=sync`, NULs up to the next
//!   multiple of the size in dd's units ([`dd_bytes`]);
//! * `pad-offset <pad> <offset>`: NULs so that size + offset is a multiple
//!   of pad (`pad = (pad - ((size + offset) % pad)) % pad`), both through
//!   `exp_units`;
//! * `pad-rootfs [-x <offset>] [<KiB>…]`: OpenWrt's padjffs2
//!   (tools/padjffs2/src/padjffs2.c) on the image, with `$(BLOCKSIZE:%k=%)`
//!   or `4 8 16 64 128 256` after the step's own arguments ([`super::padjffs2`]);
//! * `pad-extra <size>`: `dd if=/dev/zero bs=<size> count=1 >> $@`, that
//!   many NULs in dd's units;
//! * `append-string <words>`: `echo -n $(1) >> $@`, the words joined by one
//!   space (words the shell would read otherwise, quotes or `$`, are
//!   refused);
//! * `check-size [<limit>]`: `[ $limitsize -ge $imagesize ]` with the
//!   argument or `IMAGE_SIZE` as the limit: the image fits when its size
//!   is at most the limit.
//!
//! Steps after the last `check-size` (`append-metadata`, vendor headers
//! some recipes add afterwards) do not change what `check-size` decided
//! and are not run. A recipe with another step before one of its
//! `check-size`s cannot be sized: [`size_checks`] says which step and why.
//!
//! The steps run on an [`ImageSink`] (measure/image_sink.rs): `Lengths`
//! keeps only the length (what fit needs: a few hundred devices in
//! milliseconds), `Bytes` the image itself; one implementation of each
//! step serves both, and a test compares them.

use anyhow::{bail, Context, Result};

use super::image_sink::{ImagePart, ImageSink, MAX_IMAGE_BYTES};
use crate::util::shell_arith::{dd_bytes, exp_units, limit_bytes, shell_arith};
use std::collections::BTreeMap;
use std::fmt;

/// One step of an image recipe: `pad-to 64k` is step `pad-to` with
/// arguments `["64k"]` (image.mk `build_cmd`: `$(call Build/<first
/// word>,<other words>)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageStep {
    /// The `Build/<name>` definition the step calls.
    pub name: String,
    /// Its arguments, split at white space.
    pub args: Vec<String>,
}

impl fmt::Display for ImageStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        for a in &self.args {
            write!(f, " {a}")?;
        }
        Ok(())
    }
}

/// The steps implemented here.
pub const IMAGE_STEPS: &[&str] = &[
    "append-kernel",
    "append-rootfs",
    "pad-to",
    "pad-offset",
    "pad-rootfs",
    "pad-extra",
    "append-string",
    "check-size",
];

/// For each implemented step, text its checkout definition must contain
/// (white space collapsed, `\` continuations dropped), as OpenWrt's
/// include/image-commands.mk writes it.
pub const IMAGE_DEFINITIONS: &[(&str, &[&str])] = &[
    ("Build/append-kernel", &["dd if=$(IMAGE_KERNEL) >> $@"]),
    ("Build/append-rootfs", &["dd if=$(IMAGE_ROOTFS) >> $@"]),
    ("Build/pad-to", &["$(call Image/pad-to,$@,$(1))"]),
    (
        "Build/pad-offset",
        &[
            "pad=\"$(call exp_units,$(word 1, $(1)))\"",
            "offset=\"$(call exp_units,$(word 2, $(1)))\"",
            "pad=\"(pad - ((size + offset) % pad)) % pad\"",
            "dd if=$@ of=$@.new bs=$$newsize count=1 conv=sync",
        ],
    ),
    (
        "Build/pad-rootfs",
        &["/bin/padjffs2 $@ $(1) $(if $(BLOCKSIZE),$(BLOCKSIZE:%k=%),4 8 16 64 128 256)"],
    ),
    (
        "Build/pad-extra",
        &["dd if=/dev/zero bs=$(1) count=1 >> $@"],
    ),
    ("Build/append-string", &["echo -n $(1) >> $@"]),
    (
        "Build/check-size",
        &[
            "limitsize=\"$$(($(call exp_units,$(if $(1),$(1),$(IMAGE_SIZE)))))\";",
            "[ $$limitsize -ge $$imagesize ]",
        ],
    ),
];

/// What a device's image steps read besides the parts.
#[derive(Debug, Clone, Copy, Default)]
pub struct ImageVars<'a> {
    /// `$(BLOCKSIZE)` (`64k`), if set.
    pub blocksize: Option<&'a str>,
    /// `$(IMAGE_SIZE)`, if set.
    pub image_size: Option<&'a str>,
}

/// One `check-size` of a recipe: the image's size there and the limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeCheck {
    /// The limit as written (`IMAGE_SIZE`'s `15872k`, or the argument).
    pub limit_text: String,
    /// The limit, bytes.
    pub limit_bytes: u64,
    /// The image's size at the check, bytes.
    pub size: u64,
}

impl SizeCheck {
    /// `check-size`'s verdict: `[ $limitsize -ge $imagesize ]`.
    pub fn fits(&self) -> bool {
        self.size <= self.limit_bytes
    }
}

/// `recipe` (`append-kernel | pad-to 64k | …`, as make expanded it) as
/// steps, split as image.mk's `split_args` does: at `|`, then at white
/// space.
pub fn parse_recipe(recipe: &str) -> Vec<ImageStep> {
    recipe
        .split('|')
        .filter_map(|s| {
            let mut words = s.split_whitespace().map(str::to_string);
            let name = words.next()?;
            Some(ImageStep {
                name,
                args: words.collect(),
            })
        })
        .collect()
}

/// Whether `recipe` has a `check-size` step.
pub fn has_check(recipe: &str) -> bool {
    parse_recipe(recipe).iter().any(|s| s.name == "check-size")
}

/// Runs `recipe`'s steps on `sink` up to its last `check-size` and
/// returns every check's size and limit, in order.
///
/// Errors: no `check-size`; a step before the last check that is not in
/// [`IMAGE_STEPS`] (naming it: a vendor header, `sysupgrade-tar`…); a step
/// argument that is not what the step reads (`pad-to` without a size, a
/// `$(…)` make left unexpanded); an image over 4 GiB for `pad-rootfs`, or
/// over [`MAX_IMAGE_BYTES`] after any step.
pub fn size_checks(
    recipe: &str,
    vars: &ImageVars<'_>,
    sink: &mut dyn ImageSink,
) -> Result<Vec<SizeCheck>> {
    let steps = parse_recipe(recipe);
    let Some(last) = steps.iter().rposition(|s| s.name == "check-size") else {
        bail!("the recipe has no check-size");
    };
    let mut checks = Vec::new();
    for step in &steps[..=last] {
        if let Some(arg) = step.args.iter().find(|a| a.contains("$(")) {
            bail!("step `{step}`: make left `{arg}` unexpanded");
        }
        // Every step checks its growth first: no sum overflows, and no
        // image past MAX_IMAGE_BYTES is made (or allocated).
        let room = |sink: &dyn ImageSink, add: u64| -> Result<()> {
            let fits = sink
                .length()
                .checked_add(add)
                .is_some_and(|n| n <= MAX_IMAGE_BYTES);
            anyhow::ensure!(
                fits,
                "step `{step}`: the image would be over {MAX_IMAGE_BYTES} bytes (1 TiB)"
            );
            Ok(())
        };
        match step.name.as_str() {
            "append-kernel" | "append-rootfs" => {
                let part = if step.name == "append-kernel" {
                    ImagePart::Kernel
                } else {
                    ImagePart::Rootfs
                };
                room(sink, sink.part_length(part))?;
                sink.append(part);
            }
            "pad-to" => {
                let [size] = step.args.as_slice() else {
                    bail!("step `{step}`: pad-to takes one size (`pad-to 64k`)");
                };
                let block = dd_bytes(size)?;
                let rest = sink.length() % block;
                if rest != 0 {
                    room(sink, block - rest)?;
                    sink.fill(0, block - rest);
                }
            }
            "pad-offset" => {
                let [pad, offset] = step.args.as_slice() else {
                    bail!(
                        "step `{step}`: pad-offset takes a pad and an offset (`pad-offset 64k 64`)"
                    );
                };
                let number = |t: &str| -> Result<u64> {
                    let v = shell_arith(&exp_units(t))
                        .with_context(|| format!("step `{step}`: {t:?}"))?;
                    u64::try_from(v).with_context(|| format!("step `{step}`: {t} is negative"))
                };
                let (pad, offset) = (number(pad)?, number(offset)?);
                anyhow::ensure!(pad > 0, "step `{step}`: the pad is 0 (`let` divides by it)");
                let size = sink.length();
                let add = (pad - (size % pad + offset % pad) % pad) % pad;
                room(sink, add)?;
                sink.fill(0, add);
            }
            "pad-extra" => {
                let [size] = step.args.as_slice() else {
                    bail!("step `{step}`: pad-extra takes one size (`pad-extra 64`)");
                };
                let n = dd_bytes(size)?;
                room(sink, n)?;
                sink.fill(0, n);
            }
            "append-string" => {
                let plain = |w: &String| {
                    w.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.,:+=@%/".contains(&b))
                };
                anyhow::ensure!(
                    !step.args.is_empty() && step.args.iter().all(plain),
                    "step `{step}`: only plain words (letters, digits, -_.,:+=@%/) are \
                     appended as echo -n would write them"
                );
                let text = step.args.join(" ");
                room(sink, text.len() as u64)?;
                sink.extend(text.as_bytes());
            }
            "pad-rootfs" => {
                let mut args = step.args.clone();
                match vars.blocksize {
                    Some(b) => args.push(b.strip_suffix('k').unwrap_or(b).to_string()),
                    None => args.extend(["4", "8", "16", "64", "128", "256"].map(String::from)),
                }
                super::padjffs2::padjffs2(sink, &args).with_context(|| format!("step `{step}`"))?;
            }
            "check-size" => {
                let text = match step.args.as_slice() {
                    [] => vars.image_size.with_context(|| {
                        "check-size without IMAGE_SIZE: the checkout's check-size would compare \
                         with $(( )), 0, and delete the image"
                    })?,
                    [limit] => limit.as_str(),
                    _ => bail!("step `{step}`: check-size takes one limit"),
                };
                checks.push(SizeCheck {
                    limit_text: text.to_string(),
                    limit_bytes: limit_bytes(text).with_context(|| format!("step `{step}`"))?,
                    size: sink.length(),
                });
            }
            other => bail!("step `{step}` before check-size: {}", why_not(other)),
        }
    }
    Ok(checks)
}

/// Checks that `definitions` (the checkout's, `Build/<step>` → text)
/// define each implemented step `recipe` uses up to its last `check-size`
/// as [`IMAGE_DEFINITIONS`] says; the error names the step and what its
/// definition lacks.
pub fn check_definitions(
    definitions: &BTreeMap<String, String>,
    recipe: &str,
) -> std::result::Result<(), String> {
    let steps = parse_recipe(recipe);
    let last = steps
        .iter()
        .rposition(|s| s.name == "check-size")
        .unwrap_or(0);
    for step in steps.iter().take(last + 1) {
        let def = format!("Build/{}", step.name);
        let Some((_, wanted)) = IMAGE_DEFINITIONS.iter().find(|(d, _)| *d == def) else {
            continue;
        };
        let have = definitions
            .get(&def)
            .map(|d| crate::util::text::collapse_make(d))
            .unwrap_or_default();
        for w in *wanted {
            let w = crate::util::text::collapse_make(w);
            if !have.contains(&w) {
                return Err(format!(
                    "the checkout's {def} is not what xtask makes: it should contain `{w}` but \
                     is `{have}`"
                ));
            }
        }
    }
    Ok(())
}

/// Why a step is not made here (for messages).
pub fn why_not(step: &str) -> &'static str {
    match step {
        "sysupgrade-tar" => {
            "a tar of kernel and rootfs (scripts/sysupgrade-tar.sh), whose size is not checked \
             against IMAGE_SIZE on flash but through UBI volumes"
        }
        "append-metadata" => "fwtool's metadata trailer is added after check-size only",
        "append-ubi" => "UBI images (ubinize) are not made here",
        _ if step.starts_with("tplink-")
            || step.starts_with("seama")
            || step.contains("header") =>
        {
            "a vendor header made by one of OpenWrt's firmware-utils, which neither the checkout \
             nor Debian has"
        }
        _ => "not implemented here",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::image_sink::{Bytes, Lengths};

    #[test]
    fn check_size_at_the_limit() {
        let vars = ImageVars {
            blocksize: Some("64k"),
            image_size: Some("1024k"),
        };
        let recipe =
            "append-kernel | pad-to 64k | append-rootfs | pad-rootfs | check-size | append-metadata";
        let size = |kernel: u64, rootfs: u64| {
            let mut l = Lengths {
                len: 0,
                kernel,
                rootfs,
            };
            size_checks(recipe, &vars, &mut l).unwrap()
        };
        let c = size(100_000, 500_000);
        // 100000 → 131072, + 500000 = 631072 → padded to 655360, + mark.
        assert_eq!(c[0].size, 655_364);
        assert_eq!(c[0].limit_bytes, 1 << 20);
        assert!(c[0].fits());
        let err = size_checks(
            "append-kernel | tplink-v1-header | check-size",
            &vars,
            &mut Lengths::default(),
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("tplink-v1-header"), "{err:#}");
        assert!(size_checks(
            "append-kernel | pad-to $(BLOCKSIZE) | check-size",
            &vars,
            &mut Lengths::default()
        )
        .is_err());
        assert!(size_checks("append-kernel", &vars, &mut Lengths::default()).is_err());
        let mut l = Lengths {
            len: 0,
            kernel: 100,
            rootfs: 0,
        };
        // Sizes past 1 TiB, or sums past u64, cannot be sized (no panic,
        // no wrapped "fits").
        for recipe in [
            "append-kernel | pad-to 18446744073709551615 | append-kernel | check-size",
            "append-kernel | pad-rootfs -x 18446744073709551615 | check-size",
            "append-kernel | pad-to 1025G | check-size",
            "append-kernel | pad-offset 18446744073709551615 18446744073709551615 | check-size",
        ] {
            let mut l = Lengths {
                len: 0,
                kernel: 3_000_000,
                rootfs: 0,
            };
            assert!(size_checks(recipe, &vars, &mut l).is_err(), "{recipe}");
        }
        // pad-extra and append-string, as ath79's recipes use them.
        let mut e = Lengths {
            len: 0,
            kernel: 100,
            rootfs: 0,
        };
        let c = size_checks(
            "append-kernel | pad-extra 64 | append-string 00DB120AR9344-RT-101214-00 | check-size 1m",
            &vars,
            &mut e,
        )
        .unwrap();
        assert_eq!(
            c[0].size,
            100 + 64 + "00DB120AR9344-RT-101214-00".len() as u64
        );
        let mut b = Bytes {
            out: Vec::new(),
            kernel: b"k",
            rootfs: b"",
        };
        size_checks(
            "append-kernel | pad-extra 2 | append-string a b | check-size 10",
            &vars,
            &mut b,
        )
        .unwrap();
        assert_eq!(b.out, b"k\0\0a b");
        assert!(size_checks(
            "append-string 'x y' | check-size 10",
            &vars,
            &mut Lengths::default()
        )
        .is_err());
        let c = size_checks(
            "append-kernel | pad-offset 64k 64 | check-size 65472",
            &vars,
            &mut l,
        )
        .unwrap();
        assert_eq!(c[0].size, 65536 - 64);
        assert!(c[0].fits());
    }
}
