//! Which builds are comparable: a base and a variant of one target must
//! share everything the variant is not about ([`mismatches`]):
//!
//! * OpenWrt target and ARCH (a target file edited between the builds);
//! * kernel version, and the kernel source: the tarball's sha256, or, for an
//!   unpacked tree (no sha256 recorded), its path;
//! * the compiler (first line of `gcc --version`);
//! * the final `.config` (sha256). A variant with `kconfig` lines (recorded
//!   in its `result.json` from `patches/variants.toml`) changes the config on
//!   purpose, so when the base or the variant recorded kconfig lines a config
//!   difference is expected and only noted. When the optimization levels
//!   differ (the last `-O` of each side's flags in effect, else its
//!   `.config`'s branch: `baseline-os` against `no-reorder-blocks`), the
//!   first note says so, naming both;
//! * the patches both builds applied under the same name (same sha256),
//!   except the generated `201-extra_optimization.patch`, which carries the
//!   variant's flags. A patch applied to only one side must be one of that
//!   side's own recorded `patches`.
//!
//! Everything is read from the two `result.json` files; nothing here looks
//! at `targets/` or `variants.toml`, which may have changed since.

use std::collections::BTreeMap;

use crate::results::BuildResult;

fn short(sha: &str) -> &str {
    crate::util::text::prefix(sha, 12)
}

/// Differences between `base` and `variant` other than what the variant
/// is about: (problems, notes). See the module docs for the rules; each
/// side's own kconfig lines and patches are those its `result.json`
/// recorded when it was built.
pub fn mismatches(base: &BuildResult, variant: &BuildResult) -> (Vec<String>, Vec<String>) {
    let (b, v) = (&base.variant.name, &variant.variant.name);
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let mut same = |what: &str, x: &str, y: &str| {
        if x != y {
            problems.push(format!("{what}: {b} has {x}, {v} has {y}"));
        }
    };
    same("target", &base.target.name, &variant.target.name);
    same(
        "OpenWrt target",
        &base.target.openwrt,
        &variant.target.openwrt,
    );
    same("ARCH", &base.target.arch, &variant.target.arch);
    same(
        "kernel version",
        &base.kernel_source.version,
        &variant.kernel_source.version,
    );
    match (&base.kernel_source.sha256, &variant.kernel_source.sha256) {
        (Some(x), Some(y)) => {
            if x != y {
                same(
                    "kernel source sha256",
                    &format!("{x} ({})", base.kernel_source.origin),
                    &format!("{y} ({})", variant.kernel_source.origin),
                );
            }
        }
        (x, y) => same(
            "kernel source",
            &format!(
                "{}{}",
                base.kernel_source.origin,
                x.as_ref().map_or(" (a tree)".to_string(), |s| format!(
                    " (sha256 {})",
                    short(s)
                ))
            ),
            &format!(
                "{}{}",
                variant.kernel_source.origin,
                y.as_ref().map_or(" (a tree)".to_string(), |s| format!(
                    " (sha256 {})",
                    short(s)
                ))
            ),
        ),
    }
    same("compiler", &base.compiler, &variant.compiler);
    let lzma = |r: &BuildResult| {
        r.lzma
            .map_or("not recorded (a 1 MiB dictionary)".to_string(), |l| {
                format!(
                    "lc{} lp{} pb{}, {}-byte dictionary",
                    l.lc, l.lp, l.pb, l.dict_size
                )
            })
    };
    same("LZMA parameters", &lzma(base), &lzma(variant));

    let (lb, lv) = (base.kbuild_cflags.level(), variant.kbuild_cflags.level());
    let levels = (lb != lv).then(|| {
        format!(
            "{b} is built {lb} and {v} {lv} (the -O each compiler was given): the change is the two optimization levels', not only the variants' flags"
        )
    });
    if base.config_sha256 == variant.config_sha256 {
        // Flags that change the level (an `os` branch of `-O2 …`).
        notes.extend(levels);
    } else {
        let (kb, kv) = (&base.variant.kconfig, &variant.variant.kconfig);
        if kb.is_empty() && kv.is_empty() {
            problems.push(format!(
                ".config: {b} has sha256 {}, {v} has {}, and neither variant adds kconfig lines in variants.toml{}",
                short(&base.config_sha256),
                short(&variant.config_sha256),
                levels.as_ref().map_or(String::new(), |l| format!("; {l}"))
            ));
        } else {
            notes.extend(levels);
            let mut who = Vec::new();
            if !kb.is_empty() {
                who.push(format!("{b} sets {}", kb.join(", ")));
            }
            if !kv.is_empty() {
                who.push(format!("{v} sets {}", kv.join(", ")));
            }
            notes.push(format!(".config differs as intended: {}", who.join("; ")));
        }
    }

    let is_flags_patch = |name: &str| {
        name.rsplit('/').next() == Some(crate::patches::extra_optimization::PATCH_NAME)
    };
    let patches_of = |r: &BuildResult| -> BTreeMap<String, String> {
        r.patches
            .iter()
            .map(|p| (p.name.clone(), p.sha256.clone()))
            .collect()
    };
    let own_patches = |r: &BuildResult| -> Vec<String> {
        r.variant.patches.iter().map(|p| p.name.clone()).collect()
    };
    let (pb, pv) = (patches_of(base), patches_of(variant));
    for (name, sha) in &pb {
        if is_flags_patch(name) {
            continue;
        }
        match pv.get(name) {
            Some(other) if other != sha => problems.push(format!(
                "patch {name}: {b} applied sha256 {}, {v} applied {}",
                short(sha),
                short(other)
            )),
            Some(_) => {}
            None if !own_patches(base).contains(name) => problems.push(format!(
                "patch {name}: applied to {b} only, and variants.toml does not list it for {b}"
            )),
            None => {}
        }
    }
    for name in pv.keys() {
        if !is_flags_patch(name) && !pb.contains_key(name) && !own_patches(variant).contains(name) {
            problems.push(format!(
                "patch {name}: applied to {v} only, and variants.toml does not list it for {v}"
            ));
        }
    }
    (problems, notes)
}
