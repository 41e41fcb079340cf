//! The lines of a kernel `Kbuild` or `Makefile` that say which objects
//! and directories vmlinux is built from, and under which kconfig symbol:
//! the goal definitions of Documentation/kbuild/makefiles.rst (Linux 6.12,
//! "Goal definitions", "Built-in object goals - obj-y", "Library file
//! goals - lib-y", "Descending down in directories", "Composite Objects"
//! there, and "Architecture-specific: List directories to visit when
//! building the kernel" for `core-y`, `drivers-y`, `libs-y`).
//!
//! * `obj-y += foo.o` builds `foo.o` into vmlinux always;
//!   `obj-$(CONFIG_FOO) += foo.o` when `CONFIG_FOO` is `y` (kconfig puts
//!   `y`, `m` or nothing in the variable, so the goal list is `obj-y`,
//!   `obj-m` or `obj-`). `$(subst m,y,$(CONFIG_FOO))` is read as
//!   `$(CONFIG_FOO)`.
//! * `obj-$(CONFIG_FOO) += dir/` descends into `dir/`, whose own `Kbuild`
//!   (or, without one, `Makefile`) says what it builds.
//! * `lib-y` / `lib-$(CONFIG_FOO)` objects go into the directory's
//!   `lib.a`, linked into vmlinux where referenced.
//! * A composite object `foo.o` listed in `obj-*` is linked from the parts
//!   `foo-y`, `foo-objs` and `foo-$(CONFIG_BAR)` list; since Linux 5.x a
//!   built-in composite's parts go into `built-in.a` one by one, so the
//!   link map names the parts.
//! * In the top-level Makefile and `arch/$(SRCARCH)/Makefile`,
//!   `core-y`, `drivers-y` and `libs-y` name directories relative to the
//!   top of the tree (the top-level `Kbuild` descends into them).
//!
//! As make reads them: a backslash at the end of a line joins the next
//! one (also in a comment), `#` starts a comment, `:=`, `=`, `?=` and
//! `+=` all add to a goal list here (the order of assignments is not
//! followed). An `obj-y` line inside `ifdef CONFIG_FOO`,
//! `ifeq ($(CONFIG_FOO),y)` or `ifneq ($(CONFIG_FOO),)` (or the `else` of
//! `ifndef CONFIG_FOO`) is gated by `CONFIG_FOO`; other conditions are not
//! evaluated. A word `$(VAR)` whose variable the file set before
//! (`libfdt_files = fdt.o …`, `mmu-y := nommu.o` with
//! `mmu-$(CONFIG_MMU) := memory.o …`) is expanded to every word any of
//! its assignments gives, each under its own gate; `$(SRCARCH)` is
//! replaced. Other make variables and functions are not expanded: a word
//! holding one is left out ([`KbuildFile::unexpanded`] counts them), so
//! what only such a word builds stays unresolved.

use std::collections::BTreeMap;

/// Goal lists whose words are built into vmlinux (the rest of the
/// `NAME-…` lists are composite objects' parts).
pub const GOAL_LISTS: [&str; 5] = ["obj", "lib", "core", "drivers", "libs"];

/// Lists that are neither goals nor composite objects (flags and other
/// kbuild variables spelled `NAME-y`).
const NOT_PARTS: [&str; 12] = [
    "ccflags",
    "asflags",
    "ldflags",
    "subdir-ccflags",
    "subdir-asflags",
    "cppflags",
    "extra",
    "always",
    "targets",
    "hostprogs",
    "userprogs",
    "subdir",
];

/// One word of a goal list or of a composite's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The list: `obj`, `lib`, `core`, `drivers`, `libs`, or the stem of a
    /// composite object (`configfs` for `configfs-objs`).
    pub list: String,
    /// The word as written, `$(SRCARCH)` expanded: `foo.o`, `dir/`,
    /// `sub/bar.o`.
    pub word: String,
    /// The kconfig symbol gating it (`CONFIG_FOO`): the list's own
    /// (`obj-$(CONFIG_FOO)`), else the innermost enclosing conditional's;
    /// `None` for `obj-y`, `foo-y`, `foo-objs` (always, once the directory
    /// and the composite are built).
    pub gate: Option<String>,
    /// Its (first, for a continued) line in the file, from 1.
    pub line: usize,
}

/// What one kbuild file builds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KbuildFile {
    /// Every entry, in file order.
    pub entries: Vec<Entry>,
    /// Words of goal or part lists left out because they hold a make
    /// variable this parser does not expand (`head$(MMUEXT).o`).
    pub unexpanded: usize,
}

impl KbuildFile {
    /// Entries of the goal lists ([`GOAL_LISTS`]).
    pub fn goals(&self) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .filter(|e| GOAL_LISTS.contains(&e.list.as_str()))
    }

    /// The parts of composite `stem` (`foo` of `foo.o`): its `foo-y`,
    /// `foo-objs` and `foo-$(CONFIG_…)` entries.
    pub fn parts<'a>(&'a self, stem: &'a str) -> impl Iterator<Item = &'a Entry> {
        self.entries.iter().filter(move |e| e.list == stem)
    }
}

/// A make variable's selector: `y` (always), `$(CONFIG_X)` (gated), or
/// something else (`m`, an unexpanded expression): not built in.
enum Selector {
    Always,
    Symbol(String),
    NotBuiltIn,
}

/// `CONFIG_X` of `$(CONFIG_X)`, `${CONFIG_X}` or `$(subst m,y,$(CONFIG_X))`.
fn config_ref(s: &str) -> Option<String> {
    let s = s.trim();
    let inner = s
        .strip_prefix("$(subst m,y,")
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(s);
    let name = inner
        .strip_prefix("$(")
        .and_then(|r| r.strip_suffix(')'))
        .or_else(|| inner.strip_prefix("${").and_then(|r| r.strip_suffix('}')))?;
    let ok =
        name.starts_with("CONFIG_") && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then(|| name.to_string())
}

fn selector(s: &str) -> Selector {
    match s {
        "y" | "objs" => Selector::Always,
        _ => config_ref(s).map_or(Selector::NotBuiltIn, Selector::Symbol),
    }
}

/// One `if…` of the conditional stack: the symbol that must be set for
/// the current branch to be read (`None`: not one this parser knows).
struct Cond {
    /// Set when the `if` branch is read.
    when_if: Option<String>,
    /// Set when the `else` branch is read.
    when_else: Option<String>,
    in_else: bool,
}

impl Cond {
    fn gate(&self) -> Option<&String> {
        if self.in_else {
            self.when_else.as_ref()
        } else {
            self.when_if.as_ref()
        }
    }
}

/// `ifdef CONFIG_X` → (X, none); `ifndef CONFIG_X` → (none, X);
/// `ifeq ($(CONFIG_X),y)` and `ifneq ($(CONFIG_X),)` → (X, none);
/// `ifeq ($(CONFIG_X),)` and `ifneq ($(CONFIG_X),y)` → (none, X).
fn condition(directive: &str, rest: &str) -> Cond {
    let (when_if, when_else) = match directive {
        "ifdef" | "ifndef" => {
            let sym = rest.trim();
            let sym = (sym.starts_with("CONFIG_") && !sym.contains(char::is_whitespace))
                .then(|| sym.to_string());
            if directive == "ifdef" {
                (sym, None)
            } else {
                (None, sym)
            }
        }
        _ => {
            let args = rest
                .trim()
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .and_then(|r| r.split_once(','));
            match args.map(|(a, b)| (config_ref(a), b.trim())) {
                Some((Some(sym), value)) => {
                    let set = match value {
                        "y" => directive == "ifeq",
                        "" => directive == "ifneq",
                        _ => return Cond::unknown(),
                    };
                    if set {
                        (Some(sym), None)
                    } else {
                        (None, Some(sym))
                    }
                }
                _ => (None, None),
            }
        }
    };
    Cond {
        when_if,
        when_else,
        in_else: false,
    }
}

impl Cond {
    fn unknown() -> Cond {
        Cond {
            when_if: None,
            when_else: None,
            in_else: false,
        }
    }
}

/// make's logical lines of `text`: continued lines joined (a backslash
/// before the newline), comments cut, each with its first line number.
pub fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut start = 0;
    for (i, line) in text.lines().enumerate() {
        if current.is_empty() {
            start = i + 1;
        }
        match line.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                out.push((start, strip_comment(&current)));
                current.clear();
            }
        }
    }
    if !current.is_empty() {
        out.push((start, strip_comment(&current)));
    }
    out
}

/// `line` up to an unescaped `#`.
fn strip_comment(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'#') => {
                out.push('#');
                chars.next();
            }
            '#' => break,
            _ => out.push(c),
        }
    }
    out
}

/// Splits `NAME-SEL op VALUE` into (NAME, SEL, VALUE), and a plain
/// `NAME op VALUE` into (NAME, "", VALUE); `None` for other lines (rules,
/// recipes, directives).
fn assignment(line: &str) -> Option<(&str, &str, &str)> {
    let op_at = line.find('=')?;
    let mut lhs_end = op_at;
    if line[..op_at].ends_with([':', '+', '?']) {
        lhs_end -= 1;
        if line[..lhs_end].ends_with(':') {
            lhs_end -= 1; // ::=
        }
    }
    let lhs = line[..lhs_end].trim();
    // NAME-SEL: the selector is after the last '-' outside $(…); a space
    // there means this is no assignment (a rule, a recipe, a directive).
    let mut depth = 0i32;
    let mut dash = None;
    for (i, c) in lhs.char_indices() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => depth -= 1,
            '-' if depth == 0 => dash = Some(i),
            c if c.is_whitespace() && depth == 0 => return None,
            _ => {}
        }
    }
    let value = line[op_at + 1..].trim();
    if depth != 0 || lhs.is_empty() {
        return None;
    }
    Some(match dash {
        Some(dash) => (&lhs[..dash], &lhs[dash + 1..], value),
        None => (lhs, "", value),
    })
}

/// The words of a make value, split at blanks outside `$(…)`.
fn words(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, None);
    for (i, c) in value.char_indices() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => depth -= 1,
            c if c.is_whitespace() && depth <= 0 => {
                if let Some(s) = start.take() {
                    out.push(&value[s..i]);
                }
                continue;
            }
            _ => {}
        }
        start.get_or_insert(i);
    }
    out.extend(start.map(|s| &value[s..]));
    out
}

/// Parses one kbuild file (`Kbuild` or `Makefile`; see the module docs).
/// `srcarch` replaces `$(SRCARCH)` (`arm`, `mips`). Never fails: lines it
/// does not understand build nothing here.
pub fn parse(text: &str, srcarch: &str) -> KbuildFile {
    let mut file = KbuildFile::default();
    let mut conds: Vec<Cond> = Vec::new();
    let mut vars: BTreeMap<String, Vec<(String, Option<String>)>> = BTreeMap::new();
    for (line_no, line) in logical_lines(text) {
        let trimmed = line.trim();
        let (directive, rest) = trimmed
            .split_once(char::is_whitespace)
            .unwrap_or((trimmed, ""));
        match directive {
            "ifdef" | "ifndef" | "ifeq" | "ifneq" => {
                conds.push(condition(directive, rest));
                continue;
            }
            "else" => {
                if let Some(c) = conds.last_mut() {
                    c.in_else = true;
                    // `else ifeq …`: an unknown condition from here on.
                    if !rest.trim().is_empty() {
                        *c = Cond::unknown();
                    }
                }
                continue;
            }
            "endif" => {
                conds.pop();
                continue;
            }
            _ => {}
        }
        let Some((name, sel, value)) = assignment(&line) else {
            continue;
        };
        if NOT_PARTS.contains(&name) || name.contains(['$', '(', '/']) {
            continue;
        }
        let cond = || conds.iter().rev().find_map(Cond::gate).cloned();
        let gate = match selector(sel) {
            _ if sel.is_empty() => cond(),
            Selector::Always => cond(),
            Selector::Symbol(s) => Some(s),
            Selector::NotBuiltIn => continue,
        };
        // `$(VAR)` of a variable this file set before: its words, each
        // with its own gate (`mmu-$(CONFIG_MMU) := …` sets `mmu-y` then).
        let mut expanded: Vec<(String, Option<String>)> = Vec::new();
        for word in words(value) {
            let word = word
                .replace("$(SRCARCH)", srcarch)
                .replace("${SRCARCH}", srcarch);
            let var = word.strip_prefix("$(").and_then(|w| w.strip_suffix(')'));
            match var.and_then(|v| vars.get(v)) {
                Some(words) => expanded.extend(
                    words
                        .iter()
                        .map(|(w, g)| (w.clone(), g.clone().or_else(|| gate.clone()))),
                ),
                None if word.contains('$') => file.unexpanded += 1,
                None => expanded.push((word, gate.clone())),
            }
        }
        let key = if sel.is_empty() {
            name.to_string()
        } else {
            format!("{name}-y")
        };
        vars.entry(key)
            .or_default()
            .extend(expanded.iter().cloned());
        if sel.is_empty() {
            continue;
        }
        for (word, gate) in expanded {
            if !(word.ends_with(".o") || word.ends_with('/')) {
                continue;
            }
            file.entries.push(Entry {
                list: name.to_string(),
                word,
                gate,
                line: line_no,
            });
        }
    }
    file
}

/// Entries by list, for messages and tests: `obj` → its words.
pub fn words_by_list(file: &KbuildFile) -> BTreeMap<&str, Vec<&str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in &file.entries {
        out.entry(e.list.as_str())
            .or_default()
            .push(e.word.as_str());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate_of<'a>(f: &'a KbuildFile, list: &str, word: &str) -> Option<&'a str> {
        f.entries
            .iter()
            .find(|e| e.list == list && e.word == word)
            .unwrap_or_else(|| panic!("no {list} entry {word} in {f:?}"))
            .gate
            .as_deref()
    }

    #[test]
    fn obj_y_and_obj_config_lines() {
        let f = parse(
            "# SPDX\nobj-y := open.o read_write.o\nobj-$(CONFIG_EPOLL)\t+= eventpoll.o\n\
             obj-$(CONFIG_PROC_FS) += proc/\nobj-m += module_only.o\n\
             obj-$(subst m,y,$(CONFIG_FOO)) += foo.o\nccflags-y += -DDEBUG\n",
            "arm",
        );
        assert_eq!(gate_of(&f, "obj", "open.o"), None);
        assert_eq!(gate_of(&f, "obj", "read_write.o"), None);
        assert_eq!(gate_of(&f, "obj", "eventpoll.o"), Some("CONFIG_EPOLL"));
        assert_eq!(gate_of(&f, "obj", "proc/"), Some("CONFIG_PROC_FS"));
        assert_eq!(gate_of(&f, "obj", "foo.o"), Some("CONFIG_FOO"));
        assert!(f.entries.iter().all(|e| e.word != "module_only.o"));
        assert_eq!(f.entries.len(), 5, "{f:?}");
        assert_eq!(f.entries[2].line, 3);
    }

    #[test]
    fn continued_lines_and_comments() {
        let f = parse(
            "obj-y += a.o \\\n\tb.o \\\n   c.o\n# a comment \\\nobj-y += hidden.o\nobj-y += d.o # e.o\n",
            "arm",
        );
        assert_eq!(words_by_list(&f)["obj"], ["a.o", "b.o", "c.o", "d.o"]);
        assert_eq!(f.entries[2].line, 1);
        assert_eq!(f.entries[3].line, 6);
    }

    #[test]
    fn composite_parts_and_their_own_symbols() {
        let f = parse(
            "obj-$(CONFIG_CONFIGFS_FS)\t+= configfs.o\n\
             configfs-objs\t:= inode.o file.o dir.o\n\
             obj-$(CONFIG_FUSE_FS) += fuse.o\nfuse-y := dev.o dir.o\n\
             fuse-$(CONFIG_FUSE_DAX) += dax.o\n",
            "arm",
        );
        let parts: Vec<&str> = f.parts("configfs").map(|e| e.word.as_str()).collect();
        assert_eq!(parts, ["inode.o", "file.o", "dir.o"]);
        assert_eq!(gate_of(&f, "fuse", "dev.o"), None);
        assert_eq!(gate_of(&f, "fuse", "dax.o"), Some("CONFIG_FUSE_DAX"));
        assert_eq!(f.goals().count(), 2);
    }

    #[test]
    fn conditionals_gate_obj_y() {
        let f = parse(
            "ifdef CONFIG_A\nobj-y += a.o\nelse\nobj-y += not_a.o\nendif\n\
             ifeq ($(CONFIG_B),y)\nobj-y += b.o\nobj-$(CONFIG_C) += c.o\nendif\n\
             ifndef CONFIG_D\nobj-y += no_d.o\nelse\nobj-y += d.o\nendif\n\
             ifneq ($(CONFIG_E),)\nifeq ($(ARCH),arm)\nobj-y += e.o\nendif\nendif\n\
             obj-y += plain.o\n",
            "arm",
        );
        assert_eq!(gate_of(&f, "obj", "a.o"), Some("CONFIG_A"));
        assert_eq!(gate_of(&f, "obj", "not_a.o"), None);
        assert_eq!(gate_of(&f, "obj", "b.o"), Some("CONFIG_B"));
        assert_eq!(gate_of(&f, "obj", "c.o"), Some("CONFIG_C"));
        assert_eq!(gate_of(&f, "obj", "no_d.o"), None);
        assert_eq!(gate_of(&f, "obj", "d.o"), Some("CONFIG_D"));
        assert_eq!(gate_of(&f, "obj", "e.o"), Some("CONFIG_E"));
        assert_eq!(gate_of(&f, "obj", "plain.o"), None);
    }

    #[test]
    fn arch_lists_srcarch_and_unexpanded_words() {
        let f = parse(
            "core-y += arch/arm/kernel/ $(patsubst %,arch/arm/mach-%/,$(machine-y))\n\
             core-$(CONFIG_VFP) += arch/arm/vfp/\nlibs-y := arch/$(SRCARCH)/lib/ $(libs-y)\n\
             obj-y += head$(MMUEXT).o\nobj-y += $(ARCH_CORE)\n",
            "arm",
        );
        assert_eq!(gate_of(&f, "core", "arch/arm/kernel/"), None);
        assert_eq!(gate_of(&f, "core", "arch/arm/vfp/"), Some("CONFIG_VFP"));
        assert_eq!(gate_of(&f, "libs", "arch/arm/lib/"), None);
        assert_eq!(f.unexpanded, 4, "{f:?}");
    }

    #[test]
    fn variables_set_in_the_file_are_expanded() {
        let f = parse(
            "libfdt_files = fdt.o fdt_ro.o\nlib-$(CONFIG_LIBFDT) += $(libfdt_files)\n\
             mmu-y := nommu.o\nmmu-$(CONFIG_MMU) := memory.o\nobj-y := filemap.o $(mmu-y)\n\
             obj-y += $(undefined-y)\n",
            "arm",
        );
        assert_eq!(gate_of(&f, "lib", "fdt_ro.o"), Some("CONFIG_LIBFDT"));
        assert_eq!(gate_of(&f, "obj", "nommu.o"), None);
        assert_eq!(gate_of(&f, "obj", "memory.o"), Some("CONFIG_MMU"));
        assert_eq!(gate_of(&f, "obj", "filemap.o"), None);
        assert_eq!(f.unexpanded, 1);
    }

    #[test]
    fn rules_recipes_and_garbage_build_nothing() {
        let f = parse(
            "$(obj)/foo.o: $(src)/foo.c\n\t$(call cmd,cc_o_c) obj-y += x.o\n\
             obj-y\n=\n-=- \nobj-$(CONFIG_X += broken.o\n\\",
            "arm",
        );
        assert!(f.entries.is_empty(), "{f:?}");
    }
}
