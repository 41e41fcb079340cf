//! The compiler flags OpenWrt adds to every kernel compile: KCFLAGS.
//!
//! include/kernel.mk (`KERNEL_MAKE_FLAGS`) passes
//!
//! ```make
//! KCFLAGS="$(call iremap,…) $(filter-out -fno-plt,$(call qstrip,$(CONFIG_EXTRA_OPTIMIZATION))) $(call qstrip,$(CONFIG_KERNEL_CFLAGS))"
//! ```
//!
//! `CONFIG_EXTRA_OPTIMIZATION` and `CONFIG_KERNEL_CFLAGS` come from the
//! checkout's `.config` when it has them (a configured checkout always
//! does), else from the first `default` of their `config` entry in
//! config/Config-devel.in whose `if` condition holds:
//! `-fno-caller-saves -fno-plt` unless `arc`, and `-falign-functions=32`
//! on `TARGET_bcm53xx`. `-fno-plt` is filtered out for the kernel.
//! The `iremap` part (`-ffile-prefix-map=<build dir>=<its name>`) only
//! renames the build directory in debug information and is left out.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::{Checkout, OpenwrtTarget};

/// Where OpenWrt's string options are declared.
const CONFIG_DEVEL: &str = "config/Config-devel.in";

/// Flags include/kernel.mk removes from `CONFIG_EXTRA_OPTIMIZATION` for the kernel.
pub const FILTERED_OUT: &[&str] = &["-fno-plt"];

/// One OpenWrt string option and where its value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StringOption {
    /// The value after `qstrip` (quotes removed, white space collapsed).
    pub value: String,
    /// `.config:12` or `config/Config-devel.in:210`.
    pub origin: String,
}

/// OpenWrt's kernel KCFLAGS for one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFlags {
    /// `CONFIG_EXTRA_OPTIMIZATION`.
    pub extra_optimization: StringOption,
    /// `CONFIG_KERNEL_CFLAGS`.
    pub kernel_cflags: StringOption,
    /// The flags passed as KCFLAGS, in order.
    pub kcflags: Vec<String>,
    /// Flags of `CONFIG_EXTRA_OPTIMIZATION` filtered out for the kernel.
    pub filtered_out: Vec<String>,
}

impl KernelFlags {
    /// KCFLAGS as one string.
    pub fn kcflags_string(&self) -> String {
        self.kcflags.join(" ")
    }
}

/// `$(call qstrip,…)` of OpenWrt's rules.mk: `"` removed, white space collapsed.
pub fn qstrip(value: &str) -> String {
    value
        .replace('"', "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The KCFLAGS OpenWrt uses for `target` (see the module docs).
pub fn kernel_flags(checkout: &Checkout, target: &OpenwrtTarget) -> Result<KernelFlags> {
    let dot_config = read_dot_config(&checkout.root().join(".config"))?;
    let symbols = target_symbols(checkout, target, &dot_config)?;
    let decls = checkout.root().join(CONFIG_DEVEL);
    let decls_text =
        super::read_checkout_file(checkout.root(), &decls).context("an OpenWrt checkout has it")?;
    let lookup = |name: &str| -> Result<StringOption> {
        if let Some((value, line)) = dot_config.get(name) {
            return Ok(StringOption {
                value: qstrip(value),
                origin: format!(".config:{line}"),
            });
        }
        let (value, line) = string_default(&decls_text, name, &symbols)
            .with_context(|| format!("{}: config {name}", decls.display()))?;
        Ok(StringOption {
            value: qstrip(&value),
            origin: format!("{CONFIG_DEVEL}:{line}"),
        })
    };
    let extra_optimization = lookup("EXTRA_OPTIMIZATION")?;
    let kernel_cflags = lookup("KERNEL_CFLAGS")?;
    // Both reach make's command line as KCFLAGS=…: the same check as a
    // variant's flags, naming where the value came from.
    for option in [&extra_optimization, &kernel_cflags] {
        crate::inputs::cflags::validate(&option.value).with_context(|| {
            format!(
                "{} ({}): refusing OpenWrt's kernel flags; fix the value in the checkout",
                checkout.root().display(),
                option.origin
            )
        })?;
    }
    let (filtered_out, mut kcflags): (Vec<String>, Vec<String>) = extra_optimization
        .value
        .split_whitespace()
        .map(str::to_string)
        .partition(|f| FILTERED_OUT.contains(&f.as_str()));
    kcflags.extend(kernel_cflags.value.split_whitespace().map(str::to_string));
    Ok(KernelFlags {
        extra_optimization,
        kernel_cflags,
        kcflags,
        filtered_out,
    })
}

/// The symbols a Kconfig condition of OpenWrt's own menus sees for
/// `target`, each `true` or `false`: `dot_config`'s (the checkout's
/// `.config`, [`read_dot_config`]; `y` is true), then `TARGET_<board>`,
/// `TARGET_<board>_<subtarget>` and the board's `ARCH` set. A symbol not in
/// the map is `n`.
///
/// Errors: the board Makefile cannot be read.
pub(super) fn target_symbols(
    checkout: &Checkout,
    target: &OpenwrtTarget,
    dot_config: &DotConfig,
) -> Result<BTreeMap<String, bool>> {
    let mut symbols: BTreeMap<String, bool> = dot_config
        .iter()
        .map(|(k, (v, _))| (k.clone(), v == "y"))
        .collect();
    symbols.insert(format!("TARGET_{}", target.board), true);
    if let Some(sub) = &target.subtarget {
        symbols.insert(format!("TARGET_{}_{sub}", target.board), true);
    }
    if let Some(arch) = checkout.board_arch(&target.board)? {
        symbols.insert(arch, true);
    }
    Ok(symbols)
}

/// `CONFIG_NAME=value` lines of an OpenWrt `.config`: name without
/// `CONFIG_` → raw value and 1-based line.
pub(super) type DotConfig = BTreeMap<String, (String, usize)>;

/// The checkout's `.config` ([`DotConfig`]); empty when there is no file.
pub(super) fn read_dot_config(file: &Path) -> Result<DotConfig> {
    let mut values = BTreeMap::new();
    let text = match crate::util::fs::read_limited(
        file,
        crate::util::fs::FileLimit::input("OpenWrt .config"),
        "configure the checkout again (make menuconfig), or remove it",
    ) {
        Ok(text) => text,
        Err(e) if crate::util::fs::is_not_found(&e) => return Ok(values),
        Err(e) => return Err(e),
    };
    for (i, line) in text.lines().enumerate() {
        if let Some((name, value)) = line.strip_prefix("CONFIG_").and_then(|l| l.split_once('=')) {
            values.insert(name.to_string(), (value.to_string(), i + 1));
        }
    }
    Ok(values)
}

/// The value of the first `default "…" [if COND]` of `config NAME` in a
/// Kconfig text whose condition holds (symbols not in `symbols` are `n`),
/// with its 1-based line; `""` when none holds, as Kconfig gives a string
/// symbol without a default.
fn string_default(
    text: &str,
    name: &str,
    symbols: &BTreeMap<String, bool>,
) -> Result<(String, usize)> {
    let mut in_entry = false;
    let mut found = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let first = line.split_whitespace().next().unwrap_or_default();
        if matches!(first, "config" | "menuconfig") {
            in_entry = line.split_whitespace().nth(1) == Some(name);
            found |= in_entry;
            continue;
        }
        if !in_entry {
            continue;
        }
        if matches!(
            first,
            "help" | "---help---" | "menu" | "endmenu" | "if" | "endif" | "choice" | "source"
        ) {
            in_entry = false;
            continue;
        }
        if let Some(rest) = line.strip_prefix("default ") {
            let rest = rest.trim();
            let (value, cond) = quoted(rest)
                .with_context(|| format!("line {}: {raw:?}: expected default \"…\"", i + 1))?;
            let holds = match cond.trim().strip_prefix("if ") {
                Some(expr) => eval(expr, symbols)
                    .with_context(|| format!("line {}: condition {expr:?}", i + 1))?,
                None if cond.trim().is_empty() => true,
                None => bail!("line {}: {raw:?}: text after the value", i + 1),
            };
            if holds {
                return Ok((value, i + 1));
            }
        }
    }
    if !found {
        bail!("no `config {name}` entry; is this an OpenWrt checkout?");
    }
    Ok((String::new(), 0))
}

/// `"value" rest` → (value, rest).
fn quoted(s: &str) -> Option<(String, &str)> {
    let body = s.strip_prefix('"')?;
    let end = body.find('"')?;
    Some((body[..end].to_string(), &body[end + 1..]))
}

/// Evaluates a Kconfig condition made of symbols, `!`, `&&`, `||` and
/// parentheses (every condition config/Config-devel.in uses for defaults).
pub(super) fn eval(expr: &str, symbols: &BTreeMap<String, bool>) -> Result<bool> {
    let spaced = expr
        .replace("&&", " && ")
        .replace("||", " || ")
        .replace('!', " ! ")
        .replace('(', " ( ")
        .replace(')', " ) ");
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    let mut pos = 0;
    let value = or_expr(&tokens, &mut pos, symbols)?;
    if pos != tokens.len() {
        bail!("unexpected {:?}", tokens[pos]);
    }
    Ok(value)
}

fn or_expr(t: &[&str], pos: &mut usize, s: &BTreeMap<String, bool>) -> Result<bool> {
    let mut v = and_expr(t, pos, s)?;
    while t.get(*pos) == Some(&"||") {
        *pos += 1;
        v |= and_expr(t, pos, s)?;
    }
    Ok(v)
}

fn and_expr(t: &[&str], pos: &mut usize, s: &BTreeMap<String, bool>) -> Result<bool> {
    let mut v = unary(t, pos, s)?;
    while t.get(*pos) == Some(&"&&") {
        *pos += 1;
        v &= unary(t, pos, s)?;
    }
    Ok(v)
}

fn unary(t: &[&str], pos: &mut usize, s: &BTreeMap<String, bool>) -> Result<bool> {
    let token = *t.get(*pos).context("condition ends too early")?;
    *pos += 1;
    match token {
        "!" => Ok(!unary(t, pos, s)?),
        "(" => {
            let v = or_expr(t, pos, s)?;
            if t.get(*pos) != Some(&")") {
                bail!("missing )");
            }
            *pos += 1;
            Ok(v)
        }
        sym if sym.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => {
            Ok(s.get(sym).copied().unwrap_or(false))
        }
        other => bail!("unsupported token {other:?} (only symbols, !, &&, || and parentheses)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_and_first_matching_default() {
        let decls = "menuconfig DEVEL\n\tbool \"x\"\n\tconfig X\n\t\tstring \"x\" if DEVEL\n\
                     \t\tdefault \"-a -b\" if !EXT && !arc\n\t\tdefault \"-a\"\n\t\thelp\n\t\t  default \"no\"\n";
        let mut s = BTreeMap::new();
        assert_eq!(string_default(decls, "X", &s).unwrap(), ("-a -b".into(), 5));
        s.insert("arc".to_string(), true);
        assert_eq!(string_default(decls, "X", &s).unwrap(), ("-a".into(), 6));
        assert!(string_default(decls, "Y", &s).is_err());
        assert!(eval("(A || B) && !C", &[("B".to_string(), true)].into()).unwrap());
        assert!(eval("A = y", &s).is_err());
        assert_eq!(qstrip("\" -Os   -g \""), "-Os -g");
    }
}
