//! Kconfig fragments: merging them onto a base `.config` and checking that
//! they took effect, as `scripts/kconfig/merge_config.sh` does.
//!
//! A fragment is a `.config`-format file: `CONFIG_FOO=y`, `CONFIG_BAR="x"`,
//! `# CONFIG_BAZ is not set`; other comments and blank lines are ignored.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// One symbol setting requested by a fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// Symbol with its `CONFIG_` prefix, e.g. `CONFIG_SMP`.
    pub symbol: String,
    /// Value as written (`y`, `m`, `2`, `"text"`); `n` for `# … is not set`.
    pub value: String,
    /// Where it was requested: fragment file and 1-based line.
    pub origin: String,
}

impl Setting {
    /// The line as it appears in a `.config`.
    pub fn config_line(&self) -> String {
        if self.value == "n" {
            format!("# {} is not set", self.symbol)
        } else {
            format!("{}={}", self.symbol, self.value)
        }
    }
}

/// Parses one `.config` line into `(symbol, value)`; `None` for comments,
/// blank lines and anything else. `# CONFIG_X is not set` gives value `n`.
pub fn parse_line(line: &str) -> Option<(&str, &str)> {
    let line = line.trim_end();
    if let Some(rest) = line.strip_prefix("# ") {
        let symbol = rest.strip_suffix(" is not set")?;
        return is_symbol(symbol).then_some((symbol, "n"));
    }
    let (symbol, value) = line.split_once('=')?;
    (is_symbol(symbol) && !value.is_empty()).then_some((symbol, value))
}

fn is_symbol(s: &str) -> bool {
    s.strip_prefix("CONFIG_").is_some_and(|name| {
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// Reads the settings of fragment files, in order; a later setting of the
/// same symbol replaces the earlier one. `extra` lines (from a variant) come
/// last, with `extra_origin` naming them in messages.
///
/// A line that looks like a setting but is malformed (`CONFIG_X` without a
/// value, `CONFIG_X =y`) is an error naming the file and line.
pub fn read_fragments(
    fragments: &[PathBuf],
    extra: &[String],
    extra_origin: &str,
) -> Result<Vec<Setting>> {
    let mut settings: Vec<Setting> = Vec::new();
    let mut add = |symbol: &str, value: &str, origin: String| {
        settings.retain(|s| s.symbol != symbol);
        settings.push(Setting {
            symbol: symbol.to_string(),
            value: value.to_string(),
            origin,
        });
    };
    for fragment in fragments {
        let text = std::fs::read_to_string(fragment)
            .with_context(|| format!("reading kconfig fragment {}", fragment.display()))?;
        for (i, line) in text.lines().enumerate() {
            let origin = format!("{}:{}", fragment.display(), i + 1);
            match parse_line(line) {
                Some((symbol, value)) => add(symbol, value, origin),
                None if line.trim_start().starts_with("CONFIG_") => {
                    bail!("{origin}: {line:?} is not a kconfig setting; write CONFIG_FOO=y or \"# CONFIG_FOO is not set\"")
                }
                None => {}
            }
        }
    }
    for (i, line) in extra.iter().enumerate() {
        let origin = format!("{extra_origin} kconfig[{i}]");
        let (symbol, value) = parse_line(line)
            .with_context(|| format!("{origin}: {line:?} is not a kconfig setting"))?;
        add(symbol, value, origin);
    }
    Ok(settings)
}

/// Writes the merged config: `base` (a `.config` text) with every symbol
/// that `settings` names replaced by the requested value, as
/// `merge_config.sh -m` builds its input for `make alldefconfig`.
pub fn merge(base: &str, settings: &[Setting]) -> String {
    let mut out = String::with_capacity(base.len() + settings.len() * 32);
    for line in base.lines() {
        let overridden =
            parse_line(line).is_some_and(|(symbol, _)| settings.iter().any(|s| s.symbol == symbol));
        if !overridden {
            out.push_str(line);
            out.push('\n');
        }
    }
    for setting in settings {
        out.push_str(&setting.config_line());
        out.push('\n');
    }
    out
}

/// A requested setting that the final `.config` does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// What was asked for, and where.
    pub requested: Setting,
    /// The value in the final `.config`; `None` when the symbol is absent
    /// (its dependencies are not met, or it does not exist in this kernel).
    pub actual: Option<String>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let actual = match &self.actual {
            Some(v) if v == "n" => format!("# {} is not set", self.requested.symbol),
            Some(v) => format!("{}={v}", self.requested.symbol),
            None => "absent (unmet dependencies, or no such symbol in this kernel)".to_string(),
        };
        write!(
            f,
            "{}: requested {}, final .config has {actual}",
            self.requested.origin,
            self.requested.config_line()
        )
    }
}

/// Compares the final `.config` text with what was requested, as
/// `merge_config.sh` does after `make alldefconfig` ("Value requested for
/// CONFIG_X not in final .config"). A requested `n` is met by an absent symbol.
pub fn mismatches(final_config: &str, settings: &[Setting]) -> Vec<Mismatch> {
    let actual: std::collections::HashMap<&str, &str> =
        final_config.lines().filter_map(parse_line).collect();
    settings
        .iter()
        .filter_map(|s| {
            let got = actual.get(s.symbol.as_str()).copied();
            let ok = match got {
                Some(v) => v == s.value,
                None => s.value == "n",
            };
            (!ok).then(|| Mismatch {
                requested: s.clone(),
                actual: got.map(str::to_string),
            })
        })
        .collect()
}

/// Fails listing every mismatch, with the fix, when there are any.
pub fn ensure_applied(config_file: &Path, settings: &[Setting]) -> Result<()> {
    let text = crate::util::fs::read_limited(
        config_file,
        crate::util::fs::FileLimit::record(".config"),
        "build again",
    )?;
    let bad = mismatches(&text, settings);
    if bad.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = bad.iter().map(|m| format!("  {m}")).collect();
    bail!(
        "{} kconfig setting(s) did not take effect in {}:\n{}\n\
         Enable the symbols they depend on in the fragment (see `make menuconfig`, search with '/'), or drop them.",
        bad.len(),
        config_file.display(),
        lines.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_settings_and_not_set() {
        assert_eq!(parse_line("CONFIG_SMP=y"), Some(("CONFIG_SMP", "y")));
        assert_eq!(
            parse_line("CONFIG_CMDLINE=\"a b\""),
            Some(("CONFIG_CMDLINE", "\"a b\""))
        );
        assert_eq!(
            parse_line("# CONFIG_SMP is not set"),
            Some(("CONFIG_SMP", "n"))
        );
        assert_eq!(parse_line("# a comment"), None);
        assert_eq!(parse_line("SMP=y"), None);
        assert_eq!(parse_line("CONFIG_SMP="), None);
    }

    #[test]
    fn merge_overrides_and_check_reports_what_did_not_stick() {
        let dir = tempfile::tempdir().unwrap();
        let frag = dir.path().join("a.config");
        std::fs::write(
            &frag,
            "# x\nCONFIG_SMP=y\n# CONFIG_SWAP is not set\nCONFIG_NR_CPUS=2\n",
        )
        .unwrap();
        let settings = read_fragments(&[frag], &["CONFIG_NR_CPUS=4".into()], "variant v").unwrap();
        assert_eq!(settings.len(), 3);
        let merged = merge("CONFIG_SWAP=y\nCONFIG_NR_CPUS=1\nCONFIG_MMU=y\n", &settings);
        assert_eq!(
            merged,
            "CONFIG_MMU=y\nCONFIG_SMP=y\n# CONFIG_SWAP is not set\nCONFIG_NR_CPUS=4\n"
        );
        let bad = mismatches("CONFIG_SMP=y\nCONFIG_NR_CPUS=2\n", &settings);
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].requested.symbol, "CONFIG_NR_CPUS");
        assert!(
            bad[0].to_string().contains("variant v kconfig[0]"),
            "{}",
            bad[0]
        );
    }

    #[test]
    fn malformed_fragment_line_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let frag = dir.path().join("b.config");
        std::fs::write(&frag, "CONFIG_A=y\nCONFIG_B\n").unwrap();
        let err = read_fragments(&[frag], &[], "").unwrap_err().to_string();
        assert!(err.contains("b.config:2"), "{err}");
    }
}
