//! Runtime variants: `lab/runtime.toml`, the settings the host lab
//! (`cargo xtask lab --lab host`) applies inside its private network
//! namespace before measuring, one variant per arm.
//!
//! ```toml
//! [runtime.baseline]
//! description = "the kernel's defaults: nothing changed"
//!
//! [runtime.lo-no-tso-gso]
//! description = "loopback without TSO and GSO"
//! ethtool = [{ dev = "lo", features = { tso = "off", gso = "off" } }]
//! ```
//!
//! Everything is checked when the file is read, before anything runs: a
//! variant name is a plain name, a device name one Linux accepts (1–15
//! bytes, not `.` or `..`, no `/`, `:` or whitespace) made of letters,
//! digits, `.`, `_` and `-`, not starting with `-` (ethtool would take it
//! for an option), a feature
//! one of [`FEATURES`] (ethtool's `-K` names), a value `on` or `off`. The
//! lab passes them to ethtool as separate arguments, never through a
//! shell.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// The variant the host lab compares against by default.
pub const BASELINE: &str = "baseline";

/// Longest network device name Linux accepts (IFNAMSIZ − 1), in bytes.
pub const MAX_DEV_LEN: usize = 15;

/// The features a runtime variant may set, as `ethtool -K` takes them,
/// with the name `ethtool -k` shows each under (for reading it back): the
/// short names of ethtool's legacy offloads and their long names, then
/// kernel feature strings that loopback and veth devices have.
pub const FEATURES: &[(&str, &str)] = &[
    ("rx", "rx-checksumming"),
    ("rx-checksumming", "rx-checksumming"),
    ("tx", "tx-checksumming"),
    ("tx-checksumming", "tx-checksumming"),
    ("sg", "scatter-gather"),
    ("scatter-gather", "scatter-gather"),
    ("tso", "tcp-segmentation-offload"),
    ("tcp-segmentation-offload", "tcp-segmentation-offload"),
    ("ufo", "udp-fragmentation-offload"),
    ("udp-fragmentation-offload", "udp-fragmentation-offload"),
    ("gso", "generic-segmentation-offload"),
    (
        "generic-segmentation-offload",
        "generic-segmentation-offload",
    ),
    ("gro", "generic-receive-offload"),
    ("generic-receive-offload", "generic-receive-offload"),
    ("lro", "large-receive-offload"),
    ("large-receive-offload", "large-receive-offload"),
    ("rxvlan", "rx-vlan-offload"),
    ("rx-vlan-offload", "rx-vlan-offload"),
    ("txvlan", "tx-vlan-offload"),
    ("tx-vlan-offload", "tx-vlan-offload"),
    ("ntuple", "ntuple-filters"),
    ("ntuple-filters", "ntuple-filters"),
    ("rxhash", "receive-hashing"),
    ("receive-hashing", "receive-hashing"),
    ("tx-tcp-segmentation", "tx-tcp-segmentation"),
    ("tx-tcp6-segmentation", "tx-tcp6-segmentation"),
    ("tx-tcp-ecn-segmentation", "tx-tcp-ecn-segmentation"),
    (
        "tx-tcp-mangleid-segmentation",
        "tx-tcp-mangleid-segmentation",
    ),
    ("tx-udp-segmentation", "tx-udp-segmentation"),
    ("tx-gso-list", "tx-gso-list"),
    ("tx-gso-partial", "tx-gso-partial"),
    ("tx-scatter-gather", "tx-scatter-gather"),
    ("tx-scatter-gather-fraglist", "tx-scatter-gather-fraglist"),
    ("tx-checksum-ip-generic", "tx-checksum-ip-generic"),
    ("tx-checksum-ipv4", "tx-checksum-ipv4"),
    ("tx-checksum-ipv6", "tx-checksum-ipv6"),
    ("tx-nocache-copy", "tx-nocache-copy"),
    ("rx-gro-hw", "rx-gro-hw"),
    ("rx-gro-list", "rx-gro-list"),
    ("rx-udp-gro-forwarding", "rx-udp-gro-forwarding"),
    ("highdma", "highdma"),
    ("loopback", "loopback"),
    ("rx-all", "rx-all"),
    ("rx-fcs", "rx-fcs"),
];

/// A feature's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnOff {
    /// `on`.
    On,
    /// `off`.
    Off,
}

impl OnOff {
    /// `on` / `off`, as ethtool writes it.
    pub fn word(self) -> &'static str {
        match self {
            OnOff::On => "on",
            OnOff::Off => "off",
        }
    }
}

/// One device's features to set with `ethtool -K`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthtoolChange {
    /// The device, checked by [`check_dev`].
    pub dev: String,
    /// Feature (a [`FEATURES`] name) → state, by name.
    pub features: BTreeMap<String, OnOff>,
}

/// One runtime variant, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeVariant {
    /// Its name (`--variant`).
    pub name: String,
    /// One line for reports.
    pub description: String,
    /// `ethtool -K` changes, in file order; none for the kernel's defaults.
    pub ethtool: Vec<EthtoolChange>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuntimeFile {
    runtime: BTreeMap<String, RawVariant>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    #[serde(default)]
    description: String,
    #[serde(default)]
    ethtool: Vec<RawEthtool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEthtool {
    dev: String,
    features: BTreeMap<String, String>,
}

/// The name `ethtool -k` shows `feature` under, when it is allowed.
pub fn shown_as(feature: &str) -> Option<&'static str> {
    FEATURES
        .iter()
        .find(|(name, _)| *name == feature)
        .map(|(_, shown)| *shown)
}

/// Checks a network device name: what Linux accepts (1–15 bytes, not `.`
/// or `..`, no `/`, `:` or whitespace), and of those only letters, digits,
/// `.`, `_` and `-`, not starting with `-`.
pub fn check_dev(dev: &str) -> Result<()> {
    let problem = if dev.is_empty() {
        Some("it is empty".to_string())
    } else if dev.len() > MAX_DEV_LEN {
        Some(format!(
            "it has {} bytes, Linux allows {MAX_DEV_LEN}",
            dev.len()
        ))
    } else if dev == "." || dev == ".." {
        Some("Linux refuses . and ..".to_string())
    } else if dev.starts_with('-') {
        Some("it starts with '-', which ethtool would take for an option".to_string())
    } else {
        dev.chars()
            .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
            .map(|c| format!("it contains {c:?}"))
    };
    match problem {
        Some(why) => bail!(
            "device name {dev:?} is not one the lab uses: {why} (a Linux interface name: letters, digits, '-', '_', '.', up to {MAX_DEV_LEN} bytes)"
        ),
        None => Ok(()),
    }
}

/// Checks a feature name against [`FEATURES`].
pub fn check_feature(feature: &str) -> Result<()> {
    if shown_as(feature).is_none() {
        let short: Vec<&str> = FEATURES
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| !n.contains('-'))
            .collect();
        bail!(
            "feature {feature:?} is not one the lab sets; use an ethtool -K name such as {} (the list is FEATURES in xtask/src/inputs/runtime.rs)",
            short.join(", ")
        );
    }
    Ok(())
}

/// Reads and checks `file` (see the module docs).
pub fn load(file: &Path) -> Result<Vec<RuntimeVariant>> {
    let limit = crate::util::fs::FileLimit {
        what: "runtime variants file",
        max_bytes: crate::util::fs::MAX_INPUT_BYTES,
    };
    let text = crate::util::fs::read_limited(file, limit, "restore it from git")?;
    parse(&text).with_context(|| format!("{}: not a valid runtime variants file", file.display()))
}

/// Parses and checks the text of a runtime variants file.
pub fn parse(text: &str) -> Result<Vec<RuntimeVariant>> {
    let raw: RuntimeFile = toml_edit::de::from_str(text)?;
    let mut out = Vec::new();
    for (name, v) in raw.runtime {
        super::variants::check_name("runtime variant name", &name)?;
        let mut ethtool: Vec<EthtoolChange> = Vec::new();
        for e in v.ethtool {
            let at = || format!("[runtime.{name}] ethtool dev {:?}", e.dev);
            check_dev(&e.dev).with_context(at)?;
            if ethtool.iter().any(|x| x.dev == e.dev) {
                bail!("{}: the device appears twice; give it one entry", at());
            }
            if e.features.is_empty() {
                bail!("{}: no features", at());
            }
            let mut features = BTreeMap::new();
            let mut shown: BTreeMap<&str, &str> = BTreeMap::new();
            for (feature, value) in &e.features {
                check_feature(feature).with_context(at)?;
                let state = match value.as_str() {
                    "on" => OnOff::On,
                    "off" => OnOff::Off,
                    _ => bail!(
                        "{}: feature {feature} = {value:?}; use \"on\" or \"off\"",
                        at()
                    ),
                };
                let as_shown = shown_as(feature).unwrap_or(feature);
                if let Some(other) = shown.insert(as_shown, feature) {
                    bail!(
                        "{}: {other} and {feature} are the same feature ({as_shown}); set it once",
                        at()
                    );
                }
                features.insert(feature.clone(), state);
            }
            ethtool.push(EthtoolChange {
                dev: e.dev,
                features,
            });
        }
        out.push(RuntimeVariant {
            name,
            description: v.description,
            ethtool,
        });
    }
    Ok(out)
}

/// The variants called `names`, in that order; an unknown name is an
/// error listing the file's variants.
pub fn select(
    all: &[RuntimeVariant],
    names: &[String],
    file: &Path,
) -> Result<Vec<RuntimeVariant>> {
    let mut out: Vec<RuntimeVariant> = Vec::new();
    for name in names {
        let Some(v) = all.iter().find(|v| v.name == *name) else {
            let known: Vec<&str> = all.iter().map(|v| v.name.as_str()).collect();
            bail!(
                "no runtime variant {name:?} in {}; it has {}",
                file.display(),
                known.join(", ")
            );
        };
        if out.iter().any(|o| o.name == *name) {
            bail!("--variant {name} is given twice");
        }
        out.push(v.clone());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[runtime.baseline]
description = "defaults"

[runtime.lo-no-tso-gso]
description = "loopback without TSO and GSO"
ethtool = [{ dev = "lo", features = { tso = "off", gso = "off" } }]
"#;

    fn one(dev: &str, features: &str) -> Result<Vec<RuntimeVariant>> {
        parse(&format!(
            "[runtime.x]\nethtool = [{{ dev = {dev:?}, features = {{ {features} }} }}]\n"
        ))
    }

    #[test]
    fn the_example_reads() {
        let v = parse(GOOD).unwrap();
        assert_eq!(v.len(), 2);
        let lo = &v[1];
        assert_eq!(lo.name, "lo-no-tso-gso");
        assert_eq!(lo.ethtool[0].dev, "lo");
        assert_eq!(lo.ethtool[0].features["tso"], OnOff::Off);
        assert_eq!(lo.ethtool[0].features["gso"], OnOff::Off);
        assert!(v[0].ethtool.is_empty());
        let chosen = select(&v, &["lo-no-tso-gso".to_string()], Path::new("f")).unwrap();
        assert_eq!(chosen[0].name, "lo-no-tso-gso");
        let err = select(&v, &["nope".to_string()], Path::new("f")).unwrap_err();
        assert!(err.to_string().contains("baseline, lo-no-tso-gso"), "{err}");
    }

    #[test]
    fn hostile_device_names_are_refused() {
        for dev in [
            "",
            "eth0; reboot",
            "a/b",
            "..",
            ".",
            "a b",
            "tab\tx",
            "new\nline",
            "sixteen-chars-xx",
            "-K",
            "--help",
            "lo:0",
            "é",
            "$(id)",
            "`id`",
        ] {
            let r = one(dev, r#"tso = "off""#);
            let msg = format!(
                "{:#}",
                r.err().unwrap_or_else(|| panic!("{dev:?} accepted"))
            );
            assert!(msg.contains("device name"), "{dev:?}: {msg}");
        }
        for dev in ["lo", "veth0", "eth0.100", "wan_1", "fifteen-chars-x"] {
            one(dev, r#"tso = "off""#).unwrap_or_else(|e| panic!("{dev:?}: {e:#}"));
        }
    }

    #[test]
    fn unknown_features_and_values_are_refused() {
        let msg = format!("{:#}", one("lo", r#"tsoo = "off""#).unwrap_err());
        assert!(
            msg.contains("feature \"tsoo\"") && msg.contains("tso"),
            "{msg}"
        );
        let msg = format!("{:#}", one("lo", r#""tso off gso" = "off""#).unwrap_err());
        assert!(msg.contains("is not one the lab sets"), "{msg}");
        let msg = format!("{:#}", one("lo", r#"tso = "false""#).unwrap_err());
        assert!(msg.contains("use \"on\" or \"off\""), "{msg}");
        let msg = format!("{:#}", one("lo", r#"tso = false"#).unwrap_err());
        assert!(msg.contains("string"), "{msg}");
        let msg = format!(
            "{:#}",
            one("lo", r#"tso = "off", tcp-segmentation-offload = "off""#).unwrap_err()
        );
        assert!(msg.contains("same feature"), "{msg}");
        let msg = format!("{:#}", one("lo", "").unwrap_err());
        assert!(msg.contains("no features"), "{msg}");
    }

    #[test]
    fn bad_names_and_keys_are_refused() {
        assert!(parse("[runtime.\"a b\"]\n").is_err());
        assert!(parse("[runtime.x]\nshell = \"ethtool -K lo tso off\"\n").is_err());
        assert!(parse("[runtime.x]\nethtool = [{ dev = \"lo\", features = { tso = \"off\" } }, { dev = \"lo\", features = { gso = \"off\" } }]\n").is_err());
    }

    #[test]
    fn the_repository_file_is_valid_and_has_the_experiment() {
        let file = crate::util::layout::Layout::from_manifest_dir().runtime_variants_file();
        let all = load(&file).unwrap();
        let names: Vec<&str> = all.iter().map(|v| v.name.as_str()).collect();
        assert!(
            names.contains(&BASELINE) && names.contains(&"lo-no-tso-gso"),
            "{names:?}"
        );
        let base = all.iter().find(|v| v.name == BASELINE).unwrap();
        assert!(base.ethtool.is_empty(), "baseline changes nothing");
    }
}
