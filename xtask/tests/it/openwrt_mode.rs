//! OpenWrt mode against the OpenWrt fixture (a snapshot of OpenWrt's main
//! branch, unpacked into a temporary directory): the expected values come
//! from OpenWrt's own files run by the real tools, not from our code:
//!
//! * (a) the merged kernel config equals what the fixture's
//!   `scripts/kconfig.pl` prints, run with the arguments GNU make computes
//!   from the fixture's include/target.mk, for every target/subtarget and
//!   kernel version;
//! * (b) the patch order and overlay files equal what bash computes with
//!   include/quilt.mk's `PatchDir/Default` and scripts/patch-kernel.sh's
//!   loop over the directories make computes from include/target.mk and
//!   include/kernel.mk;
//! * (d) KCFLAGS equal include/kernel.mk's expression evaluated by make.
//!
//! Test (c), the series on Debian's 6.12, is in `openwrt_point_release.rs`.

use crate::common::openwrt_fixture;

use std::path::{Path, PathBuf};

use openwrt_fixture::{make_eval, Fixture};
use xshell::{cmd, Shell};
use xtask::inputs::openwrt::optimization::{self, Level};
use xtask::inputs::openwrt::{flags, kconfig, series, Checkout, OpenwrtTarget};

/// Lines of `file` that start (after leading white space) with one of `prefixes`.
fn lines_starting(file: &Path, prefixes: &[&str]) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        if prefixes.iter().any(|p| line.trim_start().starts_with(p)) {
            out.push_str(line.trim_start());
            out.push('\n');
        }
    }
    out
}

/// Every (target, kernel) of the fixture with a generic config for that kernel.
fn all_targets(checkout: &Checkout) -> Vec<(OpenwrtTarget, String)> {
    let mut all = Vec::new();
    for board in checkout.boards().unwrap() {
        let versions = checkout.kernel_versions(&board).unwrap();
        for kver in versions.all() {
            if !checkout
                .generic_dir()
                .join(format!("config-{kver}"))
                .is_file()
            {
                continue;
            }
            let subs = checkout.subtargets(&board).unwrap();
            let subs: Vec<Option<String>> = if subs.is_empty() {
                vec![None]
            } else {
                subs.into_iter().map(Some).collect()
            };
            for subtarget in subs {
                let target = OpenwrtTarget {
                    board: board.clone(),
                    subtarget,
                };
                all.push((target, kver.clone()));
            }
        }
    }
    all
}

/// make's variables for one target, as include/target.mk sets them.
fn target_vars(checkout: &Checkout, target: &OpenwrtTarget, kver: &str) -> Vec<(String, String)> {
    let root = checkout.root().display().to_string();
    let platform = checkout.board_dir(&target.board).display().to_string();
    let subdir = target
        .subtarget_dir(checkout)
        .map_or(platform.clone(), |d| d.display().to_string());
    vec![
        ("TOPDIR".into(), root.clone()),
        ("SCRIPT_DIR".into(), format!("{root}/scripts")),
        (
            "GENERIC_PLATFORM_DIR".into(),
            format!("{root}/target/linux/generic"),
        ),
        ("PLATFORM_DIR".into(), platform),
        ("PLATFORM_SUBDIR".into(), subdir),
        ("KERNEL_PATCHVER".into(), kver.into()),
    ]
}

#[test]
fn merged_config_is_kconfig_pl_output_for_every_target() {
    let Some(fx) = Fixture::unpack() else { return };
    let sh = Shell::new().unwrap();
    let checkout = Checkout::open(&fx.root).unwrap();
    let rules = lines_starting(
        &fx.root.join("include/target.mk"),
        &[
            "__config_name_list",
            "__config_list",
            "find_kernel_config",
            "GENERIC_LINUX_CONFIG",
            "LINUX_TARGET_CONFIG",
            "LINUX_SUBTARGET_CONFIG",
            "LINUX_KCONFIG_LIST",
            "__linux_confcmd",
            "LINUX_CONF_CMD",
        ],
    );
    let mut checked = Vec::new();
    for (target, kver) in all_targets(&checkout) {
        let vars = target_vars(&checkout, &target, &kver);
        let conf_cmd = make_eval(&sh, &fx.dir(), &rules, &vars, "$(LINUX_CONF_CMD)", None);
        let mut words = conf_cmd.split_whitespace();
        let script = PathBuf::from(words.next().expect("LINUX_CONF_CMD is empty"));
        let args: Vec<String> = words.map(str::to_string).collect();
        let files = kconfig::config_files(&checkout, &target, &kver);
        let ours_args: Vec<String> = kconfig::kconfig_pl_args(&files)
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(ours_args, args, "{target} {kver}: files or order differ");
        let theirs = cmd!(sh, "perl {script} {args...}")
            .quiet()
            .output()
            .unwrap()
            .stdout;
        let ours = kconfig::merge_files(&files).unwrap().render();
        if ours != theirs {
            let (o, t) = (
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs),
            );
            let first = o.lines().zip(t.lines()).position(|(a, b)| a != b);
            panic!(
                "{target} {kver}: differs from kconfig.pl at line {first:?} ({} vs {} bytes)",
                ours.len(),
                theirs.len()
            );
        }
        checked.push(format!("{target} {kver} ({} files)", files.len()));
    }
    eprintln!(
        "kconfig.pl agrees on {} targets:\n  {}",
        checked.len(),
        checked.join("\n  ")
    );
    for want in [
        "ramips/mt7621 6.12 (2 files)",
        "ramips/mt7620 6.12 (2 files)",
        "ath79/generic 6.6 (3 files)",
        "ath79/nand 6.12 (3 files)",
        "malta/be64 6.12 (3 files)",
        "armsr/armv8 6.12 (3 files)",
        "bcm53xx/generic 6.6 (2 files)",
        "bcm47xx/mips74k 6.6 (3 files)",
        "bcm47xx/generic 6.6 (2 files)",
    ] {
        assert!(checked.iter().any(|c| c == want), "{want} not checked");
    }
    assert_eq!(checked.len(), 24);
}

/// `PatchDir/Default` of include/quilt.mk with scripts/patch-kernel.sh's
/// loop, printing each patch file instead of applying it.
const PATCH_DIR_SH: &str = r#"
export LC_ALL=C
dir="$1"; prefix="$2"
if [ -d "$dir" ] && [ "$(ls "$dir" | wc -l)" -gt 0 ]; then
    if [ -s "$dir/series" ]; then
        for p in $(sed -e 's,\#.*,,' "$dir/series" | grep -E '[a-zA-Z0-9]'); do
            echo "$prefix$p"
        done
    else
        for i in "$dir"/*; do
            [ -d "$i" ] && continue
            echo "$prefix${i##*/}"
        done
    fi
fi
"#;

#[test]
fn series_order_and_overlays_follow_openwrt_rules() {
    let Some(fx) = Fixture::unpack() else { return };
    let sh = Shell::new().unwrap();
    let checkout = Checkout::open(&fx.root).unwrap();
    let script = fx.dir().join("patchdir.sh");
    std::fs::write(&script, PATCH_DIR_SH).unwrap();
    let mut rules = lines_starting(
        &fx.root.join("include/target.mk"),
        &[
            "GENERIC_BACKPORT_DIR",
            "GENERIC_PATCH_DIR",
            "GENERIC_HACK_DIR",
            "GENERIC_FILES_DIR",
        ],
    );
    rules += &lines_starting(
        &fx.root.join("include/kernel.mk"),
        &["PATCH_DIR ?=", "FILES_DIR ?="],
    );
    let mut checked = 0;
    for (target, kver) in all_targets(&checkout) {
        if target.subtarget != checkout.subtargets(&target.board).unwrap().first().cloned() {
            continue; // the series is the board's: once per board is enough
        }
        let vars = target_vars(&checkout, &target, &kver);
        let board_dir = checkout.board_dir(&target.board);
        let eval = |expr: &str| make_eval(&sh, &fx.dir(), &rules, &vars, expr, Some(&board_dir));
        let mut want = Vec::new();
        for (var, prefix) in [
            ("GENERIC_BACKPORT_DIR", "generic-backport/"),
            ("GENERIC_PATCH_DIR", "generic/"),
            ("GENERIC_HACK_DIR", "generic-hack/"),
            ("PATCH_DIR", "platform/"),
        ] {
            let dir = eval(&format!("$({var})"));
            let out = cmd!(sh, "bash {script} {dir} {prefix}").read().unwrap();
            want.extend(out.lines().map(str::to_string));
        }
        let got: Vec<String> = series::series(&checkout, &target.board, &kver)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(got, want, "{} {kver}: series order", target.board);
        assert!(
            got.len() > 100,
            "{} {kver}: only {} patches",
            target.board,
            got.len()
        );

        let dirs: Vec<String> = eval("$(GENERIC_FILES_DIR) $(FILES_DIR)")
            .split_whitespace()
            .map(|d| d.trim_matches('"').to_string())
            .collect();
        let ours_dirs: Vec<String> = series::overlay_dirs(&checkout, &target.board, &kver)
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        assert_eq!(
            ours_dirs, dirs,
            "{} {kver}: overlay directories",
            target.board
        );
        let mut want_files: Vec<String> = Vec::new();
        for d in &dirs {
            let out = cmd!(
                sh,
                "find {d} -mindepth 1 ( -type f -o -type l ) -printf %P\\n"
            )
            .read()
            .unwrap();
            want_files.extend(out.lines().map(str::to_string));
        }
        want_files.sort();
        want_files.dedup();
        let got_files: Vec<String> =
            series::overlay_files(&series::overlay_dirs(&checkout, &target.board, &kver))
                .unwrap()
                .keys()
                .map(|p| p.display().to_string())
                .collect();
        assert_eq!(
            got_files, want_files,
            "{} {kver}: overlay files",
            target.board
        );
        checked += 1;
    }
    assert_eq!(checked, 7, "boards × kernels checked");
}

#[test]
fn kcflags_are_kernel_mk_s_expression() {
    let Some(fx) = Fixture::unpack() else { return };
    let sh = Shell::new().unwrap();
    let kernel_mk = std::fs::read_to_string(fx.root.join("include/kernel.mk")).unwrap();
    let line = kernel_mk
        .lines()
        .find(|l| l.trim_start().starts_with("KCFLAGS=\""))
        .expect("include/kernel.mk has KCFLAGS=\"…\"");
    let expr = line.trim_start().trim_start_matches("KCFLAGS=\"");
    let expr = &expr[..expr.rfind('"').unwrap()];
    let iremap = "$(call iremap,$(BUILD_DIR),$(notdir $(BUILD_DIR)))";
    assert!(expr.contains(iremap), "{expr}");
    let expr = expr.replace(iremap, "");
    // rules.mk's qstrip (rules.mk is not in the fixture).
    let rules = "qstrip=$(strip $(subst \",,$(1)))\n";
    let check = |checkout: &Checkout, spelling: &str, want: &[&str]| {
        let target = OpenwrtTarget::resolve(checkout, spelling).unwrap();
        let got = flags::kernel_flags(checkout, &target).unwrap();
        assert_eq!(got.kcflags, want, "{spelling}: {got:?}");
        let vars = vec![
            (
                "CONFIG_EXTRA_OPTIMIZATION".to_string(),
                format!("\"{}\"", got.extra_optimization.value),
            ),
            (
                "CONFIG_KERNEL_CFLAGS".to_string(),
                format!("\"{}\"", got.kernel_cflags.value),
            ),
        ];
        let by_make = make_eval(&sh, &fx.dir(), rules, &vars, &expr, None);
        assert_eq!(
            by_make.split_whitespace().collect::<Vec<_>>(),
            want,
            "{spelling}: make"
        );
        got
    };
    let checkout = Checkout::open(&fx.root).unwrap();
    let mt7621 = check(&checkout, "ramips/mt7621", &["-fno-caller-saves"]);
    assert_eq!(mt7621.filtered_out, ["-fno-plt"]);
    assert_eq!(
        mt7621.extra_optimization.origin,
        "config/Config-devel.in:210"
    );
    check(
        &checkout,
        "bcm53xx/generic",
        &["-fno-caller-saves", "-falign-functions=32"],
    );
    check(&checkout, "ath79/generic", &["-fno-caller-saves"]);
    // A configured checkout: .config wins.
    std::fs::write(
        fx.root.join(".config"),
        "CONFIG_TARGET_ramips=y\nCONFIG_EXTRA_OPTIMIZATION=\"-fno-caller-saves  -fno-plt -fno-ipa-sra\"\n\
         CONFIG_KERNEL_CFLAGS=\"-g0\"\n",
    )
    .unwrap();
    let configured = check(
        &checkout,
        "ramips/mt7621",
        &["-fno-caller-saves", "-fno-ipa-sra", "-g0"],
    );
    assert_eq!(configured.kernel_cflags.origin, ".config:3");
    std::fs::remove_file(fx.root.join(".config")).unwrap();
}

#[test]
fn workbench_targets_map_to_openwrt_targets() {
    let Some(fx) = Fixture::unpack() else { return };
    let layout = xtask::util::layout::Layout::from_manifest_dir();
    let checkout = Checkout::open(&fx.root).unwrap();
    let pick = |t: &str, k: Option<&str>| {
        let s = xtask::inputs::openwrt::select(&checkout, &layout.targets_dir(), t, k).unwrap();
        format!("{} {}", s.target, s.kernel)
    };
    assert_eq!(pick("ramips-mt7621", None), "ramips/mt7621 6.12");
    assert_eq!(pick("ar71xx", None), "ath79/generic 6.12");
    // targets/ath79-tiny.toml says 6.12, ath79's KERNEL_TESTING_PATCHVER.
    assert_eq!(pick("ath79/tiny", None), "ath79/tiny 6.12");
    assert_eq!(pick("ath79-tiny", None), "ath79/tiny 6.12");
    assert_eq!(pick("bcm53xx", None), "bcm53xx/generic 6.6");
    assert_eq!(pick("brcm47xx", None), "bcm47xx/mips74k 6.6");
    let err =
        xtask::inputs::openwrt::select(&checkout, &layout.targets_dir(), "bcm53xx", Some("6.12"))
            .unwrap_err()
            .to_string();
    assert!(err.contains("6.6"), "{err}");
    let err = OpenwrtTarget::resolve(&checkout, "ramips")
        .unwrap_err()
        .to_string();
    assert!(err.contains("ramips/mt7621"), "{err}");
}

/// The quoted text of `echo "…" >> $(LINUX_DIR)/<file>` lines of
/// include/kernel-defaults.mk, in order.
fn echoed_into(kernel_defaults: &str, file: &str) -> String {
    let mut out = String::new();
    for line in kernel_defaults.lines().map(str::trim) {
        if line.starts_with("echo ") && line.ends_with(&format!("$(LINUX_DIR)/{file}")) {
            let quote = line[5..].chars().next().unwrap();
            let body = &line[6..];
            out.push_str(&body[..body.rfind(quote).unwrap()]);
            out.push('\n');
        }
    }
    out
}

#[test]
fn kernel_dot_config_is_kernel_defaults_mk_s_steps() {
    let Some(fx) = Fixture::unpack() else { return };
    let sh = Shell::new().unwrap();
    let checkout = Checkout::open(&fx.root).unwrap();
    let defaults = std::fs::read_to_string(fx.root.join("include/kernel-defaults.mk")).unwrap();
    let awk_line = defaults
        .lines()
        .find(|l| l.trim_start().starts_with("awk '"))
        .unwrap();
    let awk_program = awk_line.split('\'').nth(1).unwrap().to_string();
    let target_echoes = echoed_into(&defaults, ".config.target");
    let set_echoes = echoed_into(&defaults, ".config.set");
    assert_eq!(target_echoes.lines().count(), 3, "{target_echoes}");
    assert_eq!(set_echoes.lines().count(), 3, "{set_echoes}");
    let scratch = fx.dir();
    let kconfig_pl = fx.root.join("scripts/kconfig.pl");
    let top = fx.root.join(".config");
    let dot_config =
        "CONFIG_TARGET_ramips=y\nCONFIG_KERNEL_SWAP=y\n# CONFIG_KERNEL_KALLSYMS is not set\n\
         #\tCONFIG_KERNEL_DEBUG_FS is not set\nCONFIG_KERNEL_CGROUPS=y\nCONFIG_KERNELVERSION=x\n";
    // ath79/tiny is a small-flash subtarget: the only one of the four
    // whose level (-Os) is not the generic config's.
    for spelling in [
        "ramips/mt7621",
        "ath79/generic",
        "bcm53xx/generic",
        "ath79/tiny",
    ] {
        let target = OpenwrtTarget::resolve(&checkout, spelling).unwrap();
        let kver = checkout.kernel_versions(&target.board).unwrap().default;
        let files = kconfig::config_files(&checkout, &target, &kver);
        let args = kconfig::kconfig_pl_args(&files);
        // The reference: the `.config` as `make defconfig` completes it,
        // with the choice of config/Config-kernel.in in OpenWrt's names.
        let level = optimization::default_level(&checkout, &target)
            .unwrap()
            .unwrap()
            .level;
        let (chosen, unchosen) = match level {
            Level::O2 => ("PERFORMANCE", "SIZE"),
            Level::Os => ("SIZE", "PERFORMANCE"),
        };
        std::fs::write(
            &top,
            format!(
                "{dot_config}CONFIG_KERNEL_CC_OPTIMIZE_FOR_{chosen}=y\n\
                 # CONFIG_KERNEL_CC_OPTIMIZE_FOR_{unchosen} is not set\n"
            ),
        )
        .unwrap();
        let mut dot_target = cmd!(sh, "perl {kconfig_pl} {args...}").read().unwrap() + "\n";
        dot_target += &cmd!(sh, "awk {awk_program} {top}").read().unwrap();
        dot_target += "\n";
        dot_target += &target_echoes;
        let (t, o) = (
            scratch.join(".config.target"),
            scratch.join(".config.override"),
        );
        std::fs::write(&t, &dot_target).unwrap();
        std::fs::write(&o, "").unwrap();
        let set = cmd!(sh, "perl {kconfig_pl} m+ + {t} /dev/null {o}")
            .read()
            .unwrap();
        let mut want = String::new();
        for line in set.lines().filter(|l| !l.contains("INITRAMFS")) {
            want.push_str(line);
            want.push('\n');
        }
        want += &set_echoes;
        assert!(
            want.contains("CONFIG_SWAP=y\n") && want.contains("CONFIG_KALLSYMS_UNCOMPRESSED=y\n")
        );
        assert!(
            want.contains(&format!("CONFIG_CC_OPTIMIZE_FOR_{chosen}=y\n")),
            "{spelling}"
        );
        // The configured checkout (the choice in its .config), and the
        // unconfigured one (the default stands in for `make defconfig`).
        let got = kconfig::kernel_dot_config(&checkout, &files, None).unwrap();
        assert_eq!(String::from_utf8(got).unwrap(), want, "{spelling}");
        std::fs::write(&top, dot_config).unwrap();
        let got = kconfig::kernel_dot_config(&checkout, &files, Some(level)).unwrap();
        assert_eq!(String::from_utf8(got).unwrap(), want, "{spelling}");
        // A configured checkout's own choice wins over the default.
        let other = match level {
            Level::O2 => Level::Os,
            Level::Os => Level::O2,
        };
        std::fs::write(
            &top,
            format!(
                "{dot_config}CONFIG_KERNEL_CC_OPTIMIZE_FOR_{unchosen}=y\n\
                 # CONFIG_KERNEL_CC_OPTIMIZE_FOR_{chosen} is not set\n"
            ),
        )
        .unwrap();
        let got = kconfig::kernel_dot_config(&checkout, &files, Some(level)).unwrap();
        assert_eq!(
            optimization::level_in_kernel_config(&String::from_utf8(got).unwrap()),
            Some(other),
            "{spelling}"
        );
    }
}

/// OpenWrt's flags reach make's command line as `KCFLAGS=…`: a checkout
/// whose `.config` sets shell or make syntax there is refused, naming the
/// line, as a variant's flags are.
#[test]
fn hostile_kernel_cflags_in_the_checkout_are_refused() {
    let Some(fx) = Fixture::unpack() else { return };
    std::fs::write(
        fx.root.join(".config"),
        "CONFIG_TARGET_ramips=y\nCONFIG_KERNEL_CFLAGS=\"-O2 $(shell touch pwned)\"\n",
    )
    .unwrap();
    let checkout = Checkout::open(&fx.root).unwrap();
    let target = OpenwrtTarget::resolve(&checkout, "ramips/mt7621").unwrap();
    let err = format!("{:#}", flags::kernel_flags(&checkout, &target).unwrap_err());
    assert!(err.contains(".config:2"), "{err}");
    assert!(err.contains("'$'"), "{err}");
}

/// A generic `config-6.12` that is a link to /dev/zero
/// was reported missing (and `config show` exited 0 without OpenWrt's
/// generic settings); it is refused, naming the file and the fix, and
/// never read to the end.
#[test]
fn a_config_file_that_is_not_a_regular_file_is_refused() {
    let Some(fx) = Fixture::unpack() else { return };
    let generic = fx.root.join("target/linux/generic/config-6.12");
    std::fs::remove_file(&generic).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &generic).unwrap();
    let checkout = Checkout::open(&fx.root).unwrap();
    let target = OpenwrtTarget::resolve(&checkout, "ramips/mt7621").unwrap();
    let files = kconfig::config_files(&checkout, &target, "6.12");
    assert_eq!(files.first(), Some(&generic));
    assert!(kconfig::missing_config_warnings(&checkout, &target, "6.12").is_empty());
    let err = format!("{:#}", kconfig::merge_files(&files).unwrap_err());
    assert!(
        err.contains("config-6.12") && err.contains("/dev/zero") && err.contains("restore it"),
        "{err}"
    );
}
