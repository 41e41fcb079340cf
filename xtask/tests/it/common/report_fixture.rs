//! A throw-away workspace for the size-report tests: `targets/`,
//! `patches/variants.toml` and `target/xtask/results/<target>/<variant>/`
//! with `result.json` files and small but valid ELF `vmlinux` files whose
//! sections and symbols the test chooses.
//!
//! `crate::common::report_fixture`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use xtask::measure::sections::SectionSizes;
use xtask::results::{
    ArtifactRecord, BuildResult, Cflags, PatchRecord, SourceRecord, VariantRecord,
};
use xtask::util::layout::Layout;

/// A size-report request for `targets` (empty: all) and `variants`
/// (empty: every built one) against `baseline`, without symbols.
pub fn request(targets: &[&str], variants: &[&str]) -> xtask::report::ReportRequest {
    xtask::report::ReportRequest {
        targets: targets.iter().map(|s| s.to_string()).collect(),
        base: "baseline".to_string(),
        variants: variants.iter().map(|s| s.to_string()).collect(),
        symbols: None,
        by: None,
        devices: None,
        rootfs: None,
        allow_mismatch: false,
        agreement: false,
        lab: xtask::report::LabRuns::Newest,
    }
}

/// Loads and renders `request` over `fixture`'s results.
pub fn render(
    fixture: &Fixture,
    request: &xtask::report::ReportRequest,
    format: xtask::report::Format,
    style: xtask::report::Style,
) -> String {
    let report = xtask::report::load(&fixture.layout(), request).expect("loading the report");
    xtask::report::render(&report, format, &style).expect("rendering")
}

/// Two targets (bcm53xx, ath79), the standard pair each.
pub fn two_targets() -> Fixture {
    let f = Fixture::new();
    f.standard("bcm53xx");
    f.standard("ath79");
    f
}

/// A symbol for [`elf32`]: name, size in bytes, nm letter (`T`, `t`, `D`,
/// `d`, `B`, `b`).
pub type Sym = (&'static str, u32, char);

/// A little-endian 32-bit ARM ELF executable with `.text` (`text` bytes,
/// alloc+exec), `.data` (`data` bytes, alloc+write), `.bss` (`bss` bytes,
/// NOBITS), and a `.symtab` holding `symbols` (upper-case letters global,
/// lower-case local), placed one after another in their section.
pub fn elf32(text: u32, data: u32, bss: u32, symbols: &[Sym]) -> Vec<u8> {
    const EHDR: u32 = 52;
    let (text_addr, data_addr) = (0x8000u32, 0x0010_0000u32);
    let bss_addr = data_addr + data;
    let shstrtab = b"\0.text\0.data\0.bss\0.symtab\0.strtab\0.shstrtab\0".to_vec();
    let name_at = |n: &str| -> u32 {
        let needle = format!("\0{n}\0");
        shstrtab
            .windows(needle.len())
            .position(|w| w == needle.as_bytes())
            .unwrap() as u32
            + 1
    };

    // Locals first, as ELF requires.
    let mut ordered: Vec<&Sym> = symbols.iter().filter(|s| s.2.is_lowercase()).collect();
    let first_global = ordered.len() as u32 + 1;
    ordered.extend(symbols.iter().filter(|s| s.2.is_uppercase()));
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; 16];
    let mut next = [text_addr, data_addr, bss_addr];
    for (name, size, kind) in ordered {
        let (shndx, slot, typ) = match kind.to_ascii_lowercase() {
            't' => (1u16, 0, 2u8), // STT_FUNC
            'd' => (2, 1, 1),      // STT_OBJECT
            'b' => (3, 2, 1),
            other => panic!("unsupported symbol kind {other}"),
        };
        let bind: u8 = if kind.is_uppercase() { 1 } else { 0 };
        symtab.extend((strtab.len() as u32).to_le_bytes());
        strtab.extend(name.as_bytes());
        strtab.push(0);
        symtab.extend(next[slot].to_le_bytes());
        symtab.extend(size.to_le_bytes());
        symtab.push(bind << 4 | typ);
        symtab.push(0);
        symtab.extend(shndx.to_le_bytes());
        next[slot] += size;
    }

    let mut body = Vec::new();
    let text_off = EHDR;
    body.extend(std::iter::repeat_n(0xaa, text as usize));
    let data_off = text_off + text;
    body.extend(std::iter::repeat_n(0x55, data as usize));
    let symtab_off = data_off + data;
    body.extend(&symtab);
    let strtab_off = symtab_off + symtab.len() as u32;
    body.extend(&strtab);
    let shstrtab_off = strtab_off + strtab.len() as u32;
    body.extend(&shstrtab);
    while body.len() % 4 != 0 {
        body.push(0);
    }
    let shoff = EHDR + body.len() as u32;

    let mut out = Vec::new();
    out.extend(b"\x7fELF\x01\x01\x01\0\0\0\0\0\0\0\0\0");
    out.extend(2u16.to_le_bytes()); // ET_EXEC
    out.extend(40u16.to_le_bytes()); // EM_ARM
    out.extend(1u32.to_le_bytes());
    out.extend(text_addr.to_le_bytes()); // entry
    out.extend(0u32.to_le_bytes()); // phoff
    out.extend(shoff.to_le_bytes());
    out.extend(0x0500_0000u32.to_le_bytes()); // EABI5
    out.extend(52u16.to_le_bytes());
    out.extend(32u16.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out.extend(40u16.to_le_bytes());
    out.extend(7u16.to_le_bytes()); // shnum
    out.extend(6u16.to_le_bytes()); // shstrndx
    assert_eq!(out.len(), EHDR as usize);
    out.extend(body);

    let mut sh = |name: u32,
                  typ: u32,
                  flags: u32,
                  addr: u32,
                  off: u32,
                  size: u32,
                  link: u32,
                  info: u32,
                  align: u32,
                  entsize: u32| {
        for v in [
            name, typ, flags, addr, off, size, link, info, align, entsize,
        ] {
            out.extend(v.to_le_bytes());
        }
    };
    sh(0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    sh(
        name_at(".text"),
        1,
        6,
        text_addr,
        text_off,
        text,
        0,
        0,
        4,
        0,
    );
    sh(
        name_at(".data"),
        1,
        3,
        data_addr,
        data_off,
        data,
        0,
        0,
        4,
        0,
    );
    sh(name_at(".bss"), 8, 3, bss_addr, symtab_off, bss, 0, 0, 4, 0);
    sh(
        name_at(".symtab"),
        2,
        0,
        0,
        symtab_off,
        symtab.len() as u32,
        5,
        first_global,
        4,
        16,
    );
    sh(
        name_at(".strtab"),
        3,
        0,
        0,
        strtab_off,
        strtab.len() as u32,
        0,
        0,
        1,
        0,
    );
    sh(
        name_at(".shstrtab"),
        3,
        0,
        0,
        shstrtab_off,
        shstrtab.len() as u32,
        0,
        0,
        1,
        0,
    );
    out
}

/// A workspace in a temporary directory.
pub struct Fixture {
    pub dir: tempfile::TempDir,
}

const TARGETS: &[(&str, &str)] = &[
    (
        "bcm53xx",
        r#"openwrt = "bcm53xx/generic"
soc = "BCM47094"
cpu = "ARM Cortex-A9 (SMP)"
arch = "arm"
cross_compile = "arm-linux-gnueabi-"
compiler_package = "gcc-arm-linux-gnueabi"
kernel = "6.12"
make_targets = ["zImage"]
artifacts = ["zImage", "vmlinux", "vmlinux.lzma"]
[kconfig]
base = "multi_v7_defconfig"
fragments = ["kconfig/test.config"]
"#,
    ),
    (
        "ath79",
        r#"openwrt = "ath79/generic"
aliases = ["ar71xx"]
soc = "QCA9558"
cpu = "MIPS 74Kc"
arch = "mips"
cross_compile = "mips-linux-gnu-"
compiler_package = "gcc-mips-linux-gnu"
kernel = "6.12"
artifacts = ["vmlinux", "vmlinux.lzma", "uImage"]
[uimage]
load_address = "0x80060000"
[kconfig]
base = "ath79_defconfig"
"#,
    ),
];

const VARIANTS: &str = r##"[variants.baseline]
description = "OpenWrt's historical -fno-reorder-blocks -fno-tree-ch"
os = "-Os -fno-reorder-blocks -fno-tree-ch"
o2 = "-O2 -fno-reorder-blocks -fno-tree-ch"

[variants.no-reorder-blocks]
description = "RFC: let GCC reorder basic blocks again"
os = "-Os -fno-tree-ch"
o2 = "-O2 -fno-tree-ch"

[variants.no-swap]
description = "baseline without swap"
kconfig = ["# CONFIG_SWAP is not set"]

[variants.deinline]
description = "baseline + out-of-line ____napi_schedule()"
patches = ["experiments/900-deinline.patch"]
"##;

/// The sha256 every fixture build records for its kernel tarball.
pub const SOURCE_SHA: &str = "585a4a074597aefa2b1a68ada83a3184ba351c127544dea80618bbcceaa3961f";
/// The sha256 of the fixture `.config`.
pub const CONFIG_SHA: &str = "64ed102bb790966c88c0bfc76b03f7efae13fcd952147b30a205fb7d4cb2d596";

impl Fixture {
    /// Targets `bcm53xx` and `ath79`, variants `baseline`,
    /// `no-reorder-blocks`, `no-swap` (kconfig) and `deinline` (patch); no
    /// results yet.
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("temporary directory");
        let root = dir.path();
        std::fs::create_dir_all(root.join("targets/kconfig")).unwrap();
        std::fs::write(root.join("targets/kconfig/test.config"), "CONFIG_SMP=y\n").unwrap();
        for (name, text) in TARGETS {
            std::fs::write(root.join(format!("targets/{name}.toml")), text).unwrap();
        }
        std::fs::create_dir_all(root.join("patches/experiments")).unwrap();
        std::fs::write(root.join("patches/variants.toml"), VARIANTS).unwrap();
        std::fs::write(root.join("patches/experiments/900-deinline.patch"), "").unwrap();
        Fixture { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn layout(&self) -> Layout {
        Layout::new(self.dir.path())
    }

    pub fn results_dir(&self, target: &str, variant: &str) -> PathBuf {
        self.layout().results_dir(target, variant)
    }

    /// A plausible `result.json` for (`target`, `variant`): flags from the
    /// fixture's variants, shared kernel/compiler/config, the given
    /// artifact sizes (bytes) and vmlinux sections. The vmlinux artifact's
    /// size is filled in by [`Fixture::write`].
    pub fn result(
        &self,
        target: &str,
        variant: &str,
        artifacts: &[(&str, u64)],
        sections: (u64, u64, u64),
    ) -> BuildResult {
        let layout = self.layout();
        let cc = match target {
            "bcm53xx" => "arm-linux-gnueabi-gcc",
            _ => "mips-linux-gnu-gcc",
        };
        let target_record = xtask::kernel_build::plan::target_record(
            &xtask::inputs::targets::Target::load(
                &layout.targets_dir().join(format!("{target}.toml")),
            )
            .unwrap(),
        )
        .unwrap();
        let variants =
            xtask::inputs::variants::load(&layout.variants_file(), &layout.patches_dir()).unwrap();
        let variant_record = match variants.iter().find(|v| v.name == variant) {
            Some(v) => xtask::kernel_build::plan::variant_record(v, &layout.patches_dir()).unwrap(),
            None => VariantRecord {
                name: variant.to_string(),
                description: String::new(),
                os_flags: String::new(),
                o2_flags: String::new(),
                patches: Vec::new(),
                kconfig: Vec::new(),
            },
        };
        let reorder = if variant == "no-reorder-blocks" {
            ""
        } else {
            " -fno-reorder-blocks"
        };
        let mut patches = vec![PatchRecord {
            name: "generic/pending-6.12/201-extra_optimization.patch".to_string(),
            sha256: if reorder.is_empty() { "b" } else { "a" }.repeat(64),
        }];
        if variant == "deinline" {
            patches.push(PatchRecord {
                name: "experiments/900-deinline.patch".to_string(),
                sha256: "c".repeat(64),
            });
        }
        let mut records: BTreeMap<String, ArtifactRecord> = artifacts
            .iter()
            .map(|(n, s)| {
                (
                    n.to_string(),
                    ArtifactRecord {
                        size: *s,
                        sha256: "0".repeat(64),
                    },
                )
            })
            .collect();
        records.insert(
            "vmlinux".to_string(),
            ArtifactRecord {
                size: 0,
                sha256: "0".repeat(64),
            },
        );
        BuildResult {
            schema: xtask::results::SCHEMA,
            build_key: xtask::util::hash::sha256_bytes(format!("{target}/{variant}").as_bytes()),
            target: target_record,
            variant: variant_record,
            backend: "kernel-tree".to_string(),
            kernel_source: SourceRecord {
                version: "6.12.117".to_string(),
                origin: "/usr/src/linux-source-6.12.tar.xz".to_string(),
                sha256: Some(SOURCE_SHA.to_string()),
            },
            compiler: format!("{cc} (Debian 12.2.0-14) 12.2.0"),
            kbuild_cflags: Cflags {
                os: format!("-Os{reorder} -fno-tree-ch"),
                o2: format!("-O2{reorder} -fno-tree-ch"),
                effective: "o2".to_string(),
                compile_command: format!("{cc} -c -o init/main.o init/main.c"),
            },
            artifacts: records,
            lzma: None,
            vmlinux_sections: SectionSizes {
                text: sections.0,
                data: sections.1,
                bss: sections.2,
            },
            patches,
            config_sha256: CONFIG_SHA.to_string(),
            started: "2026-11-30T00:17:41Z".to_string(),
            finished: "2026-11-30T00:21:14Z".to_string(),
            duration_seconds: 212.1,
            ccache: None,
            incremental_from: None,
            openwrt: None,
        }
    }

    /// Writes `result` (with a vmlinux of its sections and `symbols`) into
    /// its results directory; the recorded vmlinux size is the file's.
    /// Every other artifact is a file of `x` bytes of its recorded size
    /// (not sparse: a sparse member is refused by `results merge`), and
    /// each artifact's recorded sha256 is its file's.
    pub fn write(&self, mut result: BuildResult, symbols: &[Sym]) -> PathBuf {
        let dir = self.results_dir(&result.target.name, &result.variant.name);
        std::fs::create_dir_all(&dir).unwrap();
        let s = result.vmlinux_sections;
        let elf = elf32(s.text as u32, s.data as u32, s.bss as u32, symbols);
        std::fs::write(dir.join("vmlinux"), &elf).unwrap();
        if let Some(v) = result.artifacts.get_mut("vmlinux") {
            v.size = elf.len() as u64;
        }
        for (name, record) in result.artifacts.iter_mut() {
            let file = dir.join(name);
            if name != "vmlinux" {
                std::fs::write(&file, vec![b'x'; record.size as usize]).unwrap();
            }
            record.sha256 = xtask::util::hash::sha256_file(&file).unwrap();
        }
        result.write(&dir).unwrap();
        dir
    }

    /// The standard pair for `target`: baseline and no-reorder-blocks with
    /// a bigger zImage, a smaller vmlinux text and a few symbol changes.
    pub fn standard(&self, target: &str) {
        let image = if target == "bcm53xx" {
            "zImage"
        } else {
            "uImage"
        };
        let base = self.result(
            target,
            "baseline",
            &[(image, 1_840_424), ("vmlinux.lzma", 1_520_111)],
            (30_000, 4_000, 2_000),
        );
        let variant = self.result(
            target,
            "no-reorder-blocks",
            &[(image, 1_871_328), ("vmlinux.lzma", 1_519_000)],
            (29_712, 4_004, 2_000),
        );
        self.write(base, BASE_SYMBOLS);
        self.write(variant, VARIANT_SYMBOLS);
    }
}

/// Base symbols: grows/shrinks/removed/clone cases.
pub const BASE_SYMBOLS: &[Sym] = &[
    ("start_kernel", 400, 'T'),
    ("schedule", 900, 'T'),
    ("napi_poll.isra.0", 300, 't'),
    ("old_helper", 64, 't'),
    ("jiffies", 8, 'D'),
    ("init_buf", 256, 'b'),
];

/// Variant symbols.
pub const VARIANT_SYMBOLS: &[Sym] = &[
    ("start_kernel", 420, 'T'),
    ("schedule", 812, 'T'),
    ("napi_poll", 296, 't'),
    ("new_helper.constprop.0", 40, 't'),
    ("jiffies", 8, 'D'),
    ("init_buf", 260, 'b'),
];

/// Writes `dir/attribution.json` for the result there, as a build would:
/// `objects` per section (`.text`, `.data`, `.bss`, each of the size
/// result.json records), the rest of each section to the alignment gaps.
pub fn write_attribution(dir: &Path, objects: [&[(&str, u64)]; 3]) {
    let result = BuildResult::read(dir).unwrap();
    let s = result.vmlinux_sections;
    let mut sections = Vec::new();
    for ((name, class, size), objects) in [
        (
            ".text",
            xtask::measure::sections::SectionClass::Text,
            s.text,
        ),
        (
            ".data",
            xtask::measure::sections::SectionClass::Data,
            s.data,
        ),
        (".bss", xtask::measure::sections::SectionClass::Bss, s.bss),
    ]
    .into_iter()
    .zip(objects)
    {
        let mut map: BTreeMap<String, u64> =
            objects.iter().map(|(o, b)| (o.to_string(), *b)).collect();
        let rest = size - map.values().sum::<u64>();
        map.insert(xtask::measure::linkmap::GAPS.to_string(), rest);
        sections.push(xtask::measure::linkmap::SectionAttribution {
            name: name.to_string(),
            class,
            size,
            objects: map,
        });
    }
    xtask::results::attribution::AttributionRecord {
        schema: xtask::results::attribution::SCHEMA,
        vmlinux_sha256: result.artifacts["vmlinux"].sha256.clone(),
        map: "ld -Map (the final link run again)".to_string(),
        sections,
    }
    .write(dir)
    .unwrap();
}
