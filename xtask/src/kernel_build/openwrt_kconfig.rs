//! What `make olddefconfig` did to OpenWrt's kernel config: the symbols
//! the source does not know, those whose dependencies are not met, and
//! the values it changed ([`KconfigChanges`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};

use crate::results::openwrt::{ChangedSymbol, KconfigChanges};

/// Compares `input` (the `.config` written before olddefconfig) with
/// `output` (the one it wrote), looking up unknown symbols in every
/// `Kconfig*` file of `tree`. A later line of `input` wins, as in kconfig.
///
/// Errors: I/O while reading the tree's Kconfig files.
pub fn changes(input: &str, output: &str, tree: &Path) -> Result<KconfigChanges> {
    let wanted = values(input);
    let got = values(output);
    let mut out = KconfigChanges::default();
    let mut known: Option<BTreeSet<String>> = None;
    for (symbol, value) in &wanted {
        match got.get(symbol) {
            Some(v) if v == value => {}
            Some(v) => out.changed.push(ChangedSymbol {
                symbol: symbol.clone(),
                wanted: value.clone(),
                got: Some(v.clone()),
            }),
            // Absent is "not set": nothing changed.
            None if value == "n" && known_or_scan(&mut known, tree)?.contains(symbol) => {}
            None => {
                if known_or_scan(&mut known, tree)?.contains(symbol) {
                    out.unmet.push(ChangedSymbol {
                        symbol: symbol.clone(),
                        wanted: value.clone(),
                        got: None,
                    });
                } else {
                    out.unknown.push(symbol.clone());
                }
            }
        }
    }
    Ok(out)
}

/// The symbols the tree defines, scanned on first use.
fn known_or_scan<'a>(
    known: &'a mut Option<BTreeSet<String>>,
    tree: &Path,
) -> Result<&'a BTreeSet<String>> {
    if known.is_none() {
        *known = Some(defined_symbols(tree)?);
    }
    Ok(known.as_ref().expect("just set"))
}

/// Symbol → value of a `.config`: `CONFIG_X=v` lines and `# CONFIG_X is
/// not set` (as `n`).
pub fn values(text: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("CONFIG_") {
            if let Some((k, v)) = rest.split_once('=') {
                map.insert(k.to_string(), v.to_string());
            }
        } else if let Some(rest) = line.strip_prefix("# CONFIG_") {
            if let Some(k) = rest.strip_suffix(" is not set") {
                map.insert(k.to_string(), "n".to_string());
            }
        }
    }
    map
}

/// Every symbol a `config X` or `menuconfig X` line of a `Kconfig*` file
/// under `tree` defines.
fn defined_symbols(tree: &Path) -> Result<BTreeSet<String>> {
    let mut set = BTreeSet::new();
    for entry in walkdir::WalkDir::new(tree) {
        let entry = entry.with_context(|| format!("walking {}", tree.display()))?;
        if !entry.file_type().is_file()
            || !entry.file_name().to_string_lossy().starts_with("Kconfig")
        {
            continue;
        }
        let bytes = crate::util::fs::read_bytes_limited(
            entry.path(),
            crate::util::fs::FileLimit::input("Kconfig file"),
            "",
        )?;
        for line in String::from_utf8_lossy(&bytes).lines() {
            let mut words = line.split_whitespace();
            if let (Some("config" | "menuconfig"), Some(name)) = (words.next(), words.next()) {
                set.insert(name.to_string());
            }
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_unmet_and_changed_symbols() {
        let tree = tempfile::tempdir().unwrap();
        std::fs::write(
            tree.path().join("Kconfig"),
            "config KNOWN_UNMET\n\tbool\nmenuconfig CHANGED\n\ttristate\nconfig SAME\nconfig OFF\n",
        )
        .unwrap();
        let input = "# CONFIG_OFF is not set\nCONFIG_SAME=y\nCONFIG_CHANGED=y\n# CONFIG_GONE is not set\nCONFIG_KNOWN_UNMET=y\nCONFIG_OPENWRT_ONLY=y\n";
        let output = "CONFIG_SAME=y\nCONFIG_CHANGED=m\n";
        let c = changes(input, output, tree.path()).unwrap();
        assert_eq!(c.unknown, ["GONE", "OPENWRT_ONLY"]);
        assert_eq!(c.unmet.len(), 1);
        assert_eq!(c.unmet[0].symbol, "KNOWN_UNMET");
        assert_eq!(
            c.changed,
            [ChangedSymbol {
                symbol: "CHANGED".into(),
                wanted: "y".into(),
                got: Some("m".into())
            }]
        );
    }
}
