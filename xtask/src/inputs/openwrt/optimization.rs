//! The kernel optimization level (`-O2` or `-Os`) OpenWrt builds a
//! target with.
//!
//! config/Config-kernel.in declares it as a choice:
//!
//! ```text
//! choice
//!     prompt "Compiler optimization level"
//!     default KERNEL_CC_OPTIMIZE_FOR_SIZE if SMALL_FLASH
//! config KERNEL_CC_OPTIMIZE_FOR_PERFORMANCE
//! config KERNEL_CC_OPTIMIZE_FOR_SIZE
//! endchoice
//! ```
//!
//! Kconfig takes the first `default` whose condition holds, else the
//! choice's first entry: `-O2` unless `SMALL_FLASH`. A target selects
//! `SMALL_FLASH` when `small_flash` is among its FEATURES
//! (scripts/target-metadata.pl): the board Makefile's `FEATURES`, then its
//! subtarget's `target.mk` (include/target.mk includes it where the board
//! Makefile includes `$(INCLUDE_DIR)/target.mk`). In the snapshot of
//! 2025-08 those are ath79/tiny, bcm47xx/legacy and ramips mt76x8, rt288x,
//! rt305x and rt3883. include/kernel-defaults.mk renames the checkout
//! `.config`'s `CONFIG_KERNEL_CC_OPTIMIZE_FOR_*` lines into the kernel's
//! `CONFIG_CC_OPTIMIZE_FOR_*`, after the `config-<kver>` files, so the
//! choice overrides what those files say
//! ([`super::kconfig::kernel_dot_config`]).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use anyhow::{Context, Result};

use super::{Checkout, OpenwrtTarget};

/// Where OpenWrt declares the kernel options of its own menu.
pub const CONFIG_KERNEL: &str = "config/Config-kernel.in";

/// The kernel Makefile's two optimization branches, which
/// 201-extra_optimization.patch gives a variant's `o2` and `os` flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// `CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE`: `-O2`.
    O2,
    /// `CONFIG_CC_OPTIMIZE_FOR_SIZE`: `-Os`.
    Os,
}

impl Level {
    /// The kernel's symbol for this branch, without `CONFIG_`.
    pub fn kernel_symbol(self) -> &'static str {
        match self {
            Level::O2 => "CC_OPTIMIZE_FOR_PERFORMANCE",
            Level::Os => "CC_OPTIMIZE_FOR_SIZE",
        }
    }

    /// The kernel `.config` lines that choose this level: its symbol set,
    /// the other one not set.
    pub fn kernel_config_lines(self) -> String {
        let other = match self {
            Level::O2 => Level::Os,
            Level::Os => Level::O2,
        };
        format!(
            "CONFIG_{}=y\n# CONFIG_{} is not set\n",
            self.kernel_symbol(),
            other.kernel_symbol()
        )
    }
}

impl fmt::Display for Level {
    /// The compiler flag: `-O2` or `-Os`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::O2 => "-O2",
            Level::Os => "-Os",
        })
    }
}

/// A target's level as Config-kernel.in's default gives it, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultLevel {
    /// The level.
    pub level: Level,
    /// Where it came from, for messages: the `default` line or the
    /// choice's first entry, and the FEATURES line that adds `small_flash`.
    pub why: String,
}

/// One word of a target's FEATURES and the line that added it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feature {
    /// The feature (`small_flash`).
    pub name: String,
    /// `target/linux/ath79/tiny/target.mk:2`.
    pub origin: String,
}

/// The FEATURES of `target` as the board Makefile and the subtarget's
/// `target.mk` set them (`FEATURES:=`, `=`, `?=` and `+=` lines, in
/// include order; see the module docs). Features include/target.mk derives
/// from the kernel config (`dt`, `usb`, …) are not among them.
///
/// Errors: a file that cannot be read (naming it).
pub fn features(checkout: &Checkout, target: &OpenwrtTarget) -> Result<Vec<Feature>> {
    let makefile = checkout.board_dir(&target.board).join("Makefile");
    let board = super::read_checkout_file(checkout.root(), &makefile)?;
    let include = board
        .lines()
        .position(|l| l.trim() == "include $(INCLUDE_DIR)/target.mk")
        .unwrap_or(board.lines().count());
    let mut out = Vec::new();
    let mut apply = |file: &Path, lines: &mut dyn Iterator<Item = (usize, &str)>| {
        for (n, line) in lines {
            let Some((op, value)) = features_assignment(line) else {
                continue;
            };
            let origin = format!("{}:{}", relative(checkout, file), n + 1);
            match op {
                "+=" => {}
                "?=" if !out.is_empty() => continue,
                _ => out.clear(),
            }
            out.extend(value.split_whitespace().map(|w| Feature {
                name: w.to_string(),
                origin: origin.clone(),
            }));
        }
    };
    apply(&makefile, &mut board.lines().enumerate().take(include));
    if let Some(dir) = target.subtarget_dir(checkout) {
        let file = dir.join("target.mk");
        let text = super::read_checkout_file(checkout.root(), &file)?;
        apply(&file, &mut text.lines().enumerate());
    }
    apply(&makefile, &mut board.lines().enumerate().skip(include));
    Ok(out)
}

/// The level OpenWrt's default configuration builds `target` with (see
/// the module docs); `None` when config/Config-kernel.in has no
/// "Compiler optimization level" choice (OpenWrt before 21.02), where the
/// `config-<kver>` files alone decide.
///
/// Errors: Config-kernel.in or a FEATURES file cannot be read, or a
/// `default` of the choice has a condition [`super::flags`] cannot
/// evaluate (naming the line).
pub fn default_level(checkout: &Checkout, target: &OpenwrtTarget) -> Result<Option<DefaultLevel>> {
    let file = checkout.root().join(CONFIG_KERNEL);
    let text = super::read_checkout_file(checkout.root(), &file)?;
    let Some(choice) = optimization_choice(&text) else {
        return Ok(None);
    };
    let features = features(checkout, target)?;
    let small = features.iter().find(|f| f.name == "small_flash");
    let dot_config = super::flags::read_dot_config(&checkout.root().join(".config"))?;
    let symbols: BTreeMap<String, bool> =
        super::flags::target_symbols(checkout, target, &dot_config)?
            .into_iter()
            .chain(small.map(|_| ("SMALL_FLASH".to_string(), true)))
            .collect();
    for ChoiceDefault {
        line,
        symbol,
        condition,
    } in &choice.defaults
    {
        let holds = match condition {
            None => true,
            Some(c) => super::flags::eval(c, &symbols)
                .with_context(|| format!("{CONFIG_KERNEL}:{line}: condition {c:?}"))?,
        };
        if !holds {
            continue;
        }
        let level = level_of(symbol).with_context(|| {
            format!("{CONFIG_KERNEL}:{line}: default {symbol} is not a level of the choice")
        })?;
        let because = match small {
            Some(f) if condition.is_some() => format!(", small_flash in FEATURES ({})", f.origin),
            _ => String::new(),
        };
        return Ok(Some(DefaultLevel {
            level,
            why: format!("{CONFIG_KERNEL}:{line}: default {symbol}{because}"),
        }));
    }
    let (line, symbol) = choice
        .entries
        .first()
        .with_context(|| format!("{CONFIG_KERNEL}: the optimization choice has no entry"))?;
    let level = level_of(symbol)
        .with_context(|| format!("{CONFIG_KERNEL}:{line}: {symbol} is not a level"))?;
    Ok(Some(DefaultLevel {
        level,
        why: format!(
            "{CONFIG_KERNEL}:{line}: the choice's first entry {symbol} (no default's condition holds{})",
            if small.is_none() {
                ", no small_flash in FEATURES"
            } else {
                ""
            }
        ),
    }))
}

/// One `default SYMBOL [if CONDITION]` line of a choice.
#[derive(Debug, Clone, Default)]
struct ChoiceDefault {
    /// 1-based line in Config-kernel.in.
    line: usize,
    symbol: String,
    condition: Option<String>,
}

/// The choice that holds `config KERNEL_CC_OPTIMIZE_FOR_PERFORMANCE`:
/// its defaults (before its first entry) and its entries (1-based line,
/// symbol), in order.
#[derive(Debug, Clone, Default)]
struct Choice {
    defaults: Vec<ChoiceDefault>,
    entries: Vec<(usize, String)>,
}

fn optimization_choice(text: &str) -> Option<Choice> {
    let mut current: Option<Choice> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let mut words = line.split_whitespace();
        match words.next() {
            Some("choice") => current = Some(Choice::default()),
            Some("endchoice") => {
                let choice = current.take()?;
                if choice
                    .entries
                    .iter()
                    .any(|(_, s)| s == "KERNEL_CC_OPTIMIZE_FOR_PERFORMANCE")
                {
                    return Some(choice);
                }
            }
            Some("config") => {
                if let (Some(c), Some(symbol)) = (current.as_mut(), words.next()) {
                    c.entries.push((i + 1, symbol.to_string()));
                }
            }
            Some("default") => {
                if let Some(c) = current.as_mut().filter(|c| c.entries.is_empty()) {
                    let rest = line["default".len()..].trim();
                    let (symbol, condition) = match rest.split_once(" if ") {
                        Some((s, cond)) => (s.trim(), Some(cond.trim().to_string())),
                        None => (rest, None),
                    };
                    c.defaults.push(ChoiceDefault {
                        line: i + 1,
                        symbol: symbol.to_string(),
                        condition,
                    });
                }
            }
            _ => {}
        }
    }
    None
}

fn level_of(symbol: &str) -> Option<Level> {
    match symbol {
        "KERNEL_CC_OPTIMIZE_FOR_PERFORMANCE" => Some(Level::O2),
        "KERNEL_CC_OPTIMIZE_FOR_SIZE" => Some(Level::Os),
        _ => None,
    }
}

/// `FEATURES` assignment of a make line: the operator (`:=`, `=`, `?=`,
/// `+=`) and the value.
fn features_assignment(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix("FEATURES")?.trim_start();
    ["+=", ":=", "?=", "="]
        .into_iter()
        .find_map(|op| rest.strip_prefix(op).map(|v| (op, v.trim())))
}

fn relative(checkout: &Checkout, file: &Path) -> String {
    file.strip_prefix(checkout.root())
        .unwrap_or(file)
        .display()
        .to_string()
}

/// A target's level from a `.config` that chooses one: the kernel's own
/// symbols, `CONFIG_CC_OPTIMIZE_FOR_SIZE=y` or `…_PERFORMANCE=y` (the last
/// such line wins, as Kconfig reads a `.config`); `None` when neither is set.
pub fn level_in_kernel_config(text: &str) -> Option<Level> {
    let mut level = None;
    for line in text.lines() {
        match line.trim() {
            "CONFIG_CC_OPTIMIZE_FOR_SIZE=y" => level = Some(Level::Os),
            "CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE=y" => level = Some(Level::O2),
            _ => {}
        }
    }
    level
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHOICE: &str = "menu x\nchoice\n\tprompt \"Compiler optimization level\"\n\
                          \tdefault KERNEL_CC_OPTIMIZE_FOR_SIZE if SMALL_FLASH\n\n\
                          config KERNEL_CC_OPTIMIZE_FOR_PERFORMANCE\n\tbool \"p\"\n\n\
                          config KERNEL_CC_OPTIMIZE_FOR_SIZE\n\tbool \"s\"\n\nendchoice\n";

    fn checkout(board_makefile: &str, target_mk: &str) -> (tempfile::TempDir, Checkout) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("target/linux/generic")).unwrap();
        std::fs::create_dir_all(root.join("target/linux/b/s")).unwrap();
        std::fs::create_dir_all(root.join("config")).unwrap();
        std::fs::write(root.join("target/linux/b/Makefile"), board_makefile).unwrap();
        std::fs::write(root.join("target/linux/b/s/target.mk"), target_mk).unwrap();
        std::fs::write(root.join(CONFIG_KERNEL), CHOICE).unwrap();
        std::fs::write(
            root.join("config/Config-devel.in"),
            "config EXTRA_OPTIMIZATION\n\tstring\n",
        )
        .unwrap();
        let c = Checkout::open(root).unwrap();
        (dir, c)
    }

    fn target() -> OpenwrtTarget {
        OpenwrtTarget {
            board: "b".into(),
            subtarget: Some("s".into()),
        }
    }

    #[test]
    fn small_flash_from_either_file_chooses_os() {
        for (board, sub, want) in [
            ("FEATURES:=squashfs\n", "FEATURES += low_mem\n", Level::O2),
            (
                "FEATURES:=squashfs\n",
                "FEATURES += small_flash\n",
                Level::Os,
            ),
            ("FEATURES:=small_flash\n", "", Level::Os),
            // The subtarget's `:=` replaces the board's list.
            ("FEATURES:=small_flash\n", "FEATURES:=usb\n", Level::O2),
            // After the include of target.mk, the board's line comes last.
            (
                "include $(INCLUDE_DIR)/target.mk\nFEATURES+=small_flash\n",
                "FEATURES:=usb\n",
                Level::Os,
            ),
        ] {
            let (_dir, c) = checkout(board, sub);
            let got = default_level(&c, &target()).unwrap().unwrap();
            assert_eq!(got.level, want, "{board:?} {sub:?}: {}", got.why);
            assert!(got.why.contains(CONFIG_KERNEL), "{}", got.why);
        }
        let (_dir, c) = checkout("FEATURES:=squashfs\n", "FEATURES+=small_flash\n");
        let why = default_level(&c, &target()).unwrap().unwrap().why;
        assert!(why.contains("target/linux/b/s/target.mk:1"), "{why}");
        assert!(
            why.contains(":4: default KERNEL_CC_OPTIMIZE_FOR_SIZE"),
            "{why}"
        );
    }

    #[test]
    fn no_choice_no_default() {
        let (_dir, c) = checkout("FEATURES:=small_flash\n", "");
        std::fs::write(c.root().join(CONFIG_KERNEL), "config KERNEL_X\n\tbool\n").unwrap();
        assert_eq!(default_level(&c, &target()).unwrap(), None);
    }

    #[test]
    fn kernel_config_lines_and_the_level_they_choose() {
        for level in [Level::O2, Level::Os] {
            assert_eq!(
                level_in_kernel_config(&level.kernel_config_lines()),
                Some(level)
            );
        }
        assert_eq!(level_in_kernel_config("CONFIG_X=y\n"), None);
        assert_eq!(Level::O2.to_string(), "-O2");
    }
}
