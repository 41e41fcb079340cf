//! Small C programs, compiled with the cross compilers in two versions, for
//! the differential tests against binutils `nm`/`size` and bloat-o-meter.
//!
//! The source exercises what bloat-o-meter and nm's letters care about:
//! functions that grow, shrink, appear and disappear; local statics that get
//! `.NUMBER` suffixes; data, read-only data, bss, TLS, commons; weak
//! functions and objects; the generated names bloat-o-meter skips
//! (`__mod_`, `__se_sys`, `linux_banner`, …); compiler-clone names; names
//! with `.NUMBER` inside and with `:`; symbols in non-allocated, debug and
//! absolute sections; GNU unique objects and (ARM, x86-64) ifuncs.
//!
//! `crate::common::elf_fixtures`; it builds with `crate::common::elf_tools`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use xshell::{cmd, Shell};

/// The fixture source; `-DV2` selects the second version.
pub const SOURCE: &str = r##"#ifdef V2
#define PICK(a, b) b
#else
#define PICK(a, b) a
#endif
typedef unsigned long ul;
volatile ul sink;
__attribute__((noinline)) ul grows(ul x)
{
	ul r = x * 3;
#ifdef V2
	for (ul i = 0; i < x; i++) {
		r ^= r << 3;
		sink = r;
		r += i * 7;
	}
#endif
	return r;
}
__attribute__((noinline)) ul shrinks(ul x)
{
#ifndef V2
	for (ul i = 0; i < x; i++) {
		sink = i * x;
		x ^= sink >> 2;
	}
#endif
	return x + 1;
}
#ifndef V2
__attribute__((noinline)) ul removed_fn(ul x) { sink = x; return x * 5 + 1; }
#else
__attribute__((noinline)) ul added_fn(ul x) { sink = x; return x * 9 + 3; }
#endif
static __attribute__((noinline)) ul local_helper(ul x) { sink = x; return x * PICK(7, 7777) + sink; }
ul use_local(ul x) { return local_helper(x) + 1; }
ul count_a(void) { static ul counter; return ++counter; }
ul count_b(void) { static ul counter[PICK(2, 4)]; return ++counter[1]; }
ul data_table[PICK(4, 8)] = { 1, 2, 3 };
const ul ro_table[PICK(8, 4)] = { 1, 2, 3, 4 };
ul bss_buf[PICK(16, 32)];
static ul local_data[PICK(3, 2)] = { 1 };
static ul local_bss[PICK(5, 6)];
ul *use_locals(int i) { return i ? local_data : local_bss; }
const char greeting[] = PICK("hello", "hello, world");
__attribute__((weak)) ul weak_fn(ul x) { return x + PICK(1, 100000); }
__attribute__((weak)) ul weak_obj[PICK(3, 5)] = { 1 };
extern ul weak_undef __attribute__((weak));
ul *use_weak_undef(void) { return &weak_undef; }
ul tentative[PICK(3, 4)];
ul small_a = 1, small_b;
ul __mod_fake_device_table[PICK(2, 3)] = { 1 };
const char linux_banner[] = PICK("Linux v1", "Linux version 2");
const char vermagic[] = PICK("6.12", "6.12.1 SMP");
ul __addressable_thing[PICK(2, 9)] = { 1 };
long __se_sys_fake(long a) { return a * PICK(3, 5) + sink; }
long __se_compat_sys_fake(long a) { return a * PICK(3, 5) + sink; }
ul tie_a[PICK(1, 2)] = { 1 };
ul tie_b[PICK(1, 2)] = { 1 };
ul tie_c[PICK(1, 2)] = { 1 };
__thread ul tls_var[PICK(2, 3)];
__attribute__((section(".init.text"))) ul init_fn(ul x) { return x ^ PICK(5, 0x12345); }
__attribute__((section(".data..read_mostly"))) ul read_mostly[PICK(2, 1)] = { 1 };
ul clone_base(ul x) { return x + sink; }
ul clone_isra(ul x) __asm__("clone_base.isra.0");
ul clone_isra(ul x) { return x * sink + PICK(1, 1000); }
#ifdef V2
ul clone_cp(ul x) __asm__("clone_base.constprop.0.isra.0");
ul clone_cp(ul x) { return x * sink * sink; }
#else
ul clone_part(ul x) __asm__("clone_base.part.0");
ul clone_part(ul x) { return x + sink * 3; }
#endif
ul mid_num[PICK(2, 3)] __asm__("mid.1x") = { 1 };
#define STR_(x) #x
#define STR(x) STR_(x)
__asm__(".pushsection .nonalloc_ro,\"\",%progbits\n"
	".type nonalloc_sym, %object\n"
	"nonalloc_sym: .word 1, 2\n"
	".size nonalloc_sym, 8\n"
	".popsection\n"
	".pushsection .nonalloc_rw,\"w\",%progbits\n"
	".type nonalloc_rw_sym, %object\n"
	"nonalloc_rw_sym: .word 1, 2, 3\n"
	".size nonalloc_rw_sym, 12\n"
	".popsection\n"
	".pushsection .debug_fake,\"\",%progbits\n"
	".type debug_sym, %object\n"
	"debug_sym: .word 1\n"
	".size debug_sym, 4\n"
	".popsection\n"
	".pushsection .data.colon,\"aw\",%progbits\n"
	".globl \"has:colon\"\n"
	".type \"has:colon\", %object\n"
	"\"has:colon\": .space " STR(PICK(4, 8)) "\n"
	".size \"has:colon\", " STR(PICK(4, 8)) "\n"
	".type uniq_obj, %gnu_unique_object\n"
	"uniq_obj: .space " STR(PICK(4, 12)) "\n"
	".size uniq_obj, " STR(PICK(4, 12)) "\n"
	".popsection\n"
	".globl abs_sym\n"
	".set abs_sym, 0x1234\n"
	".size abs_sym, 4\n");
void _start(void) { sink = grows(1) + shrinks(2) + use_local(3) + count_a() + count_b(); }
#if defined(__arm__) || defined(__x86_64__)
static ul ifunc_impl(ul x) { return x + PICK(1, 3) * sink; }
static void *ifunc_resolve(void) { return (void *)ifunc_impl; }
ul ifunc_fn(ul x) __attribute__((ifunc("ifunc_resolve")));
#endif
"##;

/// A cross toolchain and the extra compiler flags only it understands.
pub struct Cross {
    /// `CROSS_COMPILE` prefix, e.g. `mips-linux-gnu-`.
    pub prefix: &'static str,
    /// A configuration only this architecture has (e.g. MIPS small data).
    pub extra: &'static [&'static str],
}

/// The toolchains: the router ones (ARM 32-bit LE, MIPS 32-bit BE and LE)
/// and x86-64 for a 64-bit ELF.
pub const CROSSES: &[Cross] = &[
    Cross {
        prefix: "arm-linux-gnueabi-",
        extra: &["-Os", "-mthumb"],
    },
    Cross {
        prefix: "mips-linux-gnu-",
        extra: &["-O2", "-mno-abicalls", "-fno-pic", "-G", "8", "-fcommon"],
    },
    Cross {
        prefix: "mipsel-linux-gnu-",
        extra: &["-O2", "-mno-abicalls", "-fno-pic", "-G", "8", "-fcommon"],
    },
    Cross {
        prefix: "x86_64-linux-gnu-",
        extra: &["-O1", "-fPIC"],
    },
];

/// Compiler configurations every toolchain builds.
const COMMON_CONFIGS: &[&[&str]] = &[&[
    "-O2",
    "-ffunction-sections",
    "-fdata-sections",
    "-fcommon",
    "-g",
]];

/// An old/new pair of one fixture build.
pub struct Fixture {
    /// Toolchain prefix for `nm`, `size` and bloat-o-meter's `-p`.
    pub prefix: &'static str,
    /// Toolchain, flags and object/linked, for messages.
    pub label: String,
    /// Built without `-DV2`.
    pub old: PathBuf,
    /// Built with `-DV2`.
    pub new: PathBuf,
}

/// Builds every fixture pair under `dir`: for each toolchain whose `gcc`,
/// `nm` and `size` exist (a toolchain missing one is a skip of the gate,
/// [`crate::common::gate::Needs`]) and each configuration,
/// a relocatable object (`-c`) and a `-nostdlib -static` executable linked
/// from it, in both versions.
pub fn build_fixtures(dir: &Path) -> Vec<Fixture> {
    let source = dir.join("fixture.c");
    std::fs::write(&source, SOURCE).expect("writing the fixture source");
    let sh = Shell::new().expect("shell");
    let mut fixtures = Vec::new();
    for cross in CROSSES {
        let prefix = cross.prefix;
        let cc = format!("{prefix}gcc");
        let needs = crate::common::gate::Needs::new();
        if !crate::common::elf_tools::cross_tools(needs, prefix, &["gcc", "nm", "size"]).met() {
            continue;
        }
        let configs = COMMON_CONFIGS.iter().copied().chain([cross.extra]);
        for (n, flags) in configs.enumerate() {
            let mut outputs = Vec::new();
            for version in [None, Some("-DV2")] {
                let stem = format!("{prefix}{n}{}", if version.is_some() { "-v2" } else { "" });
                let object = dir.join(format!("{stem}.o"));
                let linked = dir.join(format!("{stem}.elf"));
                cmd!(sh, "{cc} {flags...} {version...} -c {source} -o {object}")
                    .quiet()
                    .run()
                    .unwrap_or_else(|e| panic!("compiling the fixture with {cc} {flags:?}: {e}"));
                cmd!(
                    sh,
                    "{cc} {flags...} -nostdlib -static -Wl,-e,_start {object} -o {linked}"
                )
                .quiet()
                .run()
                .unwrap_or_else(|e| panic!("linking the fixture with {cc} {flags:?}: {e}"));
                outputs.push((object, linked));
            }
            let [(old_o, old_elf), (new_o, new_elf)]: [(PathBuf, PathBuf); 2] =
                outputs.try_into().expect("two versions");
            let flags = flags.join(" ");
            fixtures.push(Fixture {
                prefix,
                label: format!("{cc} {flags} -c"),
                old: old_o,
                new: new_o,
            });
            fixtures.push(Fixture {
                prefix,
                label: format!("{cc} {flags} linked"),
                old: old_elf,
                new: new_elf,
            });
        }
    }
    fixtures
}
