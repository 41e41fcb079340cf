//! The MIPS loaders ramips recipes wrap a kernel in, built from the
//! checkout's own sources and Makefiles with the target's cross compiler.
//!
//! * `loader-kernel` (target/linux/ramips/image/Makefile, through
//!   `Build/loader-common`): `$(MAKE) -C lzma-loader PKG_BUILD_DIR="$@.src"
//!   TARGET_DIR="$(dir $@)" LOADER_NAME="$(notdir $@)" BOARD="$(BOARDNAME)"
//!   PLATFORM="$(LOADER_PLATFORM)" LZMA_TEXT_START=$(LZMA_TEXT_START)
//!   LOADADDR=$(LOADADDR) SUBTARGET=$(SUBTARGET) LOADER_DATA="$@" compile
//!   loader.$(LOADER_TYPE)`, then `mv "$@.$(LOADER_TYPE)" "$@"`: OpenWrt's
//!   lzma-loader with the image (the LZMA stream) linked in as its data.
//!   [`lzma_loader`] runs that make command by argv in the checkout's
//!   `lzma-loader` directory, with `TARGET_CROSS`, `CP` and `TOPDIR` (a
//!   stand-in rules.mk) that OpenWrt's build environment would give.
//! * `relocate-kernel [addr]` (same file): `$(MAKE) -C <copy of
//!   ../../generic/image/relocate> KERNEL_ADDR=<addr, else KERNEL_LOADADDR>
//!   CROSS_COMPILE=$(TARGET_CROSS)`, then `loader.bin` padded with zeros to
//!   a multiple of 32 bytes (`dd bs=32 conv=sync`), the image's size as a
//!   32-bit little-endian word (`perl … pack("V", …)`) and the image
//!   ([`relocate`]). The stub depends only on the address and compiler, so
//!   it is built once per address ([`Stubs`]).
//!
//! OpenWrt builds both with its own toolchain; Debian's cross compiler
//! differs in three ways the build makes up for, without touching the
//! checkout's Makefiles (a `GNUmakefile` in the build directory includes
//! the checkout's `Makefile`, which GNU make reads first):
//!
//! * `-fhonour-copts` is an option only OpenWrt's patched gcc knows (it
//!   changes no code); it is filtered out of `CFLAGS`;
//! * Debian's gcc links with `--build-id`, whose note at address 0 would
//!   make `objcopy -O binary` write gigabytes; `-Wl,--build-id=none` is
//!   added (OpenWrt's gcc adds no build id);
//! * OpenWrt's toolchain has the kernel's `asm/asm.h` and `asm/regdef.h`
//!   (with what they include) and musl in its sysroot. The kernel tree's
//!   headers are copied to a scratch include directory and the libc
//!   headers are the cross glibc's (`/usr/<triple>/include`, else the other
//!   endianness's: glibc's headers are the same for both; the loader uses
//!   no type of `sys/types.h`). The loader is linked `-static`, so gcc
//!   adds `-lc`; nothing of it is used (`--gc-sections` keeps nothing of
//!   musl's), and an empty `libc.a` stands in for musl's: a loader that
//!   called libc would fail to link here, not link something else.
//!
//! A dry run never runs these (they run the checkout's Makefiles); they
//! run while a real build makes a device's image.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::util::text::collapse_make;
use anyhow::{bail, Context, Result};
use object::{Object, ObjectSymbol};
use xshell::{cmd, Shell};

use super::tree::KernelTree;
use crate::inputs::openwrt::image::{DeviceRecipe, KernelRecipeStep, RULES_MK};

/// What `Build/loader-common` must contain (white space collapsed, `\`
/// line continuations dropped) for [`lzma_loader`] to be what it runs.
pub const LOADER_COMMON: &[&str] = &[
    "$(MAKE) -C lzma-loader PKG_BUILD_DIR=\"$@.src\" TARGET_DIR=\"$(dir $@)\" \
     LOADER_NAME=\"$(notdir $@)\" BOARD=\"$(BOARDNAME)\" PLATFORM=\"$(LOADER_PLATFORM)\" \
     LZMA_TEXT_START=$(LZMA_TEXT_START) LOADADDR=$(LOADADDR) SUBTARGET=$(SUBTARGET) \
     $(1) compile loader.$(LOADER_TYPE)",
    "mv \"$@.$(LOADER_TYPE)\" \"$@\"",
];

/// The headers of the kernel tree's `arch/mips/include` that the loaders'
/// `head.S` include (directly or through `asm/asm.h`).
const ASM_HEADERS: &[&str] = &[
    "asm/asm.h",
    "asm/regdef.h",
    "asm/asm-eva.h",
    "asm/isa-rev.h",
    "uapi/asm/sgidefs.h",
];

/// The `GNUmakefile` put beside the checkout's lzma-loader `Makefile`
/// (see the module docs); it links through gcc.
const GNUMAKEFILE: &str =
    "# Written by cargo xtask: the checkout's Makefile for Debian's cross gcc.\n\
include Makefile\n\
CFLAGS := $(filter-out -fhonour-copts,$(CFLAGS))\n\
LDFLAGS += -Wl,--build-id=none -L$(XTASK_LIBC_DIR)\n";

/// The same for the relocation stub, which links with ld itself (no build
/// id, no libc).
const GNUMAKEFILE_RELOCATE: &str =
    "# Written by cargo xtask: the checkout's Makefile for Debian's cross gcc.\n\
include Makefile\n\
CFLAGS := $(filter-out -fhonour-copts,$(CFLAGS))\n";

/// The make variables of one lzma-loader build but its data: devices with
/// equal parameters get the same loader code.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LoaderParams {
    /// The checkout's `lzma-loader` directory.
    pub dir: PathBuf,
    /// `name=value` for each variable on make's command line.
    pub vars: Vec<String>,
    /// `LOADER_TYPE` (`bin`, `elf`, `gz`).
    pub loader_type: String,
}

impl LoaderParams {
    /// The parameters `recipe` builds its loader with.
    ///
    /// Errors when `LOADER_TYPE` is empty (make would build `loader.`).
    pub fn of(recipe: &DeviceRecipe, tree: &KernelTree<'_>) -> Result<LoaderParams> {
        let var = |n: &str| recipe.var(n).unwrap_or("").to_string();
        let loader_type = var("LOADER_TYPE");
        anyhow::ensure!(
            !loader_type.is_empty(),
            "device {} ({}): loader-kernel, but LOADER_TYPE is empty",
            recipe.device,
            recipe.origin_text()
        );
        Ok(LoaderParams {
            dir: recipe.image_dir.join("lzma-loader"),
            vars: vec![
                format!("BOARD={}", var("BOARDNAME")),
                format!("PLATFORM={}", var("LOADER_PLATFORM")),
                format!("LZMA_TEXT_START={}", var("LZMA_TEXT_START")),
                format!("LOADADDR={}", var("LOADADDR")),
                format!("SUBTARGET={}", var("SUBTARGET")),
                format!("TARGET_CROSS={}", tree.cross_compile),
            ],
            loader_type,
        })
    }
}

/// A loader built with one device's data, and where that data is in it.
#[derive(Debug, Clone)]
pub struct LoaderBuild {
    /// The loader (`loader.<LOADER_TYPE>`): `$@` after the step.
    pub bytes: Vec<u8>,
    /// For `LOADER_TYPE` `bin`: the offset of the data in `bytes` when the
    /// loader is its code followed by the data and nothing else (read
    /// from the linked ELF: `_lzma_data_start - _code_start`, and `.text`
    /// ending at `_lzma_data_end` with no loadable section after it,
    /// checked on the bytes). Then the loader of other data of the same
    /// parameters is as long as the offset plus that data: only the two
    /// address words that locate the data differ in the code.
    pub data_offset: Option<u64>,
}

/// Checks that the checkout's `Build/loader-common` is [`LOADER_COMMON`].
pub fn check_loader_common(recipe: &DeviceRecipe) -> Result<()> {
    let have = collapse_make(
        recipe
            .definitions
            .get("Build/loader-common")
            .map(String::as_str)
            .unwrap_or(""),
    );
    for w in LOADER_COMMON {
        let w = collapse_make(w);
        if !have.contains(&w) {
            bail!(
                "device {} ({}): the checkout's Build/loader-common is not what xtask runs: it \
                 should contain `{w}` but is `{have}`",
                recipe.device,
                recipe.origin_text()
            );
        }
    }
    Ok(())
}

/// CPATH for the loaders' sources: the kernel tree's MIPS headers copied
/// into `scratch/include`, then the cross libc's headers (module docs).
fn include_path(tree: &KernelTree<'_>, scratch: &Path) -> Result<String> {
    let include = scratch.join("include");
    for h in ASM_HEADERS {
        let from = tree.linux_dir.join("arch/mips/include").join(h);
        let to = include
            .join("asm")
            .join(Path::new(h).file_name().unwrap_or_default());
        std::fs::create_dir_all(include.join("asm"))
            .with_context(|| format!("creating {}", include.display()))?;
        std::fs::copy(&from, &to)
            .with_context(|| format!("copying the kernel's {} for the loader", from.display()))?;
    }
    let triple = tree.cross_compile.trim_end_matches('-');
    let other = match triple.split_once('-') {
        Some(("mipsel", rest)) => format!("mips-{rest}"),
        Some(("mips", rest)) => format!("mipsel-{rest}"),
        _ => triple.to_string(),
    };
    let libc = [triple, other.as_str()]
        .iter()
        .map(|t| PathBuf::from(format!("/usr/{t}/include")))
        .find(|d| d.join("sys/types.h").is_file())
        .with_context(|| {
            format!(
                "the loader includes <sys/types.h>, but neither /usr/{triple}/include nor \
                 /usr/{other}/include has it; `apt-get install libc6-dev-{}-cross`",
                triple.split('-').next().unwrap_or(triple)
            )
        })?;
    Ok(format!("{}:{}", include.display(), libc.display()))
}

/// An empty `libc.a` in `scratch/lib` (module docs); the directory.
fn empty_libc(tree: &KernelTree<'_>, sh: &Shell, scratch: &Path) -> Result<PathBuf> {
    let dir = scratch.join("lib");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let ar = format!("{}ar", tree.cross_compile);
    let lib = dir.join("libc.a");
    cmd!(sh, "{ar} rc {lib}")
        .quiet()
        .run()
        .with_context(|| format!("{ar}: writing an empty libc.a"))?;
    Ok(dir)
}

/// Copies the regular files of `from` into `to` (created).
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry.with_context(|| format!("reading {}", from.display()))?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name()))
                .with_context(|| format!("copying {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// How long one make of a loader (a few C files) may take.
const MAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// `make -C dir args…` of the checkout's loader Makefile, under the
/// supervisor with a deadline ([`MAKE_TIMEOUT`]): the Makefile is the
/// checkout's, so a loop in it is stopped, not waited for.
fn run_make(dir: &Path, args: &[String], cpath: &str, what: &str) -> Result<()> {
    let mut make = std::process::Command::new("make");
    make.args(["-s", "--no-print-directory", "-C"])
        .arg(dir)
        .args(args)
        .env("CPATH", cpath)
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL");
    let out = crate::util::process::run_captured(
        make,
        &format!("make (GNU make) for {what}"),
        "is make installed? (`cargo xtask setup`)",
        MAKE_TIMEOUT,
    )?;
    anyhow::ensure!(
        out.status.success(),
        "make -C {} for {what} failed ({}): {}",
        dir.display(),
        out.status,
        out.stderr.trim()
    );
    Ok(())
}

/// Builds `recipe`'s lzma-loader with `data` (`LOADER_DATA`) in a scratch
/// directory under `work`, as `Build/loader-common` does (module docs).
///
/// Errors name the device and carry make's message.
pub fn lzma_loader(
    sh: &Shell,
    recipe: &DeviceRecipe,
    tree: &KernelTree<'_>,
    data: &[u8],
    work: &Path,
) -> Result<LoaderBuild> {
    check_loader_common(recipe)?;
    let params = LoaderParams::of(recipe, tree)?;
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    let scratch = tempfile::tempdir_in(work).context("creating the loader's directory")?;
    let s = scratch.path();
    let image = s.join("image");
    std::fs::write(&image, data).with_context(|| format!("writing {}", image.display()))?;
    // The checkout's lzma-loader/Makefile copies src/ into PKG_BUILD_DIR
    // unless it is prepared; it is prepared here, with the GNUmakefile.
    let build = s.join("image.src");
    copy_dir(&params.dir.join("src"), &build)?;
    std::fs::write(build.join("GNUmakefile"), GNUMAKEFILE)
        .with_context(|| format!("writing {}/GNUmakefile", build.display()))?;
    std::fs::write(build.join(".prepared"), b"")?;
    let topdir = s.join("top");
    std::fs::create_dir_all(&topdir)?;
    std::fs::write(topdir.join("rules.mk"), RULES_MK)?;
    let cpath = include_path(tree, s)?;
    let libc = empty_libc(tree, sh, s)?;
    let mut args = vec![
        format!("TOPDIR={}", topdir.display()),
        format!("KDIR={}", s.display()),
        "CP=cp -fpR".to_string(),
        format!("XTASK_LIBC_DIR={}", libc.display()),
        format!("PKG_BUILD_DIR={}", build.display()),
        format!("TARGET_DIR={}/", s.display()),
        "LOADER_NAME=image".to_string(),
    ];
    args.extend(params.vars.iter().cloned());
    args.extend([
        format!("LOADER_DATA={}", image.display()),
        "compile".to_string(),
        format!("loader.{}", params.loader_type),
    ]);
    run_make(
        &params.dir,
        &args,
        &cpath,
        &format!("device {}'s lzma-loader", recipe.device),
    )?;
    let out = s.join(format!("image.{}", params.loader_type));
    let bytes = read(&out)?;
    let data_offset = if params.loader_type == "bin" {
        data_offset(&build.join("loader"), &bytes, data)?
    } else {
        None
    };
    Ok(LoaderBuild { bytes, data_offset })
}

/// Where `data` starts in the `loader.bin` made from the ELF `elf` when
/// the binary is code then data and nothing after (see
/// [`LoaderBuild::data_offset`]).
fn data_offset(elf: &Path, bin: &[u8], data: &[u8]) -> Result<Option<u64>> {
    let raw = read(elf)?;
    let file =
        object::File::parse(&*raw).with_context(|| format!("{}: not an ELF", elf.display()))?;
    let sym = |name: &str| {
        file.symbols()
            .find(|s| s.name() == Ok(name))
            .map(|s| s.address())
    };
    let (Some(code), Some(start), Some(end)) = (
        sym("_code_start"),
        sym("_lzma_data_start"),
        sym("_lzma_data_end"),
    ) else {
        return Ok(None);
    };
    let offset = start.wrapping_sub(code) as usize;
    let fits = end.wrapping_sub(start) as usize == data.len()
        && bin.len() == offset + data.len()
        && bin.get(offset..) == Some(data);
    Ok(fits.then_some(offset as u64))
}

fn read(path: &Path) -> Result<Vec<u8>> {
    crate::util::fs::read_bytes_limited(path, crate::util::fs::FileLimit::binary("loader"), "")
}

/// `stub` (already padded) followed by `image`'s size (u32, little endian)
/// and `image`: what `relocate-kernel` writes.
///
/// Errors when the image is 4 GiB or more (perl's `pack("V")` would wrap).
pub fn relocate(stub: &[u8], image: &[u8]) -> Result<Vec<u8>> {
    let size = u32::try_from(image.len()).context("relocate-kernel: image of 4 GiB or more")?;
    let mut out = Vec::with_capacity(stub.len() + 4 + image.len());
    out.extend_from_slice(stub);
    out.extend_from_slice(&size.to_le_bytes());
    out.extend_from_slice(image);
    Ok(out)
}

/// The address `step` (`relocate-kernel [addr]`) relocates to: its
/// argument, else `KERNEL_LOADADDR`.
pub fn relocate_address(recipe: &DeviceRecipe, step: &KernelRecipeStep) -> Result<String> {
    match step.args.first() {
        Some(a) => Ok(a.clone()),
        None => recipe
            .var("KERNEL_LOADADDR")
            .map(str::to_string)
            .with_context(|| {
                format!(
                "device {} ({}): relocate-kernel without an address, and KERNEL_LOADADDR is empty",
                recipe.device,
                recipe.origin_text()
            )
            }),
    }
}

/// Builds the relocation stub for `addr` (module docs) under `work` and
/// returns `loader.bin` padded with zeros to a multiple of 32 bytes.
pub fn relocate_stub(
    recipe: &DeviceRecipe,
    tree: &KernelTree<'_>,
    addr: &str,
    work: &Path,
) -> Result<Vec<u8>> {
    let source = recipe.image_dir.join("../../generic/image/relocate");
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    let scratch = tempfile::tempdir_in(work).context("creating the stub's directory")?;
    let build = scratch.path().join("relocate");
    copy_dir(&source, &build)?;
    std::fs::write(build.join("GNUmakefile"), GNUMAKEFILE_RELOCATE)?;
    let cpath = include_path(tree, scratch.path())?;
    let args = vec![
        format!("KERNEL_ADDR={addr}"),
        format!("CROSS_COMPILE={}", tree.cross_compile),
    ];
    run_make(
        &build,
        &args,
        &cpath,
        &format!("the relocation stub at {addr}"),
    )?;
    let bin = build.join("loader.bin");
    let mut stub = read(&bin)?;
    stub.resize(stub.len().div_ceil(32) * 32, 0);
    Ok(stub)
}

/// A stub (or why it could not be built) by address and cross compiler.
type StubMap = BTreeMap<(String, String), Result<Arc<Vec<u8>>, String>>;

/// Relocation stubs by address and compiler, each built once.
#[derive(Default)]
pub struct Stubs {
    built: Mutex<StubMap>,
}

impl Stubs {
    /// The stub for `addr`, built on first use ([`relocate_stub`]).
    pub fn get(
        &self,
        recipe: &DeviceRecipe,
        tree: &KernelTree<'_>,
        addr: &str,
        work: &Path,
    ) -> Result<Arc<Vec<u8>>> {
        let key = (addr.to_string(), tree.cross_compile.to_string());
        let mut built = self
            .built
            .lock()
            .map_err(|_| anyhow::anyhow!("stub cache"))?;
        let entry = built.entry(key).or_insert_with(|| {
            relocate_stub(recipe, tree, addr, work)
                .map(Arc::new)
                .map_err(|e| format!("{e:#}"))
        });
        entry.clone().map_err(|e| anyhow::anyhow!("{e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relocate_writes_stub_size_and_image() {
        let out = relocate(&[1; 32], &[9, 8, 7]).unwrap();
        assert_eq!(out.len(), 32 + 4 + 3);
        assert_eq!(&out[32..36], &3u32.to_le_bytes());
        assert_eq!(&out[36..], &[9, 8, 7]);
        assert_eq!(collapse_make("a \\\n\tb   c"), "a b c");
    }
}
