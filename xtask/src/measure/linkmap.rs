//! Where vmlinux's bytes come from: GNU ld's link map (`ld -Map`, the
//! kernel's `CONFIG_VMLINUX_MAP`) read into, for every allocated section
//! binutils `size` counts, the bytes each object file contributed.
//!
//! The map's "Linker script and memory map" part lists each output section
//! (`.text  0xc0100000  0x2b6d24`) and under it the input sections placed
//! in it (` .text  0xc0101398  0x18 init/main.o`; a long section name puts
//! address, size and file on the next line), the padding ld inserted
//! between them (` *fill*  0xc0100038  0x8`) and data the linker script
//! writes (`BYTE`/`SHORT`/`LONG`/`QUAD`/`SQUAD` lines). Symbol and
//! assignment lines carry no size and are skipped.
//!
//! [`attribute`] matches the map's output sections with the ELF's
//! allocated sections by name and checks that their sizes agree (the map
//! must be this vmlinux's). Within a section, each input section's bytes
//! go to its object (an archive member `lib.a(x.o)` to `x.o` beside the
//! archive, unless its name is a path), `*fill*` to [`FILL`], linker-script
//! data to [`LINKER_DATA`], and whatever the section holds beyond those —
//! the gaps `. = ALIGN(…)` and other assignments to `.` leave, which the
//! map does not list — to [`GAPS`]. So a section's attributions add up to
//! its size exactly, and all of them to `size`'s text, data and bss.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use super::sections::{AllocSection, SectionClass};

/// Pseudo-object for the padding ld inserts between input sections
/// (`*fill*` lines).
pub const FILL: &str = "(fill)";
/// Pseudo-object for data the linker script itself writes (`LONG(…)`).
pub const LINKER_DATA: &str = "(linker script data)";
/// Pseudo-object for the branch veneers and glue ld makes itself (the
/// map's `linker stubs`).
pub const STUBS: &str = "(linker stubs)";
/// Pseudo-object for the rest of a section: gaps left by `. = ALIGN(…)`
/// and other assignments to `.`, which the map does not list as pieces.
pub const GAPS: &str = "(alignment gaps)";

/// One sized line of a section in a link map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// An object path, [`FILL`], [`LINKER_DATA`] or [`STUBS`].
    pub origin: String,
    /// Its address.
    pub address: u64,
    /// Its size in bytes as the map gives it (before merging, for
    /// sections ld merges).
    pub size: u64,
}

/// One output section of a link map and its sized pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapSection {
    /// Output section name (`.text`).
    pub name: String,
    /// Its address.
    pub address: u64,
    /// Its size in bytes, as the map gives it.
    pub size: u64,
    /// The pieces, in map order.
    pub pieces: Vec<Piece>,
}

/// The memory-map part of a GNU ld map file, output sections in order
/// (`/DISCARD/` left out).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LinkMap {
    /// Output sections, in map order.
    pub sections: Vec<MapSection>,
}

fn hex(token: &str) -> Option<u64> {
    u64::from_str_radix(token.strip_prefix("0x")?, 16).ok()
}

/// `lib/lib.a(string.o)` → `lib/string.o`; a member named by a path (thin
/// archives) → that path; `linker stubs` → [`STUBS`]; anything else unchanged.
pub fn object_name(file: &str) -> String {
    if file == "linker stubs" {
        return STUBS.to_string();
    }
    if let Some((archive, member)) = file
        .strip_suffix(')')
        .and_then(|f| f.split_once(".a("))
        .map(|(a, m)| (format!("{a}.a"), m))
    {
        if member.contains('/') {
            return member.to_string();
        }
        return match archive.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/{member}"),
            None => member.to_string(),
        };
    }
    file.to_string()
}

/// Parses the "Linker script and memory map" part of a GNU ld map file.
///
/// Errors when the text has no such part (not a GNU ld map), or when a
/// line that must carry a size does not (naming the line number).
pub fn parse(text: &str) -> Result<LinkMap> {
    let mut lines = text.lines().enumerate();
    if !lines
        .by_ref()
        .any(|(_, l)| l.trim_end() == "Linker script and memory map")
    {
        bail!("no \"Linker script and memory map\" line: not a GNU ld map file");
    }
    let mut map = LinkMap::default();
    // The section an input or fill line belongs to (None: /DISCARD/ or
    // outside any section).
    let mut current: Option<usize> = None;
    // A name whose address and size are on the next line.
    let mut pending_output: Option<String> = None;
    let mut pending_input = false;
    for (i, line) in lines {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if let Some(name) = pending_output.take() {
            match (
                tokens.first().and_then(|t| hex(t)),
                tokens.get(1).and_then(|t| hex(t)),
            ) {
                (Some(address), Some(size)) if line.starts_with(char::is_whitespace) => {
                    map.sections.push(MapSection {
                        name,
                        address,
                        size,
                        pieces: Vec::new(),
                    });
                    current = Some(map.sections.len() - 1);
                    continue;
                }
                // An output section without address and size (empty, or
                // only patterns or assignments: arm's `.exit.data` is
                // followed by `0x008b6000  . = ALIGN (0x2000)`): nothing of
                // it is in the file; the line is read as any other.
                _ => current = None,
            }
        }
        if pending_input {
            pending_input = false;
            if let (Some(address), Some(size), Some(idx)) = (
                tokens.first().and_then(|t| hex(t)),
                tokens.get(1).and_then(|t| hex(t)),
                current,
            ) {
                if tokens.len() >= 3 {
                    let origin = object_name(&tokens[2..].join(" "));
                    map.sections[idx].pieces.push(Piece {
                        origin,
                        address,
                        size,
                    });
                    continue;
                }
            }
        }
        if tokens.is_empty() {
            continue;
        }
        if !line.starts_with(char::is_whitespace) {
            let first = tokens[0];
            if first == "LOAD"
                || first.starts_with("OUTPUT(")
                || first == "START"
                || first == "END"
                || first == "/DISCARD/"
            {
                current = None;
                continue;
            }
            match (
                tokens.get(1).and_then(|t| hex(t)),
                tokens.get(2).and_then(|t| hex(t)),
            ) {
                (Some(address), Some(size)) => {
                    map.sections.push(MapSection {
                        name: first.to_string(),
                        address,
                        size,
                        pieces: Vec::new(),
                    });
                    current = Some(map.sections.len() - 1);
                }
                _ if tokens.len() == 1 => pending_output = Some(first.to_string()),
                _ => current = None,
            }
            continue;
        }
        let Some(idx) = current else { continue };
        let one_space = line.len() > 1 && !line[1..].starts_with(char::is_whitespace);
        if one_space {
            let first = tokens[0];
            if first == "*fill*" {
                let (Some(address), Some(size)) = (
                    tokens.get(1).and_then(|t| hex(t)),
                    tokens.get(2).and_then(|t| hex(t)),
                ) else {
                    bail!("map line {}: *fill* without address and size", i + 1);
                };
                map.sections[idx].pieces.push(Piece {
                    origin: FILL.to_string(),
                    address,
                    size,
                });
                continue;
            }
            if first.contains('(') || first.contains('*') || first.contains(')') {
                // An input section pattern (`*(.text)`, `KEEP (*(…))`).
                continue;
            }
            match (
                tokens.get(1).and_then(|t| hex(t)),
                tokens.get(2).and_then(|t| hex(t)),
            ) {
                (Some(address), Some(size)) if tokens.len() >= 4 => {
                    let origin = object_name(&tokens[3..].join(" "));
                    map.sections[idx].pieces.push(Piece {
                        origin,
                        address,
                        size,
                    });
                }
                _ if tokens.len() == 1 => pending_input = true,
                _ => {}
            }
            continue;
        }
        // Deeper lines: symbols, assignments, and the linker script's data
        // (`0xADDR  0x4 LONG 0x…`).
        if let (Some(address), Some(size), Some(kind)) = (
            hex(tokens[0]),
            tokens.get(1).and_then(|t| hex(t)),
            tokens.get(2),
        ) {
            if matches!(*kind, "BYTE" | "SHORT" | "LONG" | "QUAD" | "SQUAD") {
                map.sections[idx].pieces.push(Piece {
                    origin: LINKER_DATA.to_string(),
                    address,
                    size,
                });
            }
        }
    }
    Ok(map)
}

/// One allocated section of vmlinux and the bytes each object put in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionAttribution {
    /// Section name (`.text`).
    pub name: String,
    /// `size`'s class of the section.
    pub class: SectionClass,
    /// Its size in bytes (the ELF section header's).
    pub size: u64,
    /// Bytes per object path (or pseudo-object: [`FILL`], [`LINKER_DATA`],
    /// [`GAPS`]); they add up to `size`. Objects with 0 bytes are left out.
    pub objects: BTreeMap<String, u64>,
}

/// Every allocated section of a vmlinux, attributed ([`attribute`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attribution {
    /// In section-header order.
    pub sections: Vec<SectionAttribution>,
}

/// Bytes of one object (or directory) by `size`'s classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ClassBytes {
    /// Code and read-only data.
    pub text: u64,
    /// Writable initialised data.
    pub data: u64,
    /// Zero-initialised data.
    pub bss: u64,
}

impl ClassBytes {
    /// text + data + bss (`size`'s `dec`).
    pub fn dec(&self) -> u64 {
        self.text + self.data + self.bss
    }

    fn add(&mut self, class: SectionClass, bytes: u64) {
        match class {
            SectionClass::Text => self.text += bytes,
            SectionClass::Data => self.data += bytes,
            SectionClass::Bss => self.bss += bytes,
        }
    }
}

/// How [`Attribution::rollup`] groups objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    /// One row per object file.
    File,
    /// One row per object's own directory (`net/ipv4/`); pseudo-objects
    /// keep their own row.
    Dir,
    /// One row per directory cut to its first N levels ([`directory_at`]:
    /// at 2, `drivers/net/` holds everything under it); still one row per
    /// byte.
    DirDepth(usize),
    /// One row per kconfig symbol building the objects
    /// ([`super::kconfig_map`]); [`Attribution::rollup`] gives the
    /// objects, [`Attribution::rollup_by`] the rows.
    Kconfig,
}

/// The directory an object path is rolled up into: `net/ipv4/` for
/// `net/ipv4/tcp.o`, `./` for a top-level file, a pseudo-object itself.
pub fn directory_of(object: &str) -> String {
    if object.starts_with('(') {
        return object.to_string();
    }
    match object.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/"),
        None => "./".to_string(),
    }
}

/// The directory an object path is rolled up into at `depth` levels:
/// [`directory_of`], cut to its first `depth` components
/// (`drivers/net/ethernet/mediatek/mtk_eth_soc.o` → `drivers/net/` at 2);
/// a shallower directory (`fs/` of `fs/namei.o`), `./` and a
/// pseudo-object stay as they are. `depth` 0 counts as 1.
pub fn directory_at(object: &str, depth: usize) -> String {
    let dir = directory_of(object);
    if dir.starts_with('(') || dir == "./" {
        return dir;
    }
    let parts: Vec<&str> = dir.trim_end_matches('/').split('/').collect();
    format!("{}/", parts[..parts.len().min(depth.max(1))].join("/"))
}

impl Attribution {
    /// Bytes per object (or directory), by class, over every section.
    /// (By object for [`Grouping::Kconfig`].)
    pub fn rollup(&self, grouping: Grouping) -> BTreeMap<String, ClassBytes> {
        self.rollup_by(|object| match grouping {
            Grouping::File | Grouping::Kconfig => object.to_string(),
            Grouping::Dir => directory_of(object),
            Grouping::DirDepth(n) => directory_at(object, n),
        })
    }

    /// Bytes per row, by class, over every section, each object's bytes
    /// in the row `row(object)` names.
    pub fn rollup_by(&self, mut row: impl FnMut(&str) -> String) -> BTreeMap<String, ClassBytes> {
        let mut out: BTreeMap<String, ClassBytes> = BTreeMap::new();
        for s in &self.sections {
            for (object, bytes) in &s.objects {
                out.entry(row(object)).or_default().add(s.class, *bytes);
            }
        }
        out
    }

    /// The sum of every attribution by class: `size`'s text, data and bss.
    pub fn totals(&self) -> ClassBytes {
        let mut t = ClassBytes::default();
        for s in &self.sections {
            t.add(s.class, s.objects.values().sum());
        }
        t
    }
}

/// Attributes every section of `sections` (vmlinux's allocated sections,
/// [`super::sections::alloc_sections`]) from `map` (see the module docs).
///
/// Errors: a section the map lacks or gives another size (the map is not
/// this vmlinux's, naming the section and both sizes), or whose pieces
/// add up to more than the section (a map this parser misread).
pub fn attribute(map: &LinkMap, sections: &[AllocSection]) -> Result<Attribution> {
    let mut out = Vec::new();
    for s in sections {
        let Some(m) = map.sections.iter().find(|m| m.name == s.name) else {
            bail!(
                "section {} ({} bytes) is not in the link map: the map is not this vmlinux's",
                s.name,
                s.size
            );
        };
        if m.size != s.size {
            bail!(
                "section {} is {} bytes in vmlinux but {} in the link map: the map is not this \
                 vmlinux's",
                s.name,
                s.size,
                m.size
            );
        }
        // Address order (map order among equals); each byte of the section
        // goes to the first piece that covers it. Pieces overlap where ld
        // merged sections (SHF_MERGE strings: the map gives each input's
        // size before duplicates were dropped).
        let mut pieces: Vec<&Piece> = m.pieces.iter().collect();
        pieces.sort_by_key(|p| p.address);
        let end = m.address.saturating_add(m.size);
        let mut covered_to = m.address;
        let mut objects: BTreeMap<String, u64> = BTreeMap::new();
        for p in pieces {
            let from = p.address.max(covered_to);
            let to = p.address.saturating_add(p.size).min(end);
            if to > from {
                *objects.entry(p.origin.clone()).or_default() += to - from;
                covered_to = to;
            }
        }
        let covered: u64 = objects.values().sum();
        if covered > s.size {
            bail!(
                "section {}: the link map's pieces add up to {covered} bytes, more than its {} \
                 bytes",
                s.name,
                s.size
            );
        }
        if covered < s.size {
            *objects.entry(GAPS.to_string()).or_default() += s.size - covered;
        }
        objects.retain(|_, b| *b > 0);
        out.push(SectionAttribution {
            name: s.name.clone(),
            class: s.class,
            size: s.size,
            objects,
        });
    }
    Ok(Attribution { sections: out })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP: &str = "Archive member included\n\nLinker script and memory map\n\n\
        \x20               0xc0702d00                        jiffies = jiffies_64\n\
        /DISCARD/\n *(.discard)\n .discard       0x00000000       0x10 a.o\n\
        .text           0xc0100000      0x40\n\
        \x20*(.text)\n\
        \x20.text          0xc0100000       0x10 init/main.o\n\
        \x20               0xc0100000                main\n\
        \x20*fill*         0xc0100010        0x8 \n\
        \x20.irqentry.text\n\
        \x20               0xc0100018        0x8 lib/lib.a(string.o)\n\
        \x20               0xc0100020        0x4 LONG 0x1\n\
        \x20               0xc0100030                        . = ALIGN (0x10)\n\
        __ksymtab_strings\n *(__ksymtab_strings)\n\n\
        .rodata.long.name\n\
        \x20               0xc0200000       0x20\n\
        \x20__param        0xc0200000       0x20 linker stubs\n\
        LOAD vmlinux.a\nOUTPUT(vmlinux elf32-littlearm)\n";

    #[test]
    fn sections_pieces_and_gaps() {
        let map = parse(MAP).unwrap();
        let names: Vec<_> = map.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [".text", ".rodata.long.name"]);
        let pieces: Vec<(&str, u64, u64)> = map.sections[0]
            .pieces
            .iter()
            .map(|p| (p.origin.as_str(), p.address, p.size))
            .collect();
        assert_eq!(
            pieces,
            vec![
                ("init/main.o", 0xc0100000, 0x10),
                (FILL, 0xc0100010, 8),
                ("lib/string.o", 0xc0100018, 8),
                (LINKER_DATA, 0xc0100020, 4),
            ]
        );
        let alloc = [
            AllocSection {
                name: ".text".into(),
                size: 0x40,
                class: SectionClass::Text,
            },
            AllocSection {
                name: ".rodata.long.name".into(),
                size: 0x20,
                class: SectionClass::Data,
            },
        ];
        let a = attribute(&map, &alloc).unwrap();
        assert_eq!(a.sections[0].objects[GAPS], 0x40 - 0x24);
        assert_eq!(a.totals().text, 0x40);
        assert_eq!(a.totals().data, 0x20);
        let dirs = a.rollup(Grouping::Dir);
        assert_eq!(dirs["init/"].text, 0x10);
        assert_eq!(dirs[STUBS].data, 0x20);
        let wrong = [AllocSection {
            size: 0x41,
            ..alloc[0].clone()
        }];
        let e = attribute(&map, &wrong).unwrap_err().to_string();
        assert!(e.contains(".text is 65 bytes in vmlinux but 64"), "{e}");
        assert!(parse("no map").is_err());
    }

    /// An output section ld names alone on its line, followed by an
    /// assignment instead of its address and size (Linux 6.12's arm
    /// `.exit.data` in a tinyconfig link), is empty: skipped, and the
    /// next section is read.
    #[test]
    fn an_empty_output_section_followed_by_an_assignment() {
        let map = "Linker script and memory map\n\
            \n\
            .exit.data\n\
            \x20               0x008b6000                        . = ALIGN (0x2000)\n\
            \x20               0x008b6000                        __init_end = .\n\
            \n\
            .data           0x008b6000     0x10\n\
            \x20*(.data)\n\
            \x20.data          0x008b6000       0x10 init/main.o\n";
        let map = parse(map).unwrap();
        let names: Vec<_> = map.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, [".data"]);
        assert_eq!(map.sections[0].pieces.len(), 1);
    }

    #[test]
    fn merged_strings_overlap_and_share() {
        let map = "Linker script and memory map\n\
            .rodata         0x1000       0x20\n\
            \x20.rodata.str1.1\n\
            \x20               0x1000       0x10 a.o\n\
            \x20.rodata.str1.1\n\
            \x20               0x1008        0x8 b.o\n\
            \x20.rodata.str1.4\n\
            \x20               0x1010        0xc c.o\n\
            \x20.rodata.str1.1\n\
            \x20               0x1010       0x18 d.o\n";
        let map = parse(map).unwrap();
        let a = attribute(
            &map,
            &[AllocSection {
                name: ".rodata".into(),
                size: 0x20,
                class: SectionClass::Text,
            }],
        )
        .unwrap();
        let o = &a.sections[0].objects;
        assert_eq!(o["a.o"], 0x10);
        assert!(!o.contains_key("b.o"));
        assert_eq!(o["c.o"], 0xc);
        assert_eq!(o["d.o"], 0x4);
        assert_eq!(o.values().sum::<u64>(), 0x20);
    }

    #[test]
    fn archive_members() {
        assert_eq!(object_name("lib/lib.a(string.o)"), "lib/string.o");
        assert_eq!(object_name("lib/lib.a(lib/string.o)"), "lib/string.o");
        assert_eq!(object_name("init/main.o"), "init/main.o");
        assert_eq!(directory_of("vmlinux.o"), "./");
        assert_eq!(directory_of(FILL), FILL);
        let eth = "drivers/net/ethernet/mediatek/mtk_eth_soc.o";
        assert_eq!(directory_at(eth, 2), "drivers/net/");
        assert_eq!(directory_at(eth, 4), "drivers/net/ethernet/mediatek/");
        assert_eq!(directory_at(eth, 9), "drivers/net/ethernet/mediatek/");
        assert_eq!(directory_at("fs/namei.o", 2), "fs/");
        assert_eq!(directory_at("vmlinux.o", 2), "./");
        assert_eq!(directory_at(FILL, 1), FILL);
    }
}
