//! Turning a finished kernel build into the files OpenWrt ships, and
//! measuring them.
//!
//! * `vmlinux.bin`: `objcopy -O binary` with OpenWrt's `OBJCOPY_STRIP`
//!   (include/kernel-defaults.mk).
//! * `vmlinux.lzma`: OpenWrt's `Build/lzma` (include/image-commands.mk):
//!   `lzma e -lc1 -lp2 -pb2`, the LZMA SDK 4.65 encoder of OpenWrt's
//!   tools/lzma. Without `-d` (only a few device recipes pass one) the SDK's
//!   defaults apply: 8 MiB dictionary (`-d23`), normal mode (`-a1`), 128
//!   fast bytes (`-fb128`), bt4 match finder. We encode with liblzma in the
//!   same "alone" format with those parameters ([`OPENWRT_LZMA`], recorded
//!   in result.json); liblzma writes an end marker and an unknown-size
//!   header where the SDK writes the size, so files can differ from
//!   OpenWrt's by a few bytes, equally for every variant.
//! * `uImage`: `mkimage -A <arch> -O linux -T kernel -C lzma` around
//!   `vmlinux.lzma` (u-boot-tools), with `SOURCE_DATE_EPOCH=0` so that
//!   identical kernels give identical images.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use liblzma::stream::{LzmaOptions, MatchFinder, Mode, Stream};
use object::{Object, ObjectSymbol};
use xshell::{cmd, Shell};

use crate::inputs::targets::{Artifact, Target};
use crate::results::{ArtifactRecord, LzmaRecord};
use crate::util::hash::sha256_file;

/// Sections OpenWrt strips when making the raw kernel binary.
pub const OBJCOPY_STRIP: &[&str] = &[
    "-R",
    ".reginfo",
    "-R",
    ".notes",
    "-R",
    ".note",
    "-R",
    ".comment",
    "-R",
    ".mdebug",
    "-R",
    ".note.gnu.build-id",
    "-S",
];

/// OpenWrt's `Build/lzma` parameters: `-lc1 -lp2 -pb2` and LZMA SDK
/// 4.65's default dictionary, 2^23 bytes (8 MiB).
pub const OPENWRT_LZMA: LzmaRecord = LzmaRecord {
    lc: 1,
    lp: 2,
    pb: 2,
    dict_size: 8 << 20,
};

/// The LZMA parameters `target`'s artifacts are made with, when it makes
/// `vmlinux.lzma` or a uImage (whose payload it is); otherwise `None`.
pub fn lzma_parameters(target: &Target) -> Option<LzmaRecord> {
    target
        .artifacts
        .iter()
        .any(|a| matches!(a, Artifact::VmlinuxLzma | Artifact::UImage))
        .then_some(OPENWRT_LZMA)
}

/// Compresses `input` as OpenWrt's `Build/lzma` does (see the module docs):
/// LZMA alone format with [`OPENWRT_LZMA`].
pub fn lzma_openwrt(input: &[u8]) -> Result<Vec<u8>> {
    lzma_alone(input, &OPENWRT_LZMA)
}

/// Compresses `input` in the LZMA "alone" format with `p`'s lc, lp, pb and
/// dictionary size and the LZMA SDK 4.65 `lzma e` defaults for the rest
/// (normal mode, 128 fast bytes, bt4); an unknown-size header and an end
/// marker, as `lzma e -si -so -eos` writes (see the module docs).
pub fn lzma_alone(input: &[u8], p: &LzmaRecord) -> Result<Vec<u8>> {
    let mut stream =
        Stream::new_lzma_encoder(&lzma_options(p)?).context("creating an LZMA encoder")?;
    let mut out = Vec::with_capacity(input.len() / 2 + 4096);
    let mut consumed = 0;
    loop {
        if out.capacity() - out.len() < 4096 {
            out.reserve(out.len() / 2 + 4096);
        }
        let before_in = stream.total_in();
        let status = stream
            .process_vec(
                &input[consumed..],
                &mut out,
                liblzma::stream::Action::Finish,
            )
            .context("LZMA compression")?;
        consumed += (stream.total_in() - before_in) as usize;
        if status == liblzma::stream::Status::StreamEnd {
            return Ok(out);
        }
    }
}

/// The liblzma options of [`lzma_alone`] for `p`.
pub fn lzma_options(p: &LzmaRecord) -> Result<LzmaOptions> {
    let mut options = LzmaOptions::new_preset(6).context("liblzma preset 6")?;
    options
        .dict_size(p.dict_size)
        .literal_context_bits(p.lc)
        .literal_position_bits(p.lp)
        .position_bits(p.pb)
        .mode(Mode::Normal)
        .nice_len(128)
        .match_finder(MatchFinder::BinaryTree4);
    Ok(options)
}

/// Where the kernel build leaves what each artifact is made from.
#[derive(Debug, Clone)]
pub struct BuildOutputs {
    /// `vmlinux` (ELF).
    pub vmlinux: PathBuf,
    /// `arch/<arch>/boot/zImage`, when built.
    pub zimage: Option<PathBuf>,
}

/// Makes and copies every artifact `target` lists into `dest`, returning
/// each one's size and sha256 keyed by file name.
///
/// Errors name the missing file (e.g. a zImage the build did not make) or
/// the failing tool.
pub fn produce(
    sh: &Shell,
    target: &Target,
    outputs: &BuildOutputs,
    dest: &Path,
) -> Result<BTreeMap<String, ArtifactRecord>> {
    std::fs::create_dir_all(dest).with_context(|| format!("creating {}", dest.display()))?;
    let objcopy = format!("{}objcopy", target.cross_compile);
    let mut records = BTreeMap::new();
    // Order matters: vmlinux.bin before vmlinux.lzma before uImage.
    let mut wanted = target.artifacts.clone();
    wanted.sort();
    for artifact in wanted {
        let out = dest.join(artifact.file_name());
        match artifact {
            Artifact::Vmlinux => copy(&outputs.vmlinux, &out)?,
            Artifact::ZImage => {
                let zimage = outputs.zimage.as_ref().with_context(|| {
                    format!(
                        "{}: artifacts lists zImage but make_targets does not build it; add \"zImage\"",
                        target.file.display()
                    )
                })?;
                copy(zimage, &out)?;
            }
            Artifact::VmlinuxBin => {
                let vmlinux = &outputs.vmlinux;
                let strip = OBJCOPY_STRIP;
                cmd!(sh, "{objcopy} -O binary {strip...} {vmlinux} {out}")
                    .quiet()
                    .run()
                    .with_context(|| format!("{objcopy}: making {}", out.display()))?;
            }
            Artifact::VmlinuxLzma => write_lzma(sh, &objcopy, outputs, dest, &out)?,
            Artifact::UImage => {
                let spec = target.uimage.as_ref().with_context(|| {
                    format!("{}: uImage needs an [uimage] table", target.file.display())
                })?;
                let lzma = dest.join(Artifact::VmlinuxLzma.file_name());
                if !lzma.is_file() {
                    write_lzma(sh, &objcopy, outputs, dest, &lzma)?;
                }
                let entry = symbol_address(&outputs.vmlinux, &spec.entry_symbol)?;
                let entry = format!("0x{entry:08x}");
                let (arch, load, name) = (&target.arch, &spec.load_address, &spec.name);
                cmd!(
                    sh,
                    "mkimage -A {arch} -O linux -T kernel -C lzma -a {load} -e {entry} -n {name} -d {lzma} {out}"
                )
                .env("SOURCE_DATE_EPOCH", "0")
                .quiet()
                .ignore_stdout()
                .run()
                .context("mkimage (from u-boot-tools; `apt-get install u-boot-tools`)")?;
            }
        }
        records.insert(artifact.file_name().to_string(), record(&out)?);
    }
    Ok(records)
}

/// The size and sha256 of the artifact at `path`, as `result.json` records it.
pub fn record(path: &Path) -> Result<ArtifactRecord> {
    Ok(ArtifactRecord {
        size: std::fs::metadata(path)
            .with_context(|| format!("reading {}", path.display()))?
            .len(),
        sha256: sha256_file(path)?,
    })
}

/// Writes `out`: `vmlinux.bin` (made first if missing) compressed as
/// OpenWrt's `vmlinux.bin.lzma` is.
fn write_lzma(
    sh: &Shell,
    objcopy: &str,
    outputs: &BuildOutputs,
    dest: &Path,
    out: &Path,
) -> Result<()> {
    let bin = ensure_bin(sh, objcopy, outputs, dest)?;
    let raw = crate::util::fs::read_bytes_limited(
        &bin,
        crate::util::fs::FileLimit::binary("vmlinux.bin"),
        "",
    )?;
    crate::util::fs::write_atomic(out, &lzma_openwrt(&raw)?)
}

fn ensure_bin(sh: &Shell, objcopy: &str, outputs: &BuildOutputs, dest: &Path) -> Result<PathBuf> {
    let bin = dest.join(Artifact::VmlinuxBin.file_name());
    if !bin.is_file() {
        let vmlinux = &outputs.vmlinux;
        let strip = OBJCOPY_STRIP;
        cmd!(sh, "{objcopy} -O binary {strip...} {vmlinux} {bin}")
            .quiet()
            .run()
            .with_context(|| format!("{objcopy}: making {}", bin.display()))?;
    }
    Ok(bin)
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    if !from.is_file() {
        bail!("{} was not built", from.display());
    }
    std::fs::copy(from, to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// The address of ELF symbol `name` in `elf` (e.g. `kernel_entry`).
pub fn symbol_address(elf: &Path, name: &str) -> Result<u64> {
    let data = crate::util::fs::read_bytes_limited(
        elf,
        crate::util::fs::FileLimit::binary("ELF file"),
        "",
    )?;
    let file = object::File::parse(&*data)
        .with_context(|| format!("{}: not an ELF file", elf.display()))?;
    let address = file
        .symbols()
        .find(|s| s.name() == Ok(name))
        .map(|s| s.address())
        .with_context(|| format!("{}: no symbol {name:?}", elf.display()))?;
    // 32-bit MIPS kernels are linked at sign-extended addresses; mkimage takes 32 bits.
    Ok(address & 0xffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `xz --format=lzma -d` (the reference decoder) restores the input, and
    /// the header carries OpenWrt's properties byte: (pb*5 + lp)*9 + lc = 93.
    #[test]
    fn lzma_is_decodable_by_xz_with_openwrt_properties() {
        if !crate::util::test_gate::programs(&[("xz", "xz-utils")]) {
            return;
        }
        let sh = Shell::new().unwrap();
        let input: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let packed = lzma_openwrt(&input).unwrap();
        assert_eq!(packed[0], (2 * 5 + 2) * 9 + 1);
        assert_eq!(
            u32::from_le_bytes(packed[1..5].try_into().unwrap()),
            8 << 20
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.lzma");
        std::fs::write(&file, &packed).unwrap();
        let out = cmd!(sh, "xz --format=lzma -dc {file}").output().unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, input);
    }

    /// Our encoder against an independent one with OpenWrt's parameters:
    /// Python's `lzma` module (FORMAT_ALONE, LZMA1 lc=1 lp=2 pb=2, 8 MiB
    /// dictionary; its other settings are liblzma preset 6's, nice length
    /// 64 where we use the SDK's 128). The input is 3 MiB of generated
    /// words (a fixed pseudo-random text, so the sizes do not move with the
    /// build, as this test's own binary did), twice: the copy 3 MiB back is
    /// found only with a dictionary larger than 3 MiB, so a 1 MiB
    /// dictionary is about twice as big. Sizes must agree within 0.5 %.
    #[test]
    fn lzma_size_matches_python_lzma_alone_with_openwrt_dictionary() {
        if !crate::util::test_gate::programs(&[("python3", "python3")]) {
            return;
        }
        const BLOCK: usize = 3 << 20;
        const WORDS: [&str; 16] = [
            "skb",
            "napi_gro_receive",
            "->",
            "dev",
            "(",
            ")",
            ";\n\t",
            "if",
            "return",
            "nf_conntrack",
            "0x",
            "struct",
            "{",
            "}",
            "ip_forward",
            " ",
        ];
        let mut input = Vec::with_capacity(2 * BLOCK);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        while input.len() < BLOCK {
            // xorshift64: the same words on every machine.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            input.extend_from_slice(WORDS[(x % 16) as usize].as_bytes());
            if x.is_multiple_of(7) {
                input.extend_from_slice(format!("{}", x % 4096).as_bytes());
            }
        }
        input.truncate(BLOCK);
        input.extend_from_within(..);
        let ours = lzma_openwrt(&input).unwrap().len();

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("input.bin");
        std::fs::write(&file, &input).unwrap();
        let script = "import lzma, sys\n\
            data = open(sys.argv[1], 'rb').read()\n\
            f = [{'id': lzma.FILTER_LZMA1, 'lc': 1, 'lp': 2, 'pb': 2, 'dict_size': 8 << 20}]\n\
            print(len(lzma.compress(data, format=lzma.FORMAT_ALONE, filters=f)))\n";
        let sh = Shell::new().unwrap();
        let python: usize = cmd!(sh, "python3 -c {script} {file}")
            .quiet()
            .read()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let diff = (ours as f64 - python as f64) * 100.0 / python as f64;
        eprintln!(
            "input {} bytes: ours {ours} bytes, python lzma {python} bytes ({diff:+.3} %)",
            input.len()
        );
        assert!(
            diff.abs() <= 0.5,
            "ours {ours}, python {python}: {diff:+.3} %"
        );
    }
}
