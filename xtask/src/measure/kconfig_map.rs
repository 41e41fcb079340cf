//! Which kconfig symbol builds each object of vmlinux, from the kernel
//! tree's kbuild files ([`super::kbuild_makefile`], after
//! Documentation/kbuild/makefiles.rst): `size-report --by kconfig`.
//!
//! An object `fs/proc/base.o` is gated by every symbol on the way to it:
//! the top-level `Kbuild`'s `obj-y += fs/`, `fs/Makefile`'s
//! `obj-$(CONFIG_PROC_FS) += proc/`, `fs/proc/Makefile`'s `obj-y +=
//! proc.o` with `proc-y += base.o`. It is attributed to the **innermost**
//! symbol: the one nearest the object (a composite part's own
//! `proc-$(CONFIG_X)`, else the composite's or the object's own
//! `obj-$(CONFIG_X)`, else an enclosing `ifdef`, else the symbol of the
//! nearest directory descended into under one), so each object is in
//! exactly one row and the rows still add up to `size`. An object built
//! with `obj-y` all the way from the top is [`ALWAYS`]; one no line of
//! the tree builds (a word this parser does not expand, a file the
//! kernel's link script adds) is [`UNKNOWN`], never dropped.
//!
//! The directory of an object (or of a directory) is looked up in its
//! parent's kbuild file, then further up (`obj-y += sub/dir/` and
//! `obj-y += ../x.o` resolve relative to the file that says them); the
//! top of the tree reads the top-level `Kbuild`, the top-level
//! `Makefile` and `arch/$(SRCARCH)/Makefile` (`core-y`, `drivers-y`,
//! `libs-y`). Where one object is listed under several symbols
//! (`obj-$(CONFIG_A) += x.o` and `obj-$(CONFIG_B) += x.o`), its row names
//! them all, `CONFIG_A|CONFIG_B`, since the record does not say which
//! was set; `obj-y` among them makes it [`ALWAYS`] at that level.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;

use super::kbuild_makefile::{self, Entry, KbuildFile, GOAL_LISTS};

/// Row of objects built with `obj-y`/`lib-y` from the top of the tree down.
pub const ALWAYS: &str = "(always)";
/// Row of objects no kbuild line was found for.
pub const UNKNOWN: &str = "(unknown)";

/// Goal lists of the top-level and arch Makefiles: directories from the
/// top of the tree.
const TOP_LISTS: [&str; 3] = ["core", "drivers", "libs"];

/// Objects `scripts/link-vmlinux.sh` links itself (no kbuild goal list
/// names them) and the symbol that makes it do so.
const LINK_SCRIPT_OBJECTS: [(&str, &str); 4] = [
    ("init/version-timestamp.o", ALWAYS),
    (".vmlinux.export.o", "CONFIG_MODULES"),
    (".tmp_vmlinux2.kallsyms.o", "CONFIG_KALLSYMS"),
    (".tmp_vmlinux3.kallsyms.o", "CONFIG_KALLSYMS"),
];

/// The `$(SRCARCH)` of kernel `ARCH` (`x86_64` → `x86`).
pub fn srcarch(arch: &str) -> &str {
    match arch {
        "x86_64" | "i386" => "x86",
        "sparc32" | "sparc64" => "sparc",
        "parisc64" => "parisc",
        "sh64" => "sh",
        other => other,
    }
}

/// What an object is attributed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Its innermost symbol (`CONFIG_EPOLL`; `CONFIG_A|CONFIG_B` when
    /// listed under several), or [`ALWAYS`].
    Row(String),
    /// No kbuild line found: why (for the report's list).
    Unknown(String),
}

impl Resolution {
    /// The row's name: the symbol, [`ALWAYS`] or [`UNKNOWN`].
    pub fn row(&self) -> &str {
        match self {
            Resolution::Row(r) => r,
            Resolution::Unknown(_) => UNKNOWN,
        }
    }
}

/// Reads a kbuild file of the tree by its path from the top (`fs/Makefile`);
/// `Ok(None)` when there is none.
pub type Reader<'a> = dyn FnMut(&str) -> Result<Option<String>> + 'a;

/// The kbuild files of one kernel tree, read as needed, and what each
/// object resolved to.
pub struct KconfigMap<'a> {
    read: Box<Reader<'a>>,
    srcarch: String,
    files: BTreeMap<String, KbuildFile>,
    objects: BTreeMap<String, Resolution>,
}

/// `a/b/../c/` → `a/c/`; `None` above the top.
fn normalize(path: &str) -> Option<String> {
    let dir = path.ends_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            _ => parts.push(p),
        }
    }
    let mut out = parts.join("/");
    if dir && !out.is_empty() {
        out.push('/');
    }
    Some(out)
}

/// The directory part of `path`, with its `/` (`fs/` of `fs/x.o`, of
/// `fs/proc/` it is `fs/`); `""` at the top.
fn parent(path: &str) -> &str {
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    trimmed.rfind('/').map_or("", |i| &path[..=i])
}

/// The innermost of several lines naming one thing: `None` (always) if
/// any is always, else their symbols joined by `|`.
fn combine(gates: &[Option<String>]) -> Option<Option<String>> {
    if gates.is_empty() {
        return None;
    }
    if gates.iter().any(Option::is_none) {
        return Some(None);
    }
    let set: BTreeSet<&String> = gates.iter().flatten().collect();
    Some(Some(set.into_iter().cloned().collect::<Vec<_>>().join("|")))
}

impl<'a> KconfigMap<'a> {
    /// A map of the tree `read` reads, for `srcarch` (see [`srcarch`]).
    pub fn new(read: Box<Reader<'a>>, srcarch: &str) -> KconfigMap<'a> {
        KconfigMap {
            read,
            srcarch: srcarch.to_string(),
            files: BTreeMap::new(),
            objects: BTreeMap::new(),
        }
    }

    /// The kbuild file of directory `dir` (`fs/`, `""` for the top): its
    /// `Kbuild`, else its `Makefile`; the top adds the top-level
    /// `Makefile`'s and the arch Makefile's `core-`/`drivers-`/`libs-`
    /// lines.
    fn file(&mut self, dir: &str) -> Result<&KbuildFile> {
        if !self.files.contains_key(dir) {
            let mut parsed = KbuildFile::default();
            let own = match (self.read)(&format!("{dir}Kbuild"))? {
                Some(t) => Some(t),
                None => (self.read)(&format!("{dir}Makefile"))?,
            };
            if let Some(text) = own {
                parsed = kbuild_makefile::parse(&text, &self.srcarch);
            }
            // core-/drivers-/libs- lists count at the top only, where make
            // reads them (relative to the top, like every word there).
            parsed
                .entries
                .retain(|e| dir.is_empty() || !TOP_LISTS.contains(&e.list.as_str()));
            if dir.is_empty() {
                let arch = format!("arch/{}/Makefile", self.srcarch);
                for name in ["Makefile", arch.as_str()] {
                    if let Some(text) = (self.read)(name)? {
                        let top = kbuild_makefile::parse(&text, &self.srcarch);
                        parsed.entries.extend(
                            top.entries
                                .into_iter()
                                .filter(|e| TOP_LISTS.contains(&e.list.as_str())),
                        );
                    }
                }
            }
            self.files.insert(dir.to_string(), parsed);
        }
        Ok(&self.files[dir])
    }

    /// The gates of the lines in `dir`'s kbuild file that build `target`
    /// (a path from the top): goal-list words, and composite parts whose
    /// composite is a goal there. `None`: no such line.
    fn lines_building(&mut self, dir: &str, target: &str) -> Result<Option<Option<String>>> {
        let file = self.file(dir)?;
        let resolve = |e: &Entry| normalize(&format!("{dir}{}", e.word));
        let mut gates = Vec::new();
        for e in file.goals() {
            if resolve(e).as_deref() == Some(target) {
                gates.push(e.gate.clone());
            }
        }
        for e in &file.entries {
            if GOAL_LISTS.contains(&e.list.as_str()) || resolve(e).as_deref() != Some(target) {
                continue;
            }
            let composite = format!("{}.o", e.list);
            let built: Vec<Option<String>> = file
                .goals()
                .filter(|g| g.list == "obj" || g.list == "lib")
                .filter(|g| g.word == composite)
                .map(|g| g.gate.clone())
                .collect();
            // The part's own symbol is the innermost; else the composite's.
            if let Some(outer) = combine(&built) {
                gates.push(e.gate.clone().or(outer));
            }
        }
        Ok(combine(&gates))
    }

    /// What builds `target` (an object or a directory), looking in the
    /// kbuild files of its parent and further up.
    fn resolve(&mut self, target: &str) -> Result<Resolution> {
        if target.is_empty() {
            return Ok(Resolution::Row(ALWAYS.to_string()));
        }
        let mut dir = parent(target).to_string();
        loop {
            if let Some(gate) = self.lines_building(&dir, target)? {
                return match gate {
                    Some(symbol) => Ok(Resolution::Row(symbol)),
                    // Always here: as gated as the directory holding the line.
                    None => self.resolve(&dir),
                };
            }
            if dir.is_empty() {
                let what = if target.ends_with('/') {
                    "no kbuild file descends into it"
                } else {
                    "no kbuild line names it as written (an unexpanded make variable may)"
                };
                return Ok(Resolution::Unknown(format!("{target}: {what}")));
            }
            dir = parent(&dir).to_string();
        }
    }

    /// The row of object `object` (a link-map path such as
    /// `fs/eventpoll.o`, or a pseudo-object such as `(fill)`, which keeps
    /// its own row).
    ///
    /// Errors: a kbuild file that could not be read (not a missing one).
    pub fn object(&mut self, object: &str) -> Result<Resolution> {
        if let Some(r) = self.objects.get(object) {
            return Ok(r.clone());
        }
        let r = if object.starts_with('(') {
            Resolution::Row(object.to_string())
        } else if let Some((_, row)) = LINK_SCRIPT_OBJECTS.iter().find(|(o, _)| *o == object) {
            Resolution::Row(row.to_string())
        } else {
            match normalize(object) {
                Some(path) if !path.is_empty() => self.resolve(&path)?,
                _ => Resolution::Unknown(format!("{object}: not a path in the tree")),
            }
        };
        self.objects.insert(object.to_string(), r.clone());
        Ok(r)
    }

    /// Every object looked up so far and what it resolved to.
    pub fn resolved(&self) -> &BTreeMap<String, Resolution> {
        &self.objects
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree of `(path, text)` kbuild files.
    fn map(files: &'static [(&'static str, &'static str)]) -> KconfigMap<'static> {
        KconfigMap::new(
            Box::new(move |p: &str| {
                Ok(files
                    .iter()
                    .find(|(name, _)| *name == p)
                    .map(|(_, t)| t.to_string()))
            }),
            "arm",
        )
    }

    const TREE: &[(&str, &str)] = &[
        (
            "Kbuild",
            "obj-y += init/\nobj-y += fs/\nobj-y += $(ARCH_CORE)\nobj-$(CONFIG_NET) += net/\n",
        ),
        ("Makefile", "libs-y := lib/\ncore-y :=\n"),
        (
            "arch/arm/Makefile",
            "core-y += arch/arm/kernel/\ncore-$(CONFIG_VFP) += arch/arm/vfp/\n",
        ),
        ("arch/arm/kernel/Makefile", "obj-y += setup.o \\\n  traps.o\n"),
        ("arch/arm/vfp/Makefile", "obj-y += vfp.o\nvfp-objs += vfpmodule.o entry.o\n"),
        ("init/Makefile", "obj-y := main.o\n"),
        (
            "fs/Makefile",
            "obj-y := open.o\nobj-$(CONFIG_EPOLL) += eventpoll.o\nobj-$(CONFIG_PROC_FS) += proc/\n\
             obj-$(CONFIG_A) += shared.o\nobj-$(CONFIG_B) += shared.o\nobj-$(CONFIG_X) += sub/deep/\n",
        ),
        (
            "fs/proc/Makefile",
            "obj-y += proc.o\nproc-y := inode.o root.o\nproc-$(CONFIG_PROC_SYSCTL) += proc_sysctl.o\n\
             obj-$(CONFIG_PROC_KCORE) += kcore.o\n",
        ),
        ("fs/proc/Kbuild", "obj-y += proc.o\nproc-y := inode.o kbuild_wins.o\n"),
        ("fs/sub/deep/Makefile", "obj-y += d.o\n"),
        ("lib/Makefile", "lib-y += string.o\nlib-$(CONFIG_CRC32) += crc32.o\n"),
        ("net/Makefile", "obj-$(CONFIG_INET) += ipv4/\n"),
        ("net/ipv4/Makefile", "obj-y := route.o\n"),
    ];

    fn row(m: &mut KconfigMap, o: &str) -> String {
        m.object(o).unwrap().row().to_string()
    }

    #[test]
    fn innermost_symbol_of_descended_directories() {
        let mut m = map(TREE);
        assert_eq!(row(&mut m, "init/main.o"), ALWAYS);
        assert_eq!(row(&mut m, "fs/open.o"), ALWAYS);
        assert_eq!(row(&mut m, "fs/eventpoll.o"), "CONFIG_EPOLL");
        // net/ is CONFIG_NET, ipv4/ CONFIG_INET: the innermost.
        assert_eq!(row(&mut m, "net/ipv4/route.o"), "CONFIG_INET");
        assert_eq!(row(&mut m, "fs/sub/deep/d.o"), "CONFIG_X");
    }

    #[test]
    fn composite_parts_kbuild_files_and_arch_lists() {
        let mut m = map(TREE);
        // fs/proc/ has a Kbuild: it is read, not the Makefile.
        assert_eq!(row(&mut m, "fs/proc/inode.o"), "CONFIG_PROC_FS");
        assert_eq!(row(&mut m, "fs/proc/kbuild_wins.o"), "CONFIG_PROC_FS");
        assert_eq!(row(&mut m, "fs/proc/proc_sysctl.o"), UNKNOWN);
        assert_eq!(row(&mut m, "arch/arm/kernel/traps.o"), ALWAYS);
        assert_eq!(row(&mut m, "arch/arm/vfp/entry.o"), "CONFIG_VFP");
        assert_eq!(row(&mut m, "lib/string.o"), ALWAYS);
        assert_eq!(row(&mut m, "lib/crc32.o"), "CONFIG_CRC32");
    }

    #[test]
    fn a_parts_own_symbol_is_the_innermost() {
        let mut m = map(&[
            ("Kbuild", "obj-y += fs/\n"),
            ("fs/Makefile", "obj-$(CONFIG_FUSE_FS) += fuse/\n"),
            (
                "fs/fuse/Makefile",
                "obj-$(CONFIG_FUSE_FS) += fuse.o\nfuse-y := dev.o\nfuse-$(CONFIG_FUSE_DAX) += dax.o\n",
            ),
        ]);
        assert_eq!(row(&mut m, "fs/fuse/dev.o"), "CONFIG_FUSE_FS");
        assert_eq!(row(&mut m, "fs/fuse/dax.o"), "CONFIG_FUSE_DAX");
    }

    #[test]
    fn unknown_objects_say_why_and_pseudo_objects_keep_their_rows() {
        let mut m = map(TREE);
        assert_eq!(row(&mut m, "fs/shared.o"), "CONFIG_A|CONFIG_B");
        assert_eq!(row(&mut m, "(fill)"), "(fill)");
        assert_eq!(row(&mut m, "init/version-timestamp.o"), ALWAYS);
        let Resolution::Unknown(why) = m.object("drivers/x/y.o").unwrap() else {
            panic!("drivers/ is not built here");
        };
        assert!(why.contains("drivers/x/y.o"), "{why}");
        assert_eq!(row(&mut m, "../../etc/passwd"), UNKNOWN);
        assert_eq!(row(&mut m, "fs/missing.o"), UNKNOWN);
        assert_eq!(m.resolved().len(), 6);
    }

    #[test]
    fn paths_normalize() {
        assert_eq!(normalize("a/./b/../c.o").as_deref(), Some("a/c.o"));
        assert_eq!(normalize("a/b/../../").as_deref(), Some(""));
        assert_eq!(normalize("../x"), None);
        assert_eq!(parent("fs/proc/"), "fs/");
        assert_eq!(parent("fs/x.o"), "fs/");
        assert_eq!(parent("x.o"), "");
    }
}
