//! `size-report --by file|dir`'s attribution against binutils `size`: every
//! allocated section's attributions add up to the section's size as `size
//! -A` prints it, and all of them to `size`'s text, data and bss.
//!
//! * A small link made here (host `cc`, `ar`, `ld -Map` with a linker
//!   script that aligns, pads and writes `LONG`s): needs only the host
//!   toolchain.
//! * The real kernels `cargo xtask test` builds first (`arm-tiny`,
//!   `baseline` and `no-reorder-blocks`, whose build trees the final link
//!   is run again in); `XTASK_TEST_OBJTREE` (an object tree whose
//!   `vmlinux` to use, e.g. a bcm53xx build directory) and
//!   `XTASK_TEST_OBJTREE_PREFIX` (its cross prefix) pick another.
//! * `size-report --by` over those two builds' `attribution.json` files,
//!   which the build wrote: each section against `size -A`, each side's
//!   rows against `size`.

use crate::common::gate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use xtask::kernel_build::link_map;
use xtask::measure::linkmap::{self, Grouping};
use xtask::measure::sections::{alloc_sections, berkeley_sizes};
use xtask::util::layout::Layout;

/// `size -A FILE`: section name → size, every section.
fn size_a(prefix: &str, file: &Path) -> BTreeMap<String, u64> {
    let out = Command::new(format!("{prefix}size"))
        .arg("-A")
        .arg(file)
        .output()
        .expect("running size -A");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            (t.len() == 3).then(|| Some((t[0].to_string(), t[1].parse().ok()?)))?
        })
        .collect()
}

/// `size FILE` (Berkeley): text, data, bss.
fn size_berkeley(prefix: &str, file: &Path) -> [u64; 3] {
    let out = Command::new(format!("{prefix}size"))
        .arg(file)
        .output()
        .expect("running size");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().nth(1).expect("size's second line");
    let n: Vec<u64> = line
        .split_whitespace()
        .take(3)
        .map(|x| x.parse().expect("a number"))
        .collect();
    [n[0], n[1], n[2]]
}

/// The attribution of `vmlinux` from `map`, checked against `size`.
fn check_against_size(prefix: &str, vmlinux: &Path, map_text: &str) {
    let map = linkmap::parse(map_text).expect("parsing the map");
    let attribution =
        linkmap::attribute(&map, &alloc_sections(vmlinux).unwrap()).expect("attributing");
    let listed = size_a(prefix, vmlinux);
    for s in &attribution.sections {
        let sum: u64 = s.objects.values().sum();
        assert_eq!(
            Some(&sum),
            listed.get(&s.name),
            "{vmlinux:?} section {}: attributions add up to {sum}, size -A says {:?}",
            s.name,
            listed.get(&s.name)
        );
    }
    let t = attribution.totals();
    assert_eq!(
        [t.text, t.data, t.bss],
        size_berkeley(prefix, vmlinux),
        "{vmlinux:?}: totals against size"
    );
    let ours = berkeley_sizes(vmlinux).unwrap();
    assert_eq!([t.text, t.data, t.bss], [ours.text, ours.data, ours.bss]);
    // Rolled up by file or directory, nothing is lost or counted twice.
    for g in [
        Grouping::File,
        Grouping::Dir,
        Grouping::DirDepth(1),
        Grouping::DirDepth(2),
    ] {
        let dec: u64 = attribution.rollup(g).values().map(|c| c.dec()).sum();
        assert_eq!(dec, t.dec());
    }
}

#[test]
fn a_small_link_adds_up_to_size() {
    let needs = gate::Needs::new()
        .program("cc", "gcc")
        .program("ld", "binutils")
        .program("ar", "binutils")
        .program("size", "binutils");
    if !needs.met() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = |p: &str, text: &str| {
        let path = d.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "net/ipv4/tcp.c",
        "int tcp_state = 3; char tcp_buf[100]; int tcp(int x) { return x * tcp_state; }\n\
         const char tcp_name[] = \"tcp\";\n",
    );
    write(
        "drivers/net/eth.c",
        "long eth_counter; short eth_table[7] = {1}; int eth(int x) { return x + 1; }\n\
         __attribute__((aligned(64))) int eth_aligned[3] = {1, 2, 3};\n",
    );
    write(
        "lib/string.c",
        "int strlen_x(const char *s, int n) { int h = 0; for (int i = 0; i < n; i++) h = h * 31 + s[i]; return h; }\n",
    );
    write(
        "link.lds",
        "SECTIONS {\n . = 0x10000;\n .text : { *(.text) . = ALIGN(256); LONG(0x12345678) *(.text.*) }\n\
         .rodata : { *(.rodata*) }\n . = ALIGN(4096);\n .data : { *(.data) . = . + 0x20; }\n\
         .bss : { *(.bss) *(COMMON) }\n /DISCARD/ : { *(.comment) *(.note*) *(.eh_frame) }\n}\n",
    );
    let run = |prog: &str, args: &[&str]| {
        let out = Command::new(prog)
            .args(args)
            .current_dir(d)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{prog} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    for src in ["net/ipv4/tcp", "drivers/net/eth", "lib/string"] {
        run(
            "cc",
            &[
                "-O2",
                "-fno-pic",
                "-fno-asynchronous-unwind-tables",
                "-c",
                "-o",
                &format!("{src}.o"),
                &format!("{src}.c"),
            ],
        );
    }
    run("ar", &["rcs", "lib/lib.a", "lib/string.o"]);
    run(
        "ld",
        &[
            "-T",
            "link.lds",
            "-Map=out.map",
            "-o",
            "out",
            "net/ipv4/tcp.o",
            "drivers/net/eth.o",
            "--undefined=strlen_x",
            "lib/lib.a",
        ],
    );
    let map = std::fs::read_to_string(d.join("out.map")).unwrap();
    check_against_size("", &d.join("out"), &map);
    let a = linkmap::attribute(
        &linkmap::parse(&map).unwrap(),
        &alloc_sections(&d.join("out")).unwrap(),
    )
    .unwrap();
    let files = a.rollup(Grouping::File);
    assert!(files.contains_key("lib/string.o"), "{files:?}");
    assert!(files[linkmap::LINKER_DATA].text == 4, "{files:?}");
    let dirs = a.rollup(Grouping::Dir);
    assert!(dirs["net/ipv4/"].bss >= 100, "{dirs:?}");
}

/// Object trees to attribute: `XTASK_TEST_OBJTREE`, else arm-tiny's two.
fn object_trees() -> Vec<(String, PathBuf, PathBuf)> {
    if let Some(tree) = std::env::var_os("XTASK_TEST_OBJTREE") {
        let tree = PathBuf::from(tree);
        let prefix = std::env::var("XTASK_TEST_OBJTREE_PREFIX")
            .unwrap_or_else(|_| "arm-linux-gnueabi-".to_string());
        return vec![(prefix, tree.clone(), tree.join("vmlinux"))];
    }
    let layout = Layout::from_manifest_dir();
    let how = "`cargo xtask build --target arm-tiny --variant baseline --variant \
               no-reorder-blocks`, or set XTASK_TEST_OBJTREE";
    let mut out = Vec::new();
    for v in ["baseline", "no-reorder-blocks"] {
        let tree = layout.build_dir("arm-tiny", v);
        let vmlinux = layout.results_dir("arm-tiny", v).join("vmlinux");
        if !gate::Needs::new()
            .file(&tree.join("vmlinux.a"), how)
            .file(&vmlinux, how)
            .met()
        {
            return Vec::new();
        }
        out.push(("arm-linux-gnueabi-".to_string(), tree, vmlinux));
    }
    out
}

#[test]
fn a_real_kernel_adds_up_to_size() {
    for (prefix, tree, vmlinux) in object_trees() {
        if !gate::Needs::new()
            .program(&format!("{prefix}size"), "binutils-arm-linux-gnueabi")
            .met()
        {
            return;
        }
        let clock = std::time::Instant::now();
        let (text, how) = link_map::map_text(&tree).expect("the link map");
        eprintln!(
            "{}: map by {how} in {:.2} s",
            tree.display(),
            clock.elapsed().as_secs_f64()
        );
        check_against_size(&prefix, &vmlinux, &text);
    }
}

/// `size-report --by dir` and `--by file` over the end-to-end build
/// (arm-tiny, `baseline` → `no-reorder-blocks`, from the `attribution.json`
/// each build wrote): every section of each side's record adds up to `size
/// -A`'s figure, the rows of the report to `size`'s text, data and bss of
/// each vmlinux, and the rows' changes to the change of `dec`.
#[test]
fn the_reports_rows_of_a_real_build_add_up_to_size() {
    use xtask::host::selftest::{E2E_TARGET, E2E_VARIANTS};
    use xtask::report::{self, Format, ReportRequest, Style};
    use xtask::results::attribution::{AttributionRecord, FILE_NAME};

    let prefix = "arm-linux-gnueabi-";
    let mut needs =
        gate::Needs::new().program(&format!("{prefix}size"), "binutils-arm-linux-gnueabi");
    let dirs: Vec<PathBuf> = E2E_VARIANTS
        .iter()
        .map(|v| xtask::host::selftest::e2e_results_dir(v))
        .collect();
    for dir in &dirs {
        needs = needs.file(
            &dir.join(FILE_NAME),
            "`cargo xtask test` builds it before the tests",
        );
    }
    if !needs.met() {
        return;
    }
    let mut berkeley = Vec::new();
    for dir in &dirs {
        let vmlinux = dir.join("vmlinux");
        let record = AttributionRecord::read(dir, "rebuild").unwrap().unwrap();
        let listed = size_a(prefix, &vmlinux);
        for s in &record.sections {
            let sum: u64 = s.objects.values().sum();
            assert_eq!(
                Some(&sum),
                listed.get(&s.name),
                "{}: section {} adds up to {sum}",
                dir.display(),
                s.name
            );
        }
        berkeley.push(size_berkeley(prefix, &vmlinux));
    }
    let [base, variant] = E2E_VARIANTS;
    for by in [Grouping::Dir, Grouping::File, Grouping::DirDepth(2)] {
        let request = ReportRequest {
            targets: vec![E2E_TARGET.to_string()],
            base: base.to_string(),
            variants: vec![variant.to_string()],
            symbols: None,
            by: Some(by),
            devices: None,
            rootfs: None,
            allow_mismatch: false,
            agreement: false,
            lab: report::LabRuns::Off,
        };
        let r = report::load(&Layout::from_manifest_dir(), &request).unwrap();
        let diff = r.targets[0].comparisons[0].attribution.clone().unwrap();
        for (i, after) in [false, true].into_iter().enumerate() {
            let sum = diff.rows.iter().fold([0u64; 3], |[t, d, b], row| {
                let c = if after { row.after } else { row.before };
                [t + c.text, d + c.data, b + c.bss]
            });
            assert_eq!(sum, berkeley[i], "{by:?}: side {i} against size");
        }
        let dec = |s: [u64; 3]| s.iter().sum::<u64>() as i64;
        let change: i64 = diff.rows.iter().map(|r| r.delta()).sum();
        assert_eq!(change, dec(berkeley[1]) - dec(berkeley[0]));
        assert!(diff.changed().count() > 0, "{by:?}: no row changed");
        let deltas: Vec<u64> = diff.rows.iter().map(|r| r.delta().unsigned_abs()).collect();
        assert!(
            deltas.windows(2).all(|w| w[0] >= w[1]),
            "{by:?}: not by |change|"
        );
        let text = report::render(&r, Format::Text, &Style::default()).unwrap();
        eprintln!("{text}");
    }
}
