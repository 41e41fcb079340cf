//! Where a device's `KERNEL` recipe is written: for error messages that
//! name `file:line`. make evaluates the recipe ([`super::evaluate`]); this
//! only finds the assignment make used, by reading the `define Device/…`
//! blocks of the board's `image/` directory in expansion order.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// A line of a Makefile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The file.
    pub file: PathBuf,
    /// 1-based line number.
    pub line: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// One `define Device/<name>` block: where each body line is.
#[derive(Debug, Clone)]
struct Block {
    file: PathBuf,
    /// (line number, text) of each body line.
    lines: Vec<(usize, String)>,
}

/// The line of the `KERNEL :=` (or `=`) assignment in effect for `device`:
/// the last one in the order image.mk's `Device` expands them —
/// `Device/Default`, then `Device/<device>` with every `$(Device/x)` or
/// `$(call Device/x…)` it contains expanded in place. Blocks are read
/// from `image_dir`'s `Makefile` and `*.mk` files (a name defined twice:
/// the `Makefile`'s, then the files' by name, the last read wins).
/// `None` when no block assigns `KERNEL`.
pub fn kernel_origin(image_dir: &Path, device: &str) -> Result<Option<Origin>> {
    let blocks = read_blocks(image_dir)?;
    let mut found = None;
    let mut seen = Vec::new();
    for name in ["Default", device] {
        walk(&blocks, name, &mut found, &mut seen);
    }
    Ok(found)
}

fn walk(
    blocks: &BTreeMap<String, Block>,
    name: &str,
    found: &mut Option<Origin>,
    seen: &mut Vec<String>,
) {
    // A definition that (indirectly) includes itself would make make loop
    // too; stop there.
    if seen.iter().any(|s| s == name) {
        return;
    }
    let Some(block) = blocks.get(name) else {
        return;
    };
    seen.push(name.to_string());
    for (line, text) in &block.lines {
        if assigns_kernel(text) {
            *found = Some(Origin {
                file: block.file.clone(),
                line: *line,
            });
        }
        for inner in called_devices(text) {
            walk(blocks, &inner, found, seen);
        }
    }
    seen.pop();
}

/// `KERNEL := …`, `KERNEL = …`, `KERNEL ?= …`, not `KERNEL_NAME` or
/// `KERNEL/x`.
fn assigns_kernel(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix("KERNEL") else {
        return false;
    };
    let rest = rest.trim_start();
    rest.starts_with(":=") || rest.starts_with('=') || rest.starts_with("?=")
}

/// The names `x` of `$(Device/x)` and `$(call Device/x,…)` in `line`.
fn called_devices(line: &str) -> Vec<String> {
    let mut names = Vec::new();
    for prefix in ["$(Device/", "$(call Device/"] {
        let mut rest = line;
        while let Some(i) = rest.find(prefix) {
            rest = &rest[i + prefix.len()..];
            let end = rest.find([')', ',']).unwrap_or(rest.len());
            names.push(rest[..end].trim().to_string());
        }
    }
    names
}

/// Every `define Device/<name>` … `endef` of `image_dir`'s Makefile and `*.mk`.
fn read_blocks(image_dir: &Path) -> Result<BTreeMap<String, Block>> {
    let mut files = vec![image_dir.join("Makefile")];
    let mut mk: Vec<PathBuf> = std::fs::read_dir(image_dir)
        .with_context(|| format!("reading {}", image_dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "mk") && p.is_file())
        .collect();
    mk.sort();
    files.extend(mk);
    let mut blocks = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let mut current: Option<(String, Block)> = None;
        for (i, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if let Some(name) = trimmed.strip_prefix("define Device/") {
                current = Some((
                    name.trim().to_string(),
                    Block {
                        file: file.clone(),
                        lines: Vec::new(),
                    },
                ));
            } else if trimmed == "endef" {
                if let Some((name, block)) = current.take() {
                    blocks.insert(name, block);
                }
            } else if let Some((_, block)) = current.as_mut() {
                block.lines.push((i + 1, line.to_string()));
            }
        }
    }
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_assignment_in_expansion_order_wins() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("Makefile"),
            "define Device/Default\n  KERNEL := a\n  KERNEL_NAME := x\nendef\n\
             define Device/common\n  KERNEL/x := y\n  KERNEL = b\nendef\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("sub.mk"),
            "define Device/one\n  $(Device/common)\nendef\n\
             define Device/two\n  KERNEL := c\n  $(call Device/common,$(1))\nendef\n\
             define Device/three\n  DEVICE_MODEL := 3\nendef\n",
        )
        .unwrap();
        let at = |d: &str| kernel_origin(dir.path(), d).unwrap().unwrap();
        assert_eq!(at("one").line, 7);
        assert!(at("one").file.ends_with("Makefile"));
        assert_eq!(at("two").line, 7);
        assert_eq!(at("three").line, 2);
        assert!(at("three").to_string().ends_with("Makefile:2"));
    }
}
