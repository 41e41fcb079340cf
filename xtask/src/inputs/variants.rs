//! Build variants: `patches/variants.toml`.
//!
//! A variant is what one side of an A/B comparison changes: the KBUILD_CFLAGS
//! of the `-Os` and `-O2` branches (written into
//! `201-extra_optimization.patch`), extra patches, and extra kconfig lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::inputs::cflags;
use crate::util::text::printable;

/// The name of the variant whose flags others inherit.
pub const BASELINE: &str = "baseline";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VariantsFile {
    variants: BTreeMap<String, RawVariant>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    #[serde(default)]
    description: String,
    os: Option<String>,
    o2: Option<String>,
    #[serde(default)]
    patches: Vec<String>,
    #[serde(default)]
    kconfig: Vec<String>,
}

/// One fully resolved variant (flags inherited from `baseline` filled in).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// Name used on the command line and in results paths.
    pub name: String,
    /// One line for reports.
    pub description: String,
    /// KBUILD_CFLAGS of the `CONFIG_CC_OPTIMIZE_FOR_SIZE` branch, e.g. `-Os -fno-tree-ch`.
    pub os_flags: String,
    /// KBUILD_CFLAGS of the `CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE` branch.
    pub o2_flags: String,
    /// Extra patches (absolute paths), applied after the target's patches, in order.
    pub patches: Vec<PathBuf>,
    /// Extra kconfig lines (`CONFIG_FOO=y`, `# CONFIG_BAR is not set`).
    pub kconfig: Vec<String>,
}

impl Variant {
    /// Every distinct compiler flag of both branches, in order of appearance.
    pub fn all_flags(&self) -> Vec<&str> {
        let mut flags: Vec<&str> = Vec::new();
        for flag in self
            .os_flags
            .split_whitespace()
            .chain(self.o2_flags.split_whitespace())
        {
            if !flags.contains(&flag) {
                flags.push(flag);
            }
        }
        flags
    }
}

/// `cargo xtask flags list`: prints [`list_text`].
pub fn print_list(file: &Path, patches_dir: &Path) -> Result<()> {
    print!("{}", list_text(file, patches_dir)?);
    Ok(())
}

/// Each variant with its flags, patches and kconfig lines, one item a
/// line, with control characters escaped ([`printable`]): a description
/// holding an escape sequence is shown, not run by the terminal.
pub fn list_text(file: &Path, patches_dir: &Path) -> Result<String> {
    use std::fmt::Write;
    let mut out = String::new();
    for v in load(file, patches_dir)? {
        let _ = writeln!(out, "{}: {}", v.name, printable(&v.description));
        let _ = writeln!(out, "    -Os branch: {}", v.os_flags);
        let _ = writeln!(out, "    -O2 branch: {}", v.o2_flags);
        for p in &v.patches {
            let _ = writeln!(out, "    patch: {}", printable(&p.display().to_string()));
        }
        for k in &v.kconfig {
            let _ = writeln!(out, "    kconfig: {}", printable(k));
        }
    }
    Ok(out)
}

/// Reads `variants.toml`; patch paths are resolved against `patches_dir`.
///
/// Errors name the file and the variant: an unknown key, a missing
/// `baseline` when another variant omits its flags, a patch that does not
/// exist, a kconfig line that is not `CONFIG_X=…` or `# CONFIG_X is not set`,
/// and an `os`/`o2` flag that [`crate::inputs::cflags::validate`] refuses
/// (then also the line and column of the offending character).
pub fn load(file: &Path, patches_dir: &Path) -> Result<Vec<Variant>> {
    let limit = crate::util::fs::FileLimit {
        what: "variants file",
        max_bytes: crate::util::fs::MAX_INPUT_BYTES,
    };
    let text = crate::util::fs::read_limited(file, limit, "restore it from git")?;
    parse(&text, file, patches_dir)
}

fn parse(text: &str, file: &Path, patches_dir: &Path) -> Result<Vec<Variant>> {
    let raw: VariantsFile = toml_edit::de::from_str(text)
        .with_context(|| format!("{}: not a valid variants file", file.display()))?;
    check_flags(text, file, &raw)?;
    let baseline = raw.variants.get(BASELINE);
    let mut variants = Vec::new();
    for (name, v) in &raw.variants {
        // `variants.toml:LINE`, the line of the variant's table or of
        // `needle` in it, for the errors below.
        let at = |needle: &str| {
            format!(
                "{}:{}",
                file.display(),
                variant_line(text, name, needle).map_or(String::new(), |l| l.to_string())
            )
        };
        check_name("variant name", name)
            .with_context(|| format!("{}: [variants.{name:?}]", at("")))?;
        let inherited = |own: &Option<String>, pick: fn(&RawVariant) -> &Option<String>| {
            own.clone()
                .or_else(|| baseline.and_then(|b| pick(b).clone()))
                .with_context(|| {
                    format!(
                        "{}: variant {name:?} sets no os/o2 flags and there is no [variants.{BASELINE}] with flags to inherit",
                        file.display()
                    )
                })
        };
        let os_flags = inherited(&v.os, |b| &b.os)?;
        let o2_flags = inherited(&v.o2, |b| &b.o2)?;
        let mut patches = Vec::new();
        for p in &v.patches {
            if let Some(why) = crate::util::path::unsafe_reason(Path::new(p)) {
                bail!(
                    "{}: variant {name:?} lists patch {p:?} ({why}); name a file under {} by its relative path",
                    at(p),
                    patches_dir.display()
                );
            }
            let path = patches_dir.join(p);
            if !path.is_file() {
                bail!(
                    "{}: variant {name:?} lists patch {p:?}, but {} does not exist",
                    at(p),
                    path.display()
                );
            }
            patches.push(path);
        }
        for line in &v.kconfig {
            if let Some(c) = line
                .chars()
                .find(|c| matches!(c, '$' | '`' | '\n' | '\r' | '\0'))
            {
                bail!(
                    "{}: variant {name:?} has kconfig line {line:?} with {c:?}, which make or the shell would expand from .config; \
                     put such settings in a fragment under targets/kconfig/ after checking them",
                    at(line.split('=').next().unwrap_or(line))
                );
            }
            if crate::inputs::kconfig::parse_line(line).is_none() {
                bail!(
                    "{}: variant {name:?} has kconfig line {line:?}; write CONFIG_FOO=y or \"# CONFIG_FOO is not set\"",
                    at(line.split('=').next().unwrap_or(line))
                );
            }
        }
        variants.push(Variant {
            name: name.clone(),
            description: v.description.clone(),
            os_flags,
            o2_flags,
            patches,
            kconfig: v.kconfig.clone(),
        });
    }
    Ok(variants)
}

/// The 1-based line of the first line containing `needle` in the table
/// `[variants.NAME]` (the header's own line when `needle` is empty or not
/// found there). `None` when the header is not found as written (an inline
/// or dotted table).
fn variant_line(text: &str, name: &str, needle: &str) -> Option<usize> {
    let headers = [
        format!("[variants.{name}]"),
        format!("[variants.\"{name}\"]"),
        format!("[variants.'{name}']"),
    ];
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| headers.iter().any(|h| l.trim() == h.as_str()))?;
    if !needle.is_empty() {
        for (i, l) in lines.iter().enumerate().skip(start + 1) {
            if l.trim_start().starts_with('[') {
                break;
            }
            if l.contains(needle) {
                return Some(i + 1);
            }
        }
    }
    Some(start + 1)
}

/// A variant name becomes a directory name (`results/<target>/<variant>/`,
/// removed and rebuilt by `build`): letters, digits, `.`, `_` and `-`, not
/// starting with `.` or `-`; `what` begins the error ("variant name").
pub(crate) fn check_name(what: &str, name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && !name.starts_with(['.', '-'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !ok {
        bail!(
            "{what} {name:?} is not a plain directory name; use letters, digits, '.', '_' and '-' (not first)"
        );
    }
    Ok(())
}

/// Every variant's own `os` and `o2` values through
/// [`cflags::validate`]; the error is located with toml_edit's spans.
fn check_flags(text: &str, file: &Path, raw: &VariantsFile) -> Result<()> {
    for (name, v) in &raw.variants {
        for (key, value) in [("os", &v.os), ("o2", &v.o2)] {
            let Some(value) = value else { continue };
            if let Err(problem) = cflags::validate(value) {
                let at = flag_location(text, name, key, value, problem.offset).map_or(
                    String::new(),
                    |(line, column)| match column {
                        Some(column) => format!(":{line}:{column}"),
                        None => format!(":{line}"),
                    },
                );
                bail!(
                    "{}{at}: variant {name:?}, key {key}: {problem}",
                    file.display()
                );
            }
        }
    }
    Ok(())
}

/// Where in `text` the character at byte `offset` of variant `name`'s
/// `key` value is: 1-based line and, when the value is written without
/// escapes on one line, 1-based column (in characters). `None` when the
/// document cannot be parsed with spans (serde parsed it already, so
/// this does not happen).
fn flag_location(
    text: &str,
    name: &str,
    key: &str,
    value: &str,
    offset: usize,
) -> Option<(usize, Option<usize>)> {
    let doc = toml_edit::Document::parse(text).ok()?;
    let span = doc.as_item().get("variants")?.get(name)?.get(key)?.span()?;
    let raw = text.get(span.clone())?;
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    // `"-Os ..."` or `'-Os ...'` with the value verbatim between the quotes.
    let verbatim = raw.len() == value.len() + 2 && &raw[1..raw.len() - 1] == value;
    if !verbatim || value[..offset].contains('\n') {
        return Some((line_of(span.start), None));
    }
    let at = span.start + 1 + offset;
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    Some((line_of(at), Some(text[line_start..at].chars().count() + 1)))
}

/// Picks variants by name, in the order given, each once; an unknown name
/// is an error listing the known ones.
pub fn select(all: &[Variant], names: &[String]) -> Result<Vec<Variant>> {
    let mut unique: Vec<&String> = Vec::new();
    for name in names {
        if !unique.contains(&name) {
            unique.push(name);
        }
    }
    unique
        .into_iter()
        .map(|name| {
            all.iter()
                .find(|v| &v.name == name)
                .cloned()
                .with_context(|| {
                    let known: Vec<&str> = all.iter().map(|v| v.name.as_str()).collect();
                    format!(
                        "unknown variant {name:?}; variants.toml defines: {}",
                        known.join(", ")
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_patches_and_kconfig_lines_that_would_escape_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("variants.toml");
        let base = "[variants.baseline]\ndescription = \"b\"\nos = \"-Os\"\no2 = \"-O2\"\n";
        for (extra, needle) in [
            ("[variants.\"../x\"]\ndescription = \"\"\n", "not a plain directory name"),
            ("[variants.\".hidden\"]\ndescription = \"\"\n", "not a plain directory name"),
            (
                "[variants.p]\ndescription = \"\"\npatches = [\"../../etc/passwd\"]\n",
                "contains '..'",
            ),
            (
                "[variants.p]\ndescription = \"\"\npatches = [\"/etc/passwd\"]\n",
                "absolute path",
            ),
            (
                "[variants.k]\ndescription = \"\"\nkconfig = [\"CONFIG_CMDLINE=\\\"$(shell touch x)\\\"\"]\n",
                "which make or the shell would expand",
            ),
        ] {
            let text = format!("{base}{extra}");
            let err = format!("{:#}", parse(&text, &file, dir.path()).unwrap_err());
            assert!(err.contains(needle), "{text}\n{err}");
            // Line 5 is the table's header, line 7 the offending value's.
            let want = if extra.contains("patches") || extra.contains("kconfig") {
                "variants.toml:7:"
            } else {
                "variants.toml:5:"
            };
            assert!(err.contains(want), "{text}\n{err}");
            assert!(err.contains("variants.toml"), "{err}");
        }
    }

    /// `flags list` escapes a description's terminal control characters;
    /// before, they reached the terminal raw.
    #[test]
    fn the_list_escapes_control_characters() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("variants.toml");
        std::fs::write(
            &file,
            "[variants.baseline]\ndescription = \"\\u001b[2J\\u001b]0;owned\\u0007red\\r\"\nos = \"-Os\"\no2 = \"-O2\"\nkconfig = [\"CONFIG_X=\\u001b[1m\"]\n",
        )
        .unwrap();
        let text = list_text(&file, dir.path()).unwrap();
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(
            text.starts_with("baseline: \\u{1b}[2J\\u{1b}]0;owned\\u{7}red\\r\n"),
            "{text}"
        );
        assert!(text.contains("kconfig: CONFIG_X=\\u{1b}[1m"), "{text}");
    }

    #[test]
    fn project_variants_have_the_rfc_flags() {
        let layout = crate::util::layout::Layout::from_manifest_dir();
        let all = load(&layout.variants_file(), &layout.patches_dir()).unwrap();
        let picked = select(
            &all,
            &["baseline".to_string(), "no-reorder-blocks".to_string()],
        )
        .unwrap();
        assert!(picked[0].os_flags.contains("-fno-reorder-blocks"));
        assert!(!picked[1].os_flags.contains("-fno-reorder-blocks"));
        assert!(picked[1].os_flags.contains("-fno-tree-ch"));
    }

    #[test]
    fn flags_inherit_from_baseline_and_errors_name_the_variant() {
        let text = r#"
[variants.baseline]
os = "-Os -fno-tree-ch"
o2 = "-O2"
[variants.more-config]
kconfig = ["CONFIG_SMP=y"]
[variants.bad]
kconfig = ["SMP=y"]
"#;
        let err = parse(text, Path::new("v.toml"), Path::new("/nonexistent")).unwrap_err();
        assert!(format!("{err:#}").contains("\"bad\""), "{err:#}");
        let ok = parse(
            &text.replace("SMP=y\"]\n", "CONFIG_X=y\"]\n"),
            Path::new("v.toml"),
            Path::new("/nonexistent"),
        )
        .unwrap();
        let more = ok.iter().find(|v| v.name == "more-config").unwrap();
        assert_eq!(more.os_flags, "-Os -fno-tree-ch");
        assert_eq!(more.all_flags(), vec!["-Os", "-fno-tree-ch", "-O2"]);
    }

    /// Hostile flags are refused when variants.toml is loaded, with the
    /// file, the line (and column when written verbatim) and the character.
    #[test]
    fn hostile_flags_name_file_line_and_character() {
        let cases: &[(&str, &str, &str)] = &[
            (
                r#"os = "-Os -DX=`touch$${IFS}pwned`""#,
                ":6:15:",
                "'`' (backtick",
            ),
            (
                r#"os = "-Os -DX=$(shell touch pwned)""#,
                ":6:15:",
                "'$' (dollar sign",
            ),
            (r#"o2 = "-O2 -DX=$$HOME""#, ":6:15:", "'$' (dollar sign"),
            (r#"os = "-Os\n-fno-tree-ch""#, ":6:", "'\\n' (newline"),
            (
                "os = \"\"\"\n-Os\n-fno-tree-ch\"\"\"",
                ":6:",
                "'\\n' (newline",
            ),
            (r#"os = "-Os; touch pwned""#, ":6:10:", "';' (semicolon"),
            (r#"os = '-Os #-fno-tree-ch'"#, ":6:11:", "'#' (hash"),
        ];
        for &(line, at, character) in cases {
            let text = format!(
                "# comment\n[variants.baseline]\nos = \"-Os\"\no2 = \"-O2\"\n[variants.evil]\n{line}\n"
            );
            let err = parse(&text, Path::new("patches/variants.toml"), Path::new("/x"))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!(
                    "patches/variants.toml{at} variant \"evil\", key o"
                )),
                "{line}: {err}"
            );
            assert!(err.contains(character), "{line}: {err}");
            assert!(err.contains("Remove the character"), "{line}: {err}");
        }
    }
}
