//! Device fit: every device's kernel image of a target made from one built
//! kernel, each with its own recipe, without the kernel's make.
//!
//! Per device ([`fit_all`]): the recipe is checked as for one device
//! ([`super::check`]); its `DEVICE_DTS` compiled ([`super::dtb`], in
//! parallel); the steps run in order on the image, as [`super::steps`]
//! runs them, with two shortcuts that give the same bytes or size:
//!
//! * `lzma` (and `lzma-no-dict`, `lzma-d16`) of `$(KERNEL_NAME)` followed by
//!   appended DTBs: one encoder per kernel and parameters has consumed the
//!   kernel, each device finishes a copy ([`super::lzma_prefix`]);
//! * a final `uImage`: mkimage's legacy header (`image_header_t`) is 64
//!   bytes before the data, so the image is 64 bytes more than its input
//!   (a test compares with mkimage's file);
//! * `relocate-kernel` right after `kernel-bin`: the stub is built once per
//!   address ([`super::loader::Stubs`]) and stub + kernel is a kernel input
//!   of its own, which the shared LZMA encoder then takes;
//! * `loader-kernel` followed only by a final `uImage`: the checkout's
//!   lzma-loader is built once per parameter set, with the first such
//!   device's data; when that build shows the loader is its code followed
//!   by the data ([`super::loader::LoaderBuild::data_offset`]), every other
//!   device's loader is as long as the code plus its own data (a test
//!   compares with the loader built for that device). Otherwise, and
//!   whenever a step that reads the bytes follows, the loader is built for
//!   the device.
//!
//! Every other step runs as [`super::steps::run`] does on a file. A device
//! whose recipe cannot be evaluated or made is an entry with the reason.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use xshell::Shell;

use super::device_trees::{compile_dtbs, firmware_limit, first_dtb};
use super::loader::{self, LoaderParams, Stubs};
use super::parallel::in_parallel;
use super::tree::KernelTree;
use super::{kernel_input, lzma_prefix::PrefixEncoder, steps};
use crate::inputs::openwrt::image::devices::DeviceEntry;
use crate::inputs::openwrt::image::limits;
use crate::inputs::openwrt::image::DeviceRecipe;
use crate::results::device_fit::{self, DeviceFit, DeviceFitRecord};
use crate::results::LzmaRecord;

/// mkimage's legacy image header, bytes (u-boot `image_header_t`).
pub const UIMAGE_HEADER_BYTES: u64 = 64;

/// An image on its way through a recipe.
enum Payload {
    /// `$(KERNEL_NAME)` (by name) followed by `tail`.
    Kernel { name: String, tail: Vec<u8> },
    /// Plain bytes.
    Bytes(Vec<u8>),
}

/// A device waiting for the shared LZMA encoder: its payload's tail and
/// the steps after the `lzma` step.
struct Pending {
    index: usize,
    tail: Vec<u8>,
    rest: usize,
}

/// Makes every device's kernel image of `entries` from `tree` in `kdir`
/// (scratch files) with at most `jobs` processes at a time, and returns
/// the record ([`DeviceFitRecord`], `vmlinux_sha256` and target filled in
/// by the caller's values).
///
/// Errors only when nothing can be made (the kernel cannot be read);
/// a device that fails is an entry with its error.
pub fn fit_all(
    entries: &[DeviceEntry],
    tree: &KernelTree<'_>,
    kdir: &Path,
    jobs: usize,
    openwrt_target: &str,
) -> Result<DeviceFitRecord> {
    let start = Instant::now();
    std::fs::create_dir_all(kdir).with_context(|| format!("creating {}", kdir.display()))?;
    let sh = Shell::new().context("starting a shell")?;
    let mut fits: Vec<DeviceFit> = entries.iter().map(initial_fit).collect();
    let recipes: Vec<Option<&DeviceRecipe>> = entries
        .iter()
        .zip(&fits)
        .map(|(e, f)| match (&e.evaluated, &f.error) {
            (Ok((r, _)), None) => Some(r),
            _ => None,
        })
        .collect();

    // The kernel inputs, one per KERNEL_NAME.
    let mut kernels = kernel_inputs(&sh, &recipes, tree, kdir);

    // Device trees, in parallel; a device without a limit in the
    // Makefile takes its firmware partition's.
    let dtbs = compile_dtbs(&recipes, tree, kdir, jobs);
    for (fit, dtbs) in fits.iter_mut().zip(&dtbs) {
        fit.limits.firmware_partition = firmware_limit(&fit.limits, dtbs);
    }

    // Steps up to the shared LZMA.
    let stubs = Stubs::default();
    let loaders = Loaders::default();
    let mut payloads: Vec<Option<Payload>> = Vec::with_capacity(recipes.len());
    let mut pending: BTreeMap<(String, LzmaKey), Vec<Pending>> = BTreeMap::new();
    for (i, r) in recipes.iter().enumerate() {
        let Some(r) = r else {
            payloads.push(None);
            continue;
        };
        let run = (|| -> Result<Option<Payload>> {
            if let Err(e) = &dtbs[i] {
                anyhow::bail!("{e}");
            }
            let mut payload = None;
            for (n, step) in r.steps.iter().enumerate() {
                payload = Some(match (step.name.as_str(), payload.take()) {
                    ("kernel-bin", _) => {
                        if let Err(e) = &kernels[&r.kernel_name] {
                            anyhow::bail!("{e}");
                        }
                        Payload::Kernel {
                            name: r.kernel_name.clone(),
                            tail: Vec::new(),
                        }
                    }
                    ("relocate-kernel", Some(Payload::Kernel { name, tail }))
                        if tail.is_empty() =>
                    {
                        let name = relocated(&mut kernels, &stubs, (r, step), tree, kdir, &name)?;
                        Payload::Kernel { name, tail }
                    }
                    ("append-dtb", Some(Payload::Kernel { name, mut tail })) => {
                        tail.extend_from_slice(first_dtb(r, &dtbs[i])?);
                        Payload::Kernel { name, tail }
                    }
                    (_, Some(Payload::Kernel { name, tail }))
                        if steps::lzma_arguments(step).is_some() =>
                    {
                        let args = steps::lzma_arguments(step).unwrap_or_default();
                        let params = steps::lzma_parameters(&args)?;
                        pending
                            .entry((name, LzmaKey(params)))
                            .or_default()
                            .push(Pending {
                                index: i,
                                tail,
                                rest: n + 1,
                            });
                        return Ok(None);
                    }
                    (_, p) => {
                        let bytes = match p {
                            None => Vec::new(),
                            Some(Payload::Bytes(b)) => b,
                            Some(Payload::Kernel { name, tail }) => {
                                let mut b = kernels[&name]
                                    .as_ref()
                                    .map_err(|e| anyhow::anyhow!("{e}"))?
                                    .to_vec();
                                b.extend_from_slice(&tail);
                                b
                            }
                        };
                        Payload::Bytes(run_step(&sh, r, tree, kdir, step, bytes)?)
                    }
                });
            }
            Ok(payload)
        })();
        match run {
            Ok(p) => payloads.push(p),
            Err(e) => {
                fits[i].error = Some(format!("{e:#}"));
                payloads.push(None);
            }
        }
    }
    for (i, p) in payloads.into_iter().enumerate() {
        if let Some(p) = p {
            fits[i].kernel_bytes = Some(match p {
                Payload::Bytes(b) => b.len() as u64,
                Payload::Kernel { name, tail } => {
                    kernels[&name].as_ref().map_or(0, |k| k.len()) as u64 + tail.len() as u64
                }
            });
        }
    }

    // The shared LZMA encoders, then the steps after them.
    let lzma_sdk_error = shared_lzma(
        pending,
        &kernels,
        (&recipes, &mut fits),
        (tree, kdir, jobs),
        &loaders,
    );
    Ok(DeviceFitRecord {
        schema: crate::results::device_fit::SCHEMA,
        vmlinux_sha256: String::new(),
        openwrt_target: openwrt_target.to_string(),
        seconds: start.elapsed().as_secs_f64(),
        devices: fits,
        lzma_sdk_error,
    })
}

/// The kernel input `name` behind `recipe`'s relocation stub for `step`'s
/// address, made once per address and kept in `kernels` under its own
/// name (`vmlinux | relocate-kernel 0x80060000`), which is returned.
///
/// Errors: no address, the stub cannot be built, `name` could not be made.
fn relocated(
    kernels: &mut Kernels,
    stubs: &Stubs,
    (recipe, step): (
        &DeviceRecipe,
        &crate::inputs::openwrt::image::KernelRecipeStep,
    ),
    tree: &KernelTree<'_>,
    kdir: &Path,
    name: &str,
) -> Result<String> {
    let addr = loader::relocate_address(recipe, step)?;
    let derived = format!("{name} | relocate-kernel {addr}");
    if !kernels.contains_key(&derived) {
        let work = kdir.join("relocate");
        let made = stubs
            .get(recipe, tree, &addr, &work)
            .and_then(|stub| {
                let kernel = kernels[name].as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
                loader::relocate(&stub, kernel)
            })
            .map(Arc::new)
            .map_err(|e| format!("{e:#}"));
        kernels.insert(derived.clone(), made);
    }
    if let Err(e) = &kernels[&derived] {
        anyhow::bail!("{e}");
    }
    Ok(derived)
}

/// `e`'s record before anything is made: its recipe, the check's
/// error, its limits, block size and image recipes; or why make could not
/// evaluate it.
fn initial_fit(e: &DeviceEntry) -> DeviceFit {
    match &e.evaluated {
        Ok((r, l)) => {
            let (blocksize, images) = super::image_recipes::image_recipes(r);
            DeviceFit {
                device: e.device.clone(),
                recipe: Some(r.recipe()),
                kernel_bytes: None,
                error: super::check(r, std::slice::from_ref(&r.kernel_name))
                    .err()
                    .map(|e| format!("{e:#}")),
                limits: record_limits(l),
                blocksize,
                images,
                lzma_margin: None,
            }
        }
        Err(why) => DeviceFit {
            device: e.device.clone(),
            recipe: None,
            kernel_bytes: None,
            error: Some(format!("make could not evaluate its recipe: {why}")),
            limits: Default::default(),
            blocksize: None,
            images: Vec::new(),
            lzma_margin: None,
        },
    }
}

/// Each `KERNEL_NAME` of `recipes` made once ([`kernel_input`]), read,
/// or why it could not be.
fn kernel_inputs(
    sh: &Shell,
    recipes: &[Option<&DeviceRecipe>],
    tree: &KernelTree<'_>,
    kdir: &Path,
) -> Kernels {
    let mut kernels: Kernels = BTreeMap::new();
    for r in recipes.iter().flatten() {
        if kernels.contains_key(&r.kernel_name) {
            continue;
        }
        let made = kernel_input(sh, r, tree, kdir)
            .and_then(|p| read(&p))
            .map(Arc::new)
            .map_err(|e| format!("{e:#}"));
        kernels.insert(r.kernel_name.clone(), made);
    }
    kernels
}

/// Kernel inputs by name (`vmlinux`, `vmlinux | relocate-kernel 0x…`).
type Kernels = BTreeMap<String, Result<Arc<Vec<u8>>, String>>;

/// Each kernel and LZMA parameter set of `pending` encoded once, each
/// waiting device finishing a copy ([`PrefixEncoder`]), then the steps
/// after its LZMA, `jobs` devices at a time; sizes, errors and the LZMA SDK
/// margin go into `fits`. Returns why the LZMA SDK encoder could not run,
/// if it could not.
fn shared_lzma(
    pending: BTreeMap<(String, LzmaKey), Vec<Pending>>,
    kernels: &Kernels,
    (recipes, fits): (&[Option<&DeviceRecipe>], &mut [DeviceFit]),
    (tree, kdir, jobs): (&KernelTree<'_>, &Path, usize),
    loaders: &Loaders,
) -> Option<String> {
    let mut lzma_sdk_error = None;
    for ((name, LzmaKey(params)), waiting) in pending {
        let kernel = match &kernels[&name] {
            Ok(k) => k.clone(),
            Err(e) => {
                for w in &waiting {
                    fits[w.index].error = Some(e.clone());
                }
                continue;
            }
        };
        let mut encoder = match PrefixEncoder::new(&kernel, &params) {
            Ok(e) => e,
            Err(e) => {
                for w in &waiting {
                    fits[w.index].error = Some(format!("{e:#}"));
                }
                continue;
            }
        };
        let tails: Vec<&[u8]> = waiting.iter().map(|w| w.tail.as_slice()).collect();
        let streams = encoder.finish_each(&tails, jobs);
        // The LZMA SDK encoder on the first device's input: how far
        // liblzma's stream is from OpenWrt's, for every device of the key.
        if let (Some(w), Some(Ok(ours))) = (waiting.first(), streams.first()) {
            let input = [kernel.as_slice(), &w.tail].concat();
            match super::lzma_sdk::sdk_length(&input, &params, kdir) {
                Ok(sdk) => {
                    for w in &waiting {
                        fits[w.index].lzma_margin = Some(sdk as i64 - ours.len() as i64);
                    }
                }
                Err(e) => lzma_sdk_error = Some(format!("{e:#}")),
            }
        }
        // The steps after the LZMA (a loader, a second LZMA: a second or
        // more for some devices), `jobs` devices at a time.
        let work: Vec<(&Pending, Result<Vec<u8>>)> = waiting.iter().zip(streams).collect();
        let done = in_parallel(work, jobs, |sh, (w, stream)| {
            let r = recipes[w.index].expect("pending devices have recipes");
            finish(sh, r, tree, kdir, w.rest, stream?, loaders)
        });
        for (w, done) in waiting.iter().zip(done) {
            match done {
                Ok(size) => fits[w.index].kernel_bytes = Some(size),
                Err(e) => fits[w.index].error = Some(format!("{e:#}")),
            }
        }
    }
    lzma_sdk_error
}

/// The limits as `device-fit.json` records them.
pub fn record_limits(l: &limits::MakefileLimits) -> device_fit::DeviceLimits {
    let limit = |l: &Option<limits::MakefileLimit>| {
        l.as_ref().map(|l| device_fit::Limit {
            text: l.text.clone(),
            bytes: l.bytes,
        })
    };
    device_fit::DeviceLimits {
        kernel_size: limit(&l.kernel_size),
        image_size: limit(&l.image_size),
        image_size_checks: l.image_size_checks.clone(),
        firmware_partition: None,
        default_n: l.default_n,
        broken: l.broken,
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    crate::util::fs::read_bytes_limited(path, crate::util::fs::FileLimit::binary("image"), "")
}

/// LZMA parameters as a map key.
#[derive(PartialEq, Eq)]
struct LzmaKey(LzmaRecord);

impl PartialOrd for LzmaKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for LzmaKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let k = |p: &LzmaRecord| (p.lc, p.lp, p.pb, p.dict_size);
        k(&self.0).cmp(&k(&other.0))
    }
}

/// The lzma-loader's data offset per parameter set (see the module docs),
/// `None` when the loader is not its code followed by the data.
#[derive(Default)]
struct Loaders {
    /// Behind a lock held while a loader builds: the devices' steps run
    /// side by side ([`in_parallel`]), and one build serves them all.
    built: Mutex<BTreeMap<LoaderParams, Result<Option<u64>, String>>>,
}

impl Loaders {
    /// The offset for `recipe`'s parameters, building the loader with
    /// `data` the first time.
    fn offset(
        &self,
        sh: &Shell,
        recipe: &DeviceRecipe,
        tree: &KernelTree<'_>,
        kdir: &Path,
        data: &[u8],
    ) -> Result<Option<u64>> {
        let params = LoaderParams::of(recipe, tree)?;
        self.built
            .lock()
            .map_err(|_| anyhow::anyhow!("a thread building a loader panicked"))?
            .entry(params)
            .or_insert_with(|| {
                loader::lzma_loader(sh, recipe, tree, data, &kdir.join("lzma-loader"))
                    .map(|b| b.data_offset)
                    .map_err(|e| format!("{e:#}"))
            })
            .clone()
            .map_err(|e| anyhow::anyhow!("{e}"))
    }
}

/// The steps of `recipe` from `from` on `bytes`: the image's size.
fn finish(
    sh: &Shell,
    recipe: &DeviceRecipe,
    tree: &KernelTree<'_>,
    kdir: &Path,
    from: usize,
    mut bytes: Vec<u8>,
    loaders: &Loaders,
) -> Result<u64> {
    let steps = &recipe.steps[from..];
    for (n, step) in steps.iter().enumerate() {
        let rest = &steps[n + 1..];
        if step.name == "loader-kernel" && rest.len() == 1 && rest[0].name == "uImage" {
            let offset = loaders
                .offset(sh, recipe, tree, kdir, &bytes)
                .with_context(|| format!("KERNEL step `{step}` ({})", recipe.origin_text()))?;
            if let Some(offset) = offset {
                steps::uimage_command(&context(recipe, tree, kdir, kdir), &rest[0], kdir, kdir)?;
                return Ok(offset + bytes.len() as u64 + UIMAGE_HEADER_BYTES);
            }
        }
        if step.name == "uImage" && n + 1 == steps.len() {
            // The data after the 64-byte header (see the module docs).
            steps::uimage_command(&context(recipe, tree, kdir, kdir), step, kdir, kdir)?;
            return Ok(bytes.len() as u64 + UIMAGE_HEADER_BYTES);
        }
        bytes = run_step(sh, recipe, tree, kdir, step, bytes)?;
    }
    Ok(bytes.len() as u64)
}

fn context<'a>(
    recipe: &'a DeviceRecipe,
    tree: &'a KernelTree<'a>,
    kdir: &'a Path,
    input: &'a Path,
) -> steps::StepContext<'a> {
    steps::StepContext {
        recipe,
        kdir,
        input,
        karch: tree.karch,
        linux_version: tree.linux_version,
        tree,
    }
}

/// One step on `bytes` through a file, as [`steps::run`] does it.
fn run_step(
    sh: &Shell,
    recipe: &DeviceRecipe,
    tree: &KernelTree<'_>,
    kdir: &Path,
    step: &crate::inputs::openwrt::image::KernelRecipeStep,
    bytes: Vec<u8>,
) -> Result<Vec<u8>> {
    let dir = kdir.join("devices").join(&recipe.device);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let image = dir.join(super::artifact_name(&recipe.device));
    std::fs::write(&image, &bytes).with_context(|| format!("writing {}", image.display()))?;
    let input = kdir.join(&recipe.kernel_name);
    let mut ctx = context(recipe, tree, &dir, &input);
    ctx.kdir = &dir;
    steps::run(sh, &ctx, step, &image)
        .with_context(|| format!("KERNEL step `{step}` ({})", recipe.origin_text()))?;
    read(&image)
}
