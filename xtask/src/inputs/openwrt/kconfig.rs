//! The kernel config of an OpenWrt target before `make olddefconfig`, as
//! OpenWrt assembles it.
//!
//! include/target.mk lists the files (`LINUX_KCONFIG_LIST`): for the generic
//! directory, the board and the subtarget, in that order, `config-<kver>`
//! when it exists, else `config-default` when that exists
//! (`find_kernel_config`), then `$(TOPDIR)/env/kernel-config` when it exists.
//! `LINUX_CONF_CMD` merges them with `scripts/kconfig.pl + + f1 f2 f3`
//! (`__linux_confcmd`: one `+` per file after the first), and
//! include/kernel-defaults.mk (`Kernel/Configure/Default`) writes its output
//! to `.config.target`. [`merge_files`] is that merge: a later file's
//! setting of a symbol replaces an earlier one, `# CONFIG_X is not set`
//! included, and the result is printed sorted by symbol name.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::optimization::Level;
use super::{select, Checkout, OpenwrtTarget};

/// kconfig.pl's value for `# CONFIG_X is not set`.
const UNDEF: &[u8] = b"#undef";

/// The config files OpenWrt merges for `target` and kernel series `kver`,
/// in merge order (include/target.mk `LINUX_KCONFIG_LIST`); only names
/// that exist, as `$(wildcard …)` keeps them. A name that exists but is no
/// regular file (a directory, a link to `/dev/zero`) is kept, so that
/// reading it fails loudly ([`load`]) instead of being taken for missing.
pub fn config_files(checkout: &Checkout, target: &OpenwrtTarget, kver: &str) -> Vec<PathBuf> {
    let mut dirs = vec![checkout.generic_dir(), checkout.board_dir(&target.board)];
    dirs.extend(target.subtarget_dir(checkout));
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|dir| {
            [format!("config-{kver}"), "config-default".to_string()]
                .into_iter()
                .map(|name| dir.join(name))
                .find(|f| f.exists())
        })
        .collect();
    let env = checkout.root().join("env/kernel-config");
    if env.exists() {
        files.push(env);
    }
    files
}

/// Warnings about the config files include/target.mk would skip without a
/// word (`$(wildcard …)`): a checkout without the generic
/// `config-<kver>` (and `config-default`) merges the board's files alone,
/// a few hundred lines instead of OpenWrt's generic defaults; one without
/// the board's and the subtarget's gets the generic config alone. Each
/// warning names the missing file and the fix; none when both are there.
pub fn missing_config_warnings(
    checkout: &Checkout,
    target: &OpenwrtTarget,
    kver: &str,
) -> Vec<String> {
    let has_config = |dir: &Path| {
        dir.join(format!("config-{kver}")).exists() || dir.join("config-default").exists()
    };
    let mut out = Vec::new();
    let generic = checkout.generic_dir();
    if !has_config(&generic) {
        out.push(format!(
            "{} is missing (and no config-default beside it): OpenWrt's include/target.mk skips a missing file, so the kernel config is the board's files alone, without OpenWrt's generic settings; restore it (git checkout target/linux/generic/config-{kver} in the checkout) or use a checkout that has it",
            generic.join(format!("config-{kver}")).display()
        ));
    }
    let mut own = vec![checkout.board_dir(&target.board)];
    own.extend(target.subtarget_dir(checkout));
    if !own.iter().any(|d| has_config(d)) {
        out.push(format!(
            "OpenWrt's {target} has no config-{kver} (or config-default) in {}: the kernel config is the generic one alone, without the board's SoC; restore the board's config-{kver}, or bump the board to {kver} (`cargo xtask patches rebase --openwrt …`)",
            own.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        ));
    }
    out
}

/// The arguments OpenWrt passes to `scripts/kconfig.pl` for `files`
/// (include/target.mk `__linux_confcmd`): `+` once per file after the
/// first, then the files.
pub fn kconfig_pl_args(files: &[PathBuf]) -> Vec<OsString> {
    let mut args: Vec<OsString> = files.iter().skip(1).map(|_| "+".into()).collect();
    args.extend(files.iter().map(|f| f.as_os_str().to_os_string()));
    args
}

/// A merged config: symbol names without `CONFIG_` mapped to their values
/// as written (`y`, `"text"`, `#undef` for "is not set"), as kconfig.pl
/// keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergedConfig {
    /// Symbol (without `CONFIG_`) → value bytes.
    pub values: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Lines kconfig.pl would warn about ("can't parse line"), as `file:line: text`.
    pub warnings: Vec<String>,
}

impl MergedConfig {
    /// The value of `symbol` (with or without `CONFIG_`); `Some("n")` for
    /// "is not set", `None` when no file mentions it.
    pub fn get(&self, symbol: &str) -> Option<String> {
        let name = symbol.strip_prefix("CONFIG_").unwrap_or(symbol);
        self.values.get(name.as_bytes()).map(|v| {
            if v == UNDEF {
                "n".to_string()
            } else {
                String::from_utf8_lossy(v).into_owned()
            }
        })
    }

    /// The text kconfig.pl prints (`dump_config`): one line per symbol,
    /// sorted by name (Perl's `sort`, byte order), `# CONFIG_X is not set`
    /// for `#undef` and `n`.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.values.len() * 32);
        for (name, value) in &self.values {
            if value == UNDEF || value == b"n" {
                out.extend_from_slice(b"# CONFIG_");
                out.extend_from_slice(name);
                out.extend_from_slice(b" is not set\n");
            } else {
                out.extend_from_slice(b"CONFIG_");
                out.extend_from_slice(name);
                out.push(b'=');
                out.extend_from_slice(value);
                out.push(b'\n');
            }
        }
        out
    }
}

/// One line as kconfig.pl's `load_config` reads it.
#[derive(Debug, PartialEq, Eq)]
enum Line<'a> {
    /// `CONFIG_NAME=VALUE` (`/^CONFIG_(.+?)=(.+)/`).
    Set(&'a [u8], &'a [u8]),
    /// `# CONFIG_NAME is not set` (`/^# CONFIG_(.+?) is not set/`).
    Unset(&'a [u8]),
    /// Another comment, or an empty line.
    Skip,
    /// Anything else: kconfig.pl warns "can't parse line" and goes on.
    Garbage,
}

/// Classifies `line` (without its `\n`) as kconfig.pl's regular
/// expressions do, non-greedy names included: the name ends at the first
/// `=` that is not its first byte and has a byte after it.
fn parse_line(line: &[u8]) -> Line<'_> {
    if let Some(rest) = line.strip_prefix(b"CONFIG_") {
        let split = (1..rest.len().saturating_sub(1)).find(|&i| rest[i] == b'=');
        if let Some(i) = split {
            return Line::Set(&rest[..i], &rest[i + 1..]);
        }
    }
    if let Some(rest) = line.strip_prefix(b"# CONFIG_") {
        const TAIL: &[u8] = b" is not set";
        if let Some(i) = (1..rest.len()).find(|&i| rest[i..].starts_with(TAIL)) {
            return Line::Unset(&rest[..i]);
        }
    }
    if line.is_empty() || line.starts_with(b"#") {
        Line::Skip
    } else {
        Line::Garbage
    }
}

/// Reads one config file as kconfig.pl's `load_config` does (no `m+`): a
/// later line for the same symbol replaces an earlier one. Unparsable
/// lines are collected in `warnings` as `file:line: text`.
pub fn load(file: &Path, warnings: &mut Vec<String>) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    let bytes = crate::util::fs::read_bytes_limited(
        file,
        crate::util::fs::FileLimit::input("kernel config file"),
        "restore it in the OpenWrt checkout (git checkout it there)",
    )?;
    Ok(load_bytes(&bytes, &file.display().to_string(), warnings))
}

/// [`load`] of text already read; `origin` names it in warnings.
fn load_bytes(
    bytes: &[u8],
    origin: &str,
    warnings: &mut Vec<String>,
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut values = BTreeMap::new();
    if bytes.is_empty() {
        return values;
    }
    let text = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        match parse_line(line) {
            Line::Set(name, value) => {
                values.insert(name.to_vec(), value.to_vec());
            }
            Line::Unset(name) => {
                values.insert(name.to_vec(), UNDEF.to_vec());
            }
            Line::Skip => {}
            Line::Garbage => warnings.push(format!(
                "{origin}:{}: can't parse line: {}",
                i + 1,
                String::from_utf8_lossy(line)
            )),
        }
    }
    values
}

/// Merges `files` in order as `kconfig.pl + + f1 f2 f3` does (`config_add`
/// without `m+`): a later file's value wins.
pub fn merge_files(files: &[PathBuf]) -> Result<MergedConfig> {
    let mut merged = MergedConfig::default();
    for file in files {
        let values = load(file, &mut merged.warnings)?;
        merged.values.extend(values);
    }
    Ok(merged)
}

/// Lines include/kernel-defaults.mk (`Kernel/Configure/Default`) appends
/// to `.config.target` after the merged files.
const CONFIGURE_APPEND: &str = "# CONFIG_KALLSYMS_EXTRA_PASS is not set\n\
                                # CONFIG_KALLSYMS_ALL is not set\n\
                                CONFIG_KALLSYMS_UNCOMPRESSED=y\n";

/// Lines `Kernel/SetNoInitramfs` (include/kernel-defaults.mk) appends after
/// removing every line that mentions `INITRAMFS`.
const NO_INITRAMFS_APPEND: &str = "CONFIG_INITRAMFS_SOURCE=\"\"\n\
                                   # CONFIG_INITRAMFS_FORCE is not set\n\
                                   # CONFIG_INITRAMFS_PRESERVE_MTIME is not set\n";

/// The `.config` OpenWrt writes into the kernel tree for `files`
/// (include/kernel-defaults.mk `Kernel/Configure/Default`, without an initramfs):
///
/// 1. `.config.target`: the merged files ([`merge_files`]), then the
///    kernel lines of `level`, the optimization level OpenWrt's `make
///    defconfig` writes into a `.config` for the target
///    ([`super::optimization::default_level`]; `None` adds nothing), then the
///    `CONFIG_KERNEL_*` lines of the checkout's `.config` renamed to
///    `CONFIG_*` (its `awk` rule; none without a `.config`; a configured
///    checkout's own `CONFIG_KERNEL_CC_OPTIMIZE_FOR_*` lines win), then
///    `# CONFIG_KALLSYMS_EXTRA_PASS is not set`,
///    `# CONFIG_KALLSYMS_ALL is not set`, `CONFIG_KALLSYMS_UNCOMPRESSED=y`;
/// 2. `.config.set`: `kconfig.pl 'm+' '+' .config.target /dev/null
///    .config.override`, i.e. `.config.target` re-read (a later line wins)
///    and sorted. The override comes from the packages selected in the
///    checkout (`package-metadata.pl kconfig`, which needs `tmp/.packageinfo`)
///    and is taken as empty here;
/// 3. `Kernel/SetNoInitramfs`: lines mentioning `INITRAMFS` removed,
///    `CONFIG_INITRAMFS_SOURCE=""` and two "is not set" lines appended.
pub fn kernel_dot_config(
    checkout: &Checkout,
    files: &[PathBuf],
    level: Option<Level>,
) -> Result<Vec<u8>> {
    let mut target = merge_files(files)?.render();
    if let Some(level) = level {
        target.extend_from_slice(level.kernel_config_lines().as_bytes());
    }
    let top = checkout.root().join(".config");
    let text = match crate::util::fs::read_bytes_limited(
        &top,
        crate::util::fs::FileLimit::input("OpenWrt .config"),
        "configure the checkout again (make menuconfig), or remove it",
    ) {
        Ok(text) => Some(text),
        Err(e) if crate::util::fs::is_not_found(&e) => None,
        Err(e) => return Err(e),
    };
    if let Some(text) = text {
        for line in text.split(|&b| b == b'\n') {
            if let Some(renamed) = kernel_option_line(line) {
                target.extend_from_slice(&renamed);
                target.push(b'\n');
            }
        }
    }
    target.extend_from_slice(CONFIGURE_APPEND.as_bytes());
    let mut warnings = Vec::new();
    let mut set = MergedConfig {
        values: load_bytes(&target, "<.config.target>", &mut warnings),
        warnings,
    }
    .render();
    set = set
        .split_inclusive(|&b| b == b'\n')
        .filter(|l| !l.windows(9).any(|w| w == b"INITRAMFS"))
        .flatten()
        .copied()
        .collect();
    set.extend_from_slice(NO_INITRAMFS_APPEND.as_bytes());
    Ok(set)
}

/// The awk rule of `Kernel/Configure/Default`:
/// `/^(#[[:space:]]+)?CONFIG_KERNEL/{sub("CONFIG_KERNEL_","CONFIG_");print}`.
fn kernel_option_line(line: &[u8]) -> Option<Vec<u8>> {
    let rest = match line.strip_prefix(b"#") {
        Some(r) => {
            let trimmed = r.trim_ascii_start();
            if trimmed.len() == r.len() {
                return None;
            }
            trimmed
        }
        None => line,
    };
    if !rest.starts_with(b"CONFIG_KERNEL") {
        return None;
    }
    let at = line.windows(14).position(|w| w == b"CONFIG_KERNEL_");
    Some(match at {
        Some(i) => [&line[..i], b"CONFIG_".as_slice(), &line[i + 14..]].concat(),
        None => line.to_vec(),
    })
}

/// `cargo xtask config show --openwrt PATH --target T [--kernel KVER]`:
/// prints the merged config of `T` (a workbench target or an OpenWrt
/// `board/subtarget`) before `make olddefconfig`, byte for byte what
/// `scripts/kconfig.pl` prints; the files merged and any warnings go to stderr.
pub fn show(openwrt: &Path, targets_dir: &Path, target: &str, kernel: Option<&str>) -> Result<()> {
    let checkout = Checkout::open(openwrt)?;
    let selection = select(&checkout, targets_dir, target, kernel)?;
    for w in missing_config_warnings(&checkout, &selection.target, &selection.kernel) {
        eprintln!("warning: {w}");
    }
    let files = config_files(&checkout, &selection.target, &selection.kernel);
    anyhow::ensure!(
        !files.is_empty(),
        "OpenWrt target {} has no kernel config for Linux {} (no config-{} or config-default \
         in target/linux/generic, the board or the subtarget)",
        selection.target,
        selection.kernel,
        selection.kernel
    );
    let merged = merge_files(&files)?;
    eprintln!(
        "# OpenWrt {} Linux {}: kconfig.pl {}",
        selection.target,
        selection.kernel,
        kconfig_pl_args(&files)
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    match super::flags::kernel_flags(&checkout, &selection.target) {
        Ok(flags) => eprintln!(
            "# KCFLAGS={:?} (EXTRA_OPTIMIZATION from {}, KERNEL_CFLAGS from {})",
            flags.kcflags_string(),
            flags.extra_optimization.origin,
            flags.kernel_cflags.origin
        ),
        Err(e) => eprintln!("warning: OpenWrt's KCFLAGS unknown: {e:#}"),
    }
    match super::optimization::default_level(&checkout, &selection.target) {
        Ok(Some(d)) => eprintln!(
            "# optimization level {} unless the checkout's .config chooses one ({})",
            d.level, d.why
        ),
        Ok(None) => {}
        Err(e) => eprintln!("warning: OpenWrt's optimization level unknown: {e:#}"),
    }
    for w in &merged.warnings {
        eprintln!("warning: {w}");
    }
    std::io::stdout()
        .lock()
        .write_all(&merged.render())
        .context("writing the merged config to stdout")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_kconfig_pl_reads_them() {
        assert_eq!(parse_line(b"CONFIG_A=y"), Line::Set(b"A", b"y"));
        assert_eq!(parse_line(b"CONFIG_A=b=c"), Line::Set(b"A", b"b=c"));
        assert_eq!(parse_line(b"CONFIG_A=="), Line::Set(b"A", b"="));
        assert_eq!(parse_line(b"CONFIG_A="), Line::Garbage);
        assert_eq!(parse_line(b"CONFIG_=x"), Line::Garbage);
        assert_eq!(parse_line(b"# CONFIG_A is not set"), Line::Unset(b"A"));
        assert_eq!(
            parse_line(b"# CONFIG_A is not set, really"),
            Line::Unset(b"A")
        );
        assert_eq!(parse_line(b"# CONFIG_ is not set"), Line::Skip);
        assert_eq!(parse_line(b"# comment"), Line::Skip);
        assert_eq!(parse_line(b""), Line::Skip);
        assert_eq!(parse_line(b"junk"), Line::Garbage);
    }

    #[test]
    fn later_files_win_and_output_is_sorted() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::write(&a, "CONFIG_Z=y\nCONFIG_A=m\n# CONFIG_B is not set\njunk\n").unwrap();
        std::fs::write(&b, "# CONFIG_Z is not set\nCONFIG_B=\"x\"\nCONFIG_N=n\n").unwrap();
        let merged = merge_files(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(
            String::from_utf8(merged.render()).unwrap(),
            "CONFIG_A=m\nCONFIG_B=\"x\"\n# CONFIG_N is not set\n# CONFIG_Z is not set\n"
        );
        assert_eq!(merged.get("CONFIG_Z").as_deref(), Some("n"));
        assert_eq!(merged.warnings.len(), 1);
        assert!(merged.warnings[0].ends_with(":4: can't parse line: junk"));
        let c = dir.path().join("c");
        let args = kconfig_pl_args(&[a.clone(), b.clone(), c.clone()]);
        let want: Vec<OsString> = vec!["+".into(), "+".into(), a.into(), b.into(), c.into()];
        assert_eq!(args, want);
    }
}
