//! A runtime variant's `ethtool -K` settings, applied inside the host
//! lab's namespace and read back with `ethtool -k`.
//!
//! ethtool does not always say when a setting did not take: `ethtool -K lo
//! tx off` exits 0 on Linux 6.x while `tx-checksumming` stays on (its
//! generic checksum bit is fixed), `rx off` exits 1 with "Actual changes:
//! rx-checksum: on [requested off]". So every setting is read back, and
//! any feature that is not what the variant asked for stops the lab,
//! naming it, whether it is `[fixed]`, and what ethtool said.

use std::collections::BTreeMap;

use anyhow::{bail, Result};

use crate::inputs::runtime::{shown_as, EthtoolChange, RuntimeVariant};
use crate::lab::net::Namespace;

/// One feature as `ethtool -k` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureState {
    /// `on` or `off`.
    pub value: String,
    /// Marked `[fixed]`: the driver does not let it change.
    pub fixed: bool,
}

/// Parses `ethtool -k DEV` output: feature name (as shown, sub-features
/// too) → its state.
pub fn parse_k(text: &str) -> BTreeMap<String, FeatureState> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line.trim().split_once(": ") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let Some(value @ ("on" | "off")) = words.next() else {
            continue;
        };
        out.insert(
            name.to_string(),
            FeatureState {
                value: value.to_string(),
                fixed: rest.contains("[fixed]"),
            },
        );
    }
    out
}

/// `ethtool -k dev` in `ns`, parsed.
pub fn read(ns: &Namespace, dev: &str) -> Result<BTreeMap<String, FeatureState>> {
    Ok(parse_k(&ns.run("ethtool", &["-k", dev])?))
}

/// What in `shown` differs from `change`, one phrase each; empty when
/// every feature is as asked.
pub fn differences(change: &EthtoolChange, shown: &BTreeMap<String, FeatureState>) -> Vec<String> {
    let mut out = Vec::new();
    for (feature, want) in &change.features {
        let name = shown_as(feature).unwrap_or(feature);
        match shown.get(name) {
            None => out.push(format!(
                "{}: ethtool -k shows no {name} (the kernel may not have it any more)",
                change.dev
            )),
            Some(s) if s.value != want.word() => out.push(format!(
                "{}: {name} is {} after `ethtool -K {} {feature} {}`{}",
                change.dev,
                s.value,
                change.dev,
                want.word(),
                if s.fixed {
                    " [fixed]: the driver does not let it change"
                } else {
                    ""
                }
            )),
            Some(_) => {}
        }
    }
    out
}

/// Applies `variant` in `ns`: one `ethtool -K dev feature on|off …` per
/// device (arguments, no shell), then reads each device back. Fails
/// naming every feature that did not take, with ethtool's own message.
pub fn apply(ns: &Namespace, variant: &RuntimeVariant) -> Result<()> {
    for change in &variant.ethtool {
        let mut args: Vec<&str> = vec!["-K", &change.dev];
        for (feature, state) in &change.features {
            args.push(feature);
            args.push(state.word());
        }
        let said = ns.run("ethtool", &args).err();
        let wrong = differences(change, &read(ns, &change.dev)?);
        let ethtool = said.map_or(String::new(), |e| format!("\nethtool said: {e:#}"));
        if !wrong.is_empty() {
            bail!(
                "runtime variant {} did not take in {}:\n  {}{ethtool}",
                variant.name,
                ns.name,
                wrong.join("\n  ")
            );
        }
        if !ethtool.is_empty() {
            bail!(
                "runtime variant {}: ethtool failed in {} though the features read back as asked{ethtool}",
                variant.name,
                ns.name
            );
        }
    }
    Ok(())
}

/// The features any of `variants` sets, by device: what every run reads
/// back, so that the base's runs record the defaults the others change.
pub fn watched(variants: &[RuntimeVariant]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for change in variants.iter().flat_map(|v| &v.ethtool) {
        let names = out.entry(change.dev.clone()).or_default();
        for feature in change.features.keys() {
            let name = shown_as(feature).unwrap_or(feature).to_string();
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    out
}

/// Reads every `watched` feature in `ns` (device → shown name → `on` /
/// `off`, `?` when `ethtool -k` does not show it), and checks `variant`'s
/// settings still hold.
pub fn snapshot(
    ns: &Namespace,
    watched: &BTreeMap<String, Vec<String>>,
    variant: &RuntimeVariant,
) -> Result<BTreeMap<String, BTreeMap<String, String>>> {
    let mut out = BTreeMap::new();
    for (dev, names) in watched {
        let shown = read(ns, dev)?;
        for change in variant.ethtool.iter().filter(|c| c.dev == *dev) {
            let wrong = differences(change, &shown);
            if !wrong.is_empty() {
                bail!(
                    "runtime variant {} no longer holds in {}:\n  {}",
                    variant.name,
                    ns.name,
                    wrong.join("\n  ")
                );
            }
        }
        let values = names
            .iter()
            .map(|n| {
                let v = shown.get(n).map_or("?", |s| s.value.as_str());
                (n.clone(), v.to_string())
            })
            .collect();
        out.insert(dev.clone(), values);
    }
    Ok(out)
}

/// `variant`'s settings as `lab.json` records them.
pub fn record(variant: &RuntimeVariant) -> crate::results::lab::RuntimeSettings {
    crate::results::lab::RuntimeSettings {
        description: variant.description.clone(),
        ethtool: variant
            .ethtool
            .iter()
            .map(|c| crate::results::lab::EthtoolSetting {
                dev: c.dev.clone(),
                features: c
                    .features
                    .iter()
                    .map(|(f, s)| (f.clone(), s.word().to_string()))
                    .collect(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::runtime::OnOff;

    const LO: &str = "Features for lo:\nrx-checksumming: on [fixed]\ntx-checksumming: on\n\
        \ttx-checksum-ip-generic: on [fixed]\nscatter-gather: on\n\
        tcp-segmentation-offload: off\n\ttx-tcp-segmentation: off\n\
        generic-segmentation-offload: off\ngeneric-receive-offload: on\n\
        large-receive-offload: off [fixed]\n";

    fn change(features: &[(&str, OnOff)]) -> EthtoolChange {
        EthtoolChange {
            dev: "lo".to_string(),
            features: features.iter().map(|(f, s)| (f.to_string(), *s)).collect(),
        }
    }

    #[test]
    fn ethtool_k_output_parses() {
        let k = parse_k(LO);
        assert_eq!(k["tcp-segmentation-offload"].value, "off");
        assert!(k["rx-checksumming"].fixed);
        assert!(!k["tx-checksumming"].fixed);
        assert_eq!(k["tx-tcp-segmentation"].value, "off");
        assert!(!k.contains_key("Features for lo"));
    }

    #[test]
    fn a_setting_that_did_not_take_is_named() {
        let k = parse_k(LO);
        let ok = change(&[("tso", OnOff::Off), ("gso", OnOff::Off)]);
        assert!(differences(&ok, &k).is_empty());
        let fixed = differences(&change(&[("lro", OnOff::On)]), &k);
        assert_eq!(fixed.len(), 1);
        assert!(fixed[0].contains("large-receive-offload is off") && fixed[0].contains("[fixed]"));
        let quiet = differences(&change(&[("tx", OnOff::Off)]), &k);
        assert!(quiet[0].contains("tx-checksumming is on"), "{quiet:?}");
        let gone = differences(&change(&[("ufo", OnOff::Off)]), &k);
        assert!(
            gone[0].contains("shows no udp-fragmentation-offload"),
            "{gone:?}"
        );
    }

    #[test]
    fn every_arm_reads_back_what_any_arm_sets() {
        let v = |name: &str, ethtool: Vec<EthtoolChange>| RuntimeVariant {
            name: name.to_string(),
            description: String::new(),
            ethtool,
        };
        let w = watched(&[
            v("baseline", vec![]),
            v(
                "a",
                vec![change(&[("tso", OnOff::Off), ("gso", OnOff::Off)])],
            ),
            v(
                "b",
                vec![change(&[("tcp-segmentation-offload", OnOff::Off)])],
            ),
        ]);
        assert_eq!(
            w["lo"],
            ["generic-segmentation-offload", "tcp-segmentation-offload"]
        );
    }
}
