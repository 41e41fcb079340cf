//! Random and edge-case `nm --size-sort` listings run through the real
//! `scripts/bloat-o-meter` (with a stand-in `nm` that prints the listing) and
//! through [`xtask::measure::bloat`]: the outputs must be equal byte for byte. This
//! reaches what compiled fixtures rarely produce: ties in delta, names with
//! `:` or several `.NUMBER`s, sizes wider than the columns, non-ASCII names,
//! empty sides and percentages that are exact halves at two decimals.

use crate::common::elf_tools;
use crate::common::gate;

use std::fmt::Write as _;

use elf_tools::BloatJob;
use xshell::{cmd, Shell};
use xtask::measure::bloat::{self, BloatMode};
use xtask::measure::symbols::NmSymbol;

/// xorshift64*: deterministic, so a failure names a reproducible case.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const NAMES: &[&str] = &[
    "foo",
    "bar",
    "baz",
    "Zeta",
    "zeta",
    "_under",
    "__mod_dev_table",
    "__mod_x",
    "__se_sys_read",
    "__se_compat_sys_ioctl",
    "__addressable_init",
    "linux_banner",
    "linux_banner2",
    "vermagic",
    "my:colon",
    "x.1y",
    "a.1.2",
    "f..3",
    "foo.12",
    "foo.isra.0",
    "foo.constprop.3",
    "foo.part.0.cold",
    "counter.0",
    "counter.1",
    "counter.22",
    "ünïcode_name",
    "αβγ.7",
    "a_rather_long_function_name_that_is_longer_than_forty_columns",
    "__func__.5",
    "__func__.18",
];

const TYPES: &[u8] = b"tTtTtTdDbBrRvVwWuNnC?i";

fn listing(symbols: &[NmSymbol]) -> String {
    let mut out = String::new();
    for s in symbols {
        writeln!(out, "{:08x} {} {}", s.size, s.kind, s.name).unwrap();
    }
    out
}

fn random_side(rng: &mut Rng) -> Vec<NmSymbol> {
    let count = rng.below(40);
    (0..count)
        .map(|_| {
            let name = if rng.below(3) == 0 {
                format!("sym_{}", rng.below(30))
            } else {
                NAMES[rng.below(NAMES.len())].to_string()
            };
            let size = match rng.below(10) {
                0 => rng.next() % (1 << 36) + 1,        // wider than "%7s"
                1..=3 => (rng.below(4) as u64 + 1) * 8, // many equal deltas
                _ => rng.next() % 4096 + 1,
            };
            NmSymbol {
                name,
                size,
                kind: TYPES[rng.below(TYPES.len())] as char,
            }
        })
        .collect()
}

fn sym(name: &str, size: u64, kind: char) -> NmSymbol {
    NmSymbol {
        name: name.to_string(),
        size,
        kind,
    }
}

/// Pairs chosen for their totals: empty sides, and changes of exactly
/// ±0.125 %, ±0.375 %, 0.625 % (ties for `%+.2f`).
fn edge_cases() -> Vec<(Vec<NmSymbol>, Vec<NmSymbol>)> {
    let mut cases = vec![
        (vec![], vec![]),
        (vec![], vec![sym("foo", 10, 'T')]),
        (vec![sym("foo", 10, 'T')], vec![]),
        (vec![sym("foo", 10, 'U')], vec![sym("foo", 12, 'T')]),
    ];
    for after in [801, 803, 805, 799, 797, 800] {
        cases.push((
            vec![sym("foo", 800, 'T'), sym("bar", 4, 'r')],
            vec![sym("foo", after, 'T'), sym("bar", 4, 'r')],
        ));
    }
    cases
}

#[test]
fn synthetic_listings_match_bloat_o_meter() {
    let needs = gate::Needs::new()
        .program("sh", "dash")
        .program("cat", "coreutils");
    if !elf_tools::with_bloat_o_meter(needs).met() {
        return;
    }
    let script = elf_tools::bloat_o_meter();
    let dir = tempfile::tempdir().expect("temporary directory");
    // bloat-o-meter runs "{prefix}nm --size-sort FILE"; this nm prints FILE.
    let fake_nm = dir.path().join("fake-nm");
    std::fs::write(&fake_nm, "#!/bin/sh\nexec cat \"$2\"\n").unwrap();
    let sh = Shell::new().unwrap();
    cmd!(sh, "chmod +x {fake_nm}").quiet().run().unwrap();
    let prefix = format!("{}/fake-", dir.path().display());

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut cases = edge_cases();
    for _ in 0..40 {
        let old = random_side(&mut rng);
        // New: mostly the old symbols with some sizes changed, plus churn.
        let mut new = Vec::new();
        for s in &old {
            if rng.below(6) == 0 {
                continue; // removed
            }
            let mut s = s.clone();
            if rng.below(2) == 0 {
                s.size = (s.size as i64 + rng.below(64) as i64 - 32).max(1) as u64;
            }
            new.push(s);
        }
        new.extend(random_side(&mut rng).into_iter().take(8));
        cases.push((old, new));
    }

    let mut files = Vec::new();
    for (i, (old, new)) in cases.iter().enumerate() {
        let old_path = dir.path().join(format!("{i}.old"));
        let new_path = dir.path().join(format!("{i}.new"));
        std::fs::write(&old_path, listing(old)).unwrap();
        std::fs::write(&new_path, listing(new)).unwrap();
        files.push((old_path, new_path));
    }
    let mut jobs = Vec::new();
    for (i, (old, new)) in files.iter().enumerate() {
        for mode in BloatMode::ALL {
            jobs.push((
                i,
                BloatJob {
                    prefix: &prefix,
                    mode,
                    old,
                    new,
                },
            ));
        }
    }
    let bare: Vec<BloatJob<'_>> = jobs
        .iter()
        .map(|(_, j)| BloatJob {
            prefix: j.prefix,
            mode: j.mode,
            old: j.old,
            new: j.new,
        })
        .collect();
    let reference = elf_tools::run_bloat_o_meter_batch(&script, &bare);
    let mut failures = Vec::new();
    for ((i, job), theirs) in jobs.iter().zip(&reference) {
        let (old, new) = &cases[*i];
        let ours = bloat::diff(old, new, job.mode).render();
        if let Some(report) = elf_tools::first_difference(&ours, theirs) {
            failures.push(format!(
                "case {i} ({}), {:?}: {report}\n--- old\n{}--- new\n{}",
                job.old.display(),
                job.mode.flag(),
                listing(old),
                listing(new)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        jobs.len(),
        failures.join("\n")
    );
}

/// `strip_numbers` against Python's `re.sub(r'\.[0-9]+', '', name)`, the
/// expression bloat-o-meter uses.
#[test]
fn strip_numbers_matches_python_re() {
    if !gate::Needs::new().program("python3", "python3").met() {
        return;
    }
    let mut names: Vec<String> = NAMES.iter().map(|s| s.to_string()).collect();
    names.extend(
        [
            "",
            ".",
            ".1",
            "1.",
            "..1",
            "a.b.1",
            "a.1b.2c",
            "x.0001",
            "x.1.2.3",
            "x.a1",
            "é.9",
            "x.٣",
            "x.１",
            "a.1.",
            "a.123456789012345678901234567890",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let input: String = names.iter().map(|n| format!("{n}\n")).collect();
    let sh = Shell::new().unwrap();
    let python = elf_tools::python3();
    let code = "import re, sys\nr = re.compile(r'\\.[0-9]+')\nfor line in sys.stdin.read().split('\\n')[:-1]:\n    print(r.sub('', line))";
    let out = cmd!(sh, "{python} -c {code}")
        .env("PYTHONIOENCODING", "utf-8")
        .stdin(input)
        .quiet()
        .read()
        .unwrap();
    let theirs: Vec<&str> = out.split('\n').collect();
    let ours: Vec<String> = names.iter().map(|n| bloat::strip_numbers(n)).collect();
    assert_eq!(ours.len(), theirs.len());
    for ((name, a), b) in names.iter().zip(&ours).zip(&theirs) {
        assert_eq!(a, b, "strip_numbers({name:?})");
    }
}
