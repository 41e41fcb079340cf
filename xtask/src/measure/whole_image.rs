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
//!   or `4 8 16 64 128 256` after the step's own arguments ([`padjffs2`]);
//! * `check-size [<limit>]`: `[ $limitsize -ge $imagesize ]` with the
//!   argument or `IMAGE_SIZE` as the limit: the image fits when its size
//!   is at most the limit.
//!
//! Steps after the last `check-size` (`append-metadata`, vendor headers
//! some recipes add afterwards) do not change what `check-size` decided
//! and are not run. A recipe with another step before one of its
//! `check-size`s cannot be sized: [`size_checks`] says which step and why.
//!
//! The steps run on an [`ImageSink`]: [`Lengths`] keeps only the length
//! (what fit needs: a few hundred devices in milliseconds), [`Bytes`] the
//! image itself; one implementation of each step serves both, and a test
//! compares them.

use anyhow::{bail, Context, Result};

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
        "Build/check-size",
        &[
            "limitsize=\"$$(($(call exp_units,$(if $(1),$(1),$(IMAGE_SIZE)))))\";",
            "[ $$limitsize -ge $$imagesize ]",
        ],
    ),
];

/// The file a step appends whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `$(IMAGE_KERNEL)`: the device's kernel image.
    Kernel,
    /// `$(IMAGE_ROOTFS)`: the rootfs.
    Rootfs,
}

/// The largest image sized, bytes (1 TiB, as `device-fit.json`'s sizes):
/// a step that would make one larger cannot be sized.
pub const MAX_IMAGE_BYTES: u64 = 1 << 40;

/// What the steps write to: `$@`.
pub trait ImageSink {
    /// The image's length so far, bytes.
    fn length(&self) -> u64;
    /// A [`Part`]'s length, bytes.
    fn part_length(&self, part: Part) -> u64;
    /// Appends a whole [`Part`].
    fn append(&mut self, part: Part);
    /// Appends `count` bytes of `byte`.
    fn fill(&mut self, byte: u8, count: u64);
    /// Appends `bytes`.
    fn extend(&mut self, bytes: &[u8]);
}

/// The image's length only, from the parts' lengths (bytes).
#[derive(Debug, Clone, Copy, Default)]
pub struct Lengths {
    /// Length so far.
    pub len: u64,
    /// `IMAGE_KERNEL`'s length.
    pub kernel: u64,
    /// `IMAGE_ROOTFS`'s length.
    pub rootfs: u64,
}

impl ImageSink for Lengths {
    fn length(&self) -> u64 {
        self.len
    }
    fn part_length(&self, part: Part) -> u64 {
        match part {
            Part::Kernel => self.kernel,
            Part::Rootfs => self.rootfs,
        }
    }
    fn append(&mut self, part: Part) {
        self.len += match part {
            Part::Kernel => self.kernel,
            Part::Rootfs => self.rootfs,
        };
    }
    fn fill(&mut self, _byte: u8, count: u64) {
        self.len += count;
    }
    fn extend(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
    }
}

/// The image's bytes.
#[derive(Debug, Clone)]
pub struct Bytes<'a> {
    /// The image so far.
    pub out: Vec<u8>,
    /// `IMAGE_KERNEL`.
    pub kernel: &'a [u8],
    /// `IMAGE_ROOTFS`.
    pub rootfs: &'a [u8],
}

impl ImageSink for Bytes<'_> {
    fn length(&self) -> u64 {
        self.out.len() as u64
    }
    fn part_length(&self, part: Part) -> u64 {
        match part {
            Part::Kernel => self.kernel.len() as u64,
            Part::Rootfs => self.rootfs.len() as u64,
        }
    }
    fn append(&mut self, part: Part) {
        let bytes = match part {
            Part::Kernel => self.kernel,
            Part::Rootfs => self.rootfs,
        };
        self.out.extend_from_slice(bytes);
    }
    fn fill(&mut self, byte: u8, count: u64) {
        self.out.resize(self.out.len() + count as usize, byte);
    }
    fn extend(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }
}

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
                    Part::Kernel
                } else {
                    Part::Rootfs
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
            "pad-rootfs" => {
                let mut args = step.args.clone();
                match vars.blocksize {
                    Some(b) => args.push(b.strip_suffix('k').unwrap_or(b).to_string()),
                    None => args.extend(["4", "8", "16", "64", "128", "256"].map(String::from)),
                }
                padjffs2(sink, &args).with_context(|| format!("step `{step}`"))?;
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

/// JFFS2's end-of-filesystem mark, as padjffs2 writes it.
pub const JFFS2_EOF_MARK: [u8; 4] = [0xde, 0xad, 0xc0, 0xde];

/// OpenWrt's padjffs2 (tools/padjffs2/src/padjffs2.c) on `sink` with
/// `args` (`[-x <offset>] <KiB>…`, each read as C's `strtoul(…, 0)`):
/// for each alignment from the smallest, 0xff up to the next multiple
/// (counting `-x`'s offset), then the 4-byte [`JFFS2_EOF_MARK`];
/// alignments the length already meets are dropped; no argument means
/// 4, 8, 64 and 128 KiB. At least one mark is written.
///
/// Errors: an argument that is not a number, or an image of 4 GiB or more
/// (padjffs2's 32-bit alignment masks).
pub fn padjffs2(sink: &mut dyn ImageSink, args: &[String]) -> Result<()> {
    let mut xtra: u64 = 0;
    let mut mask: u32 = 0;
    let mut i = 0;
    while i < args.len() {
        if i == 0 && args[i] == "-x" {
            let v = args.get(1).context("padjffs2 -x without an offset")?;
            xtra = strtoul(v)?;
            i += 2;
            continue;
        }
        mask |= strtoul(&args[i])?.wrapping_mul(1024) as u32;
        i += 1;
    }
    if mask == 0 {
        mask = (4 | 8 | 64 | 128) * 1024;
    }
    let Some(mut in_len) = sink.length().checked_add(xtra).filter(|n| *n < 1 << 32) else {
        bail!("padjffs2 on an image of 4 GiB or more (with -x's offset)");
    };
    let mut out_len = in_len;
    while mask != 0 {
        let Some(bit) = (10..32).find(|b| mask & (1 << b) != 0) else {
            break;
        };
        let align = 1u64 << bit;
        in_len = (in_len + align - 1) & !(align - 1);
        for b in 10..32 {
            if in_len & ((1u64 << b) - 1) == 0 {
                mask &= !(1u32 << b);
            }
        }
        if out_len < in_len {
            sink.fill(0xff, in_len - out_len);
            out_len = in_len;
        }
        sink.extend(&JFFS2_EOF_MARK);
        out_len += 4;
    }
    Ok(())
}

/// C's `strtoul(text, NULL, 0)` for a whole number: decimal, `0x` hex or
/// leading-`0` octal. Errors on anything else (where strtoul would read a
/// prefix or 0 silently).
fn strtoul(text: &str) -> Result<u64> {
    let t = text.trim();
    let parsed = if let Some(hex) = t.strip_prefix("0x").or(t.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8)
    } else {
        t.parse::<u64>()
    };
    parsed.with_context(|| format!("padjffs2 argument {text:?} is not a number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(len: usize, args: &[&str]) -> Vec<u8> {
        let kernel = vec![1u8; len];
        let mut sink = Bytes {
            out: Vec::new(),
            kernel: &kernel,
            rootfs: &[],
        };
        sink.append(Part::Kernel);
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        padjffs2(&mut sink, &args).unwrap();
        sink.out
    }

    /// The cases worked through padjffs2.c's loop by hand.
    #[test]
    fn padjffs2_as_its_c_source_pads() {
        // 5000 bytes, 4 and 64 KiB: 0xff to 8192, mark, 0xff to 65536, mark.
        let out = bytes(5000, &["4", "64"]);
        assert_eq!(out.len(), 65536 + 4);
        assert!(out[5000..8192].iter().all(|b| *b == 0xff));
        assert_eq!(out[8192..8196], JFFS2_EOF_MARK);
        assert!(out[8196..65536].iter().all(|b| *b == 0xff));
        assert_eq!(out[65536..], JFFS2_EOF_MARK);
        // Already aligned to every size: one mark only.
        assert_eq!(bytes(65536, &["4", "64"]).len(), 65536 + 4);
        // 8192 is a multiple of 4 and 8 KiB: both dropped at once.
        let out = bytes(8000, &["4", "8", "16"]);
        assert_eq!(out.len(), 16384 + 4);
        assert_eq!(out[8192..8196], JFFS2_EOF_MARK);
        // No argument: 4, 8, 64, 128 KiB.
        assert_eq!(bytes(1, &[]).len(), 131072 + 4);
        // -x counts an offset before the file.
        assert_eq!(bytes(1000, &["-x", "100", "4"]).len(), 4096 - 100 + 4);
        let mut l = Lengths {
            kernel: 5000,
            ..Default::default()
        };
        l.append(Part::Kernel);
        padjffs2(&mut l, &["4".into(), "64".into()]).unwrap();
        assert_eq!(l.len, 65536 + 4);
        assert!(padjffs2(&mut l, &["64k".into()]).is_err());
    }

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
