//! The lab's L1 cache model (`cargo xtask lab --cache-model`) against a
//! reference and in the lab, as CI runs it (root, QEMU, gcc, glib's
//! headers, Debian's archive for QEMU's source package once; a missing
//! tool fails the test under CI naming its package, elsewhere the gate,
//! `common/gate.rs`, skips it and says so):
//!
//! 1. Our plugin and QEMU's own `contrib/plugins/cache.c`, both built from
//!    the installed QEMU's Debian source package, run in one QEMU process
//!    (so on one instruction stream) while the ramips-mt7621 lab kernel boots
//!    its initramfs to `/init`'s shell; at exit both report: instructions
//!    (cache.c's I-cache accesses), L1I misses, L1D accesses and misses
//!    must be equal, for the target's geometry with its core model
//!    (`[lab.timing]`: branch predictor, L2) and a very different geometry
//!    with another core model and an L2 that cache.c models too: its L2
//!    accesses and misses must be equal as well (our L2 taking no
//!    write-backs, `l2writeback=0`, as cache.c's takes none). The counters
//!    our plugin serves on its socket while the guest runs never decrease
//!    and stay below the exit totals.
//! 2. A lab run with the model: every run has the three metrics and the
//!    core model's (ramips-mt7621 has `[lab.timing]`: cycles at least the
//!    instructions, packets/s the clock over them), the
//!    counters bracket the traffic, and instructions per packet times the
//!    `-icount` step (2^3 ns) agree with QEMU's own guest clock, the busy
//!    time behind ns/packet, within the sampling's slack.
//!
//! About 10–15 minutes on 2 cores when the lab kernel must be built, a few
//! minutes when it is.

use crate::common::gate;
use crate::common::lab_build;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use xshell::Shell;
use xtask::inputs::targets;
use xtask::lab::cache_model::{self, compile, geometry, read_counters, source};
use xtask::lab::process::{self, Limits};
use xtask::lab::{self, guest, kernel, qemu, rootfs, GroChoice, LabRequest};
use xtask::results::lab::{CacheCounters, CacheGeometry};
use xtask::results::lab::{Condition, Direction, Gro, LabMetric, LabRecord, Status};
use xtask::util::layout::Layout;

/// The Malta lab every lab test of CI boots: one lab kernel to build
/// (ramips-mt7621's boots one CPU by default, as brcm47xx's does, and
/// `lab_multicore.rs` boots it with two).
const TARGET: &str = "ramips-mt7621";

/// The lab tests share the process id the lab names its namespaces
/// after; one lab at a time.
use crate::common::leftovers::one_at_a_time;

/// What QEMU's `cache.c` printed at exit for core 0: data accesses, data
/// misses, instruction accesses, instruction misses, and with its L2 the
/// L2's accesses and misses.
fn reference_counts(log: &str) -> (CacheCounters, Option<(u64, u64)>) {
    let line = log
        .lines()
        .skip_while(|l| !l.starts_with("core #, data accesses"))
        .nth(1)
        .unwrap_or_else(|| panic!("no cache.c table in the plugin log:\n{log}"));
    let n: Vec<u64> = line
        .split_whitespace()
        .filter(|w| !w.ends_with('%'))
        .map(|w| w.parse().unwrap())
        .collect();
    assert!(
        n.len() == 5 || n.len() == 7,
        "core, daccess, dmiss, iaccess, imiss[, l2access, l2miss]: {line}"
    );
    assert_eq!(n[0], 0, "{line}");
    let l1 = CacheCounters {
        insns: n[3],
        l1i_misses: n[4],
        l1d_accesses: n[1],
        l1d_misses: n[2],
        core: None,
    };
    (l1, (n.len() == 7).then(|| (n[5], n[6])))
}

/// What our plugin printed at exit.
fn our_counts(log: &str) -> CacheCounters {
    let line = log
        .lines()
        .find_map(|l| l.strip_prefix("xtask-cache exit "))
        .unwrap_or_else(|| panic!("no exit line of our plugin in the log:\n{log}"));
    CacheCounters::parse(
        &format!(
            "xtask-cache {} {line}",
            xtask::results::lab::cache::SNAPSHOT_VERSION
        ),
        None,
    )
    .unwrap()
}

/// The core model one comparison runs ours with: its plugin arguments
/// (`isa=…`, without `l2writeback`) and the L2 they give (cache.c models
/// that too).
struct Core {
    args: String,
    l2: Option<CacheGeometry>,
}

/// Boots `kernel` with `initramfs` and no NICs (so `/init` reports the
/// missing NICs and starts its shell), both plugins loaded with
/// `(icache, dcache)` and `core`'s L2, ours with `core`'s model; reads our
/// socket while the guest runs, then stops QEMU with SIGTERM (it runs the
/// plugins' exit callbacks) and returns (ours, cache.c's L1 counts,
/// cache.c's L2 accesses and misses) at exit.
fn both_plugins(
    spec: &xtask::inputs::lab::LabSpec,
    (kernel, initramfs): (&Path, &Path),
    (ours, reference): (&Path, &Path),
    (icache, dcache): (&CacheGeometry, &CacheGeometry),
    core: &Core,
    dir: &Path,
) -> (CacheCounters, CacheCounters, Option<(u64, u64)>) {
    let socket = dir.join("cache.sock");
    let console = dir.join("console.log");
    let log = dir.join("plugin.log");
    let ours = format!(
        "{},{},l2writeback=0",
        cache_model::plugin_arg(ours, (icache, dcache), Some(&socket)).unwrap(),
        core.args
    );
    let mut reference = format!(
        "{},{},limit=1",
        reference.display(),
        cache_model::geometry_args(icache, dcache)
    );
    if let Some(l2) = &core.l2 {
        reference.push_str(&format!(
            ",l2cachesize={},l2assoc={},l2blksize={}",
            l2.size_bytes, l2.ways, l2.line_bytes
        ));
    }
    let mut cmd = Command::new(&spec.qemu);
    cmd.args(["-M", &spec.machine, "-cpu", &spec.cpu, "-smp", "1", "-m"])
        .arg(spec.memory_mib.to_string())
        .args(["-nodefaults", "-no-reboot", "-display", "none"])
        .args(["-icount", qemu::ICOUNT, "-rtc", "clock=vm"])
        .arg("-kernel")
        .arg(kernel)
        .arg("-initrd")
        .arg(initramfs)
        .args(["-append", &qemu::kernel_cmdline(spec)])
        .arg("-serial")
        .arg(format!("file:{}", console.display()))
        .args(&spec.qemu_args)
        .args([
            "-plugin", &ours, "-plugin", &reference, "-d", "plugin", "-D",
        ])
        .arg(&log);
    let mut qemu = process::spawn(cmd, "QEMU", &dir.join("qemu.log")).unwrap();
    let started = Instant::now();
    let mut snapshots: Vec<CacheCounters> = Vec::new();
    loop {
        let text = std::fs::read_to_string(&console).unwrap_or_default();
        if text.contains(guest::FAILED) || text.contains(guest::READY) {
            break;
        }
        if let Some(status) = qemu.try_status().unwrap() {
            panic!(
                "QEMU exited ({status}):\n{}\n{text}",
                std::fs::read_to_string(dir.join("qemu.log")).unwrap_or_default()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the guest did not reach /init's shell:\n{text}"
        );
        if let Ok(c) = read_counters(&socket, Some((icache, dcache))) {
            snapshots.push(c.total);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    snapshots.push(
        read_counters(&socket, Some((icache, dcache)))
            .unwrap()
            .total,
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(qemu.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    qemu.wait(&Limits::within(Duration::from_secs(60))).unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let (ours, (reference, reference_l2)) = (our_counts(&text), reference_counts(&text));
    for pair in snapshots.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        assert!(
            b.since(&a).is_ok(),
            "a counter went backwards: {a:?} → {b:?}"
        );
    }
    let last = snapshots.last().unwrap();
    assert!(
        ours.since(last).is_ok(),
        "{last:?} read before exit, {ours:?} at exit"
    );
    assert!(last.insns > 0, "{snapshots:?}");
    (ours, reference, reference_l2)
}

#[test]
fn our_misses_equal_qemu_cache_c_on_one_instruction_stream() {
    let _serial = one_at_a_time();
    let layout = Layout::from_manifest_dir();
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    let target = targets::select(&all, &[TARGET.to_string()])
        .unwrap()
        .remove(0);
    let spec = kernel::spec_of(&target).unwrap();
    let needs = gate::Needs::new()
        .slow("builds the ramips-mt7621 lab kernel and boots it in QEMU")
        .root("taps and network namespaces")
        .cache_model_lab(spec);
    if !needs.met() {
        return;
    }

    let qemu_src = source::fetch(&layout, &spec.qemu_package).unwrap();
    let ours = compile::plugin(&layout, &qemu_src).unwrap();
    let reference = compile::reference(&layout, &qemu_src).unwrap();
    let sh = Shell::new().unwrap();
    let variants =
        xtask::inputs::variants::load(&layout.variants_file(), &layout.patches_dir()).unwrap();
    let baseline = xtask::inputs::variants::select(&variants, &["baseline".to_string()]).unwrap();
    let kernels = kernel::build_with(
        &sh,
        &layout,
        &target,
        &baseline,
        lab_build::options(),
        None,
        &kernel::Recipe::Profiles,
    )
    .unwrap();
    let initramfs = rootfs::prepare(&layout, spec).unwrap();

    let l1 = spec.l1.expect("ramips-mt7621 declares [lab.l1]");
    let timing = spec
        .timing
        .as_ref()
        .expect("ramips-mt7621 declares [lab.timing]");
    let own = Core {
        args: cache_model::core::plugin_args(spec, timing).unwrap(),
        l2: (timing.l2_size_bytes.value > 0).then_some(CacheGeometry {
            size_bytes: timing.l2_size_bytes.value,
            ways: timing.l2_ways.value,
            line_bytes: timing.l2_line_bytes.value,
        }),
    };
    let other = Core {
        args: "isa=mips,endian=little,bp=gshare,bpentries=1024,bphist=10,ras=2,btac=0,\
               l2size=65536,l2assoc=4,l2blksize=32"
            .to_string(),
        l2: Some(CacheGeometry {
            size_bytes: 65536,
            ways: 4,
            line_bytes: 32,
        }),
    };
    let small = (
        CacheGeometry {
            size_bytes: 8192,
            ways: 2,
            line_bytes: 16,
        },
        CacheGeometry {
            size_bytes: 4096,
            ways: 1,
            line_bytes: 64,
        },
    );
    let mut results = Vec::new();
    for ((icache, dcache), core) in [
        ((geometry(&l1.icache), geometry(&l1.dcache)), &own),
        (small, &other),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (mine, theirs, their_l2) = both_plugins(
            spec,
            (&kernels[0].image, &initramfs.path),
            (&ours.path, &reference.path),
            (&icache, &dcache),
            core,
            dir.path(),
        );
        eprintln!(
            "I {} / D {}: ours {mine:?}, cache.c {theirs:?}, its L2 {their_l2:?}",
            icache.describe(),
            dcache.describe()
        );
        assert_eq!(mine.l1(), theirs, "I {icache:?}, D {dcache:?}");
        let c = mine.core.expect("our plugin ran the core model");
        assert_eq!(their_l2.is_some(), core.l2.is_some());
        if let Some((accesses, misses)) = their_l2 {
            assert_eq!((c.l2_accesses, c.l2_misses), (accesses, misses), "{c:?}");
            assert!(misses > 1_000 && misses < accesses, "{c:?}");
        }
        // A boot runs tens of millions of branches; the predictor gets
        // most right, but not all.
        let branches = c.cond_taken + c.cond_not_taken;
        assert!(branches > 1_000_000, "{c:?}");
        assert!(
            c.cond_mispredicts > 1_000 && c.cond_mispredicts < branches / 4,
            "{c:?}"
        );
        assert!(c.jumps > 100_000 && c.unresolved < branches / 100, "{c:?}");
        // A boot to a shell: hundreds of millions of instructions, misses
        // in both caches, far fewer misses than accesses.
        assert!(mine.insns > 50_000_000, "{mine:?}");
        assert!(
            mine.l1i_misses > 1_000 && mine.l1i_misses < mine.insns / 10,
            "{mine:?}"
        );
        assert!(
            mine.l1d_misses > 1_000 && mine.l1d_misses < mine.l1d_accesses / 2,
            "{mine:?}"
        );
        results.push(mine);
    }
    // The smaller I-cache (8 KiB, 16-byte lines against 32 KiB, 32-byte
    // lines) misses more: the model follows its geometry. The D-caches
    // are not compared: the small one's 64-byte lines fetch twice as much
    // per miss, and on a boot that can outweigh its size (measured: 3.25 M
    // misses against 3.84 M, both equal to cache.c's), so their order is
    // not the geometry's to fix; the equality with cache.c above is the check.
    assert!(results[1].l1i_misses > results[0].l1i_misses, "{results:?}");
}

#[test]
fn the_lab_reads_the_model_around_each_run() {
    let _serial = one_at_a_time();
    let layout = Layout::from_manifest_dir();
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    let target = targets::select(&all, &[TARGET.to_string()])
        .unwrap()
        .remove(0);
    let spec = kernel::spec_of(&target).unwrap();
    let needs = gate::Needs::new()
        .slow("builds the ramips-mt7621 lab kernel and boots it in QEMU")
        .root("taps and network namespaces")
        .cache_model_lab(spec);
    if !needs.met() {
        return;
    }
    let sh = Shell::new().unwrap();
    let request = LabRequest::qemu(TARGET).with(|r| {
        r.variants = vec!["baseline".to_string()];
        r.runs = 2;
        r.duration_seconds = 3;
        r.gro = Some(GroChoice::On);
        r.control = false;
        r.build = lab_build::options();
        r.cache_model = true;
    });
    let dir = lab::run(&sh, &layout, &request)
        .unwrap()
        .expect("a lab directory");
    let record = LabRecord::read(&dir).unwrap();
    assert_eq!(record.status, Status::Complete);
    let model = record
        .cache_model
        .as_ref()
        .expect("lab.json records the model");
    let l1 = spec.l1.unwrap();
    // The target file's clock, which the model's packets/s is costed at.
    let clock_mhz = spec
        .timing
        .as_ref()
        .expect("ramips-mt7621 declares [lab.timing]")
        .clock_mhz
        .value;
    assert_eq!(model.icache, geometry(&l1.icache));
    assert_eq!(model.dcache, geometry(&l1.dcache));
    assert!(model.qemu_source.starts_with("qemu "), "{model:?}");
    for boot in &record.boots {
        assert!(
            boot.qemu_argv.iter().any(|a| a.contains("socket=")),
            "{:?}",
            boot.qemu_argv
        );
    }
    for run in &record.runs {
        let g = run.guest.as_ref().unwrap();
        let c = run.cache_model.as_ref().expect("every run reads the model");
        assert_eq!(c.work.packets, g.guest_work.packets);
        assert!(
            c.work.during.insns > 0 && c.work.during.l1i_misses > 0,
            "{c:?}"
        );
        assert!(model.timing.is_some(), "lab.json records the timing table");
        // ramips-mt7621 has [lab.timing]: every run is costed, and its cycles
        // are at least its instructions (CPI 1) plus its misses' cost.
        let core = c.core.as_ref().expect("the core model costs every run");
        let per = |n: u64| n as f64 / c.work.packets as f64;
        let cycles = &core.cycles_per_packet;
        assert!(
            (cycles.base - per(c.work.during.insns)).abs() < 1e-6 && cycles.total > cycles.base,
            "{core:?}"
        );
        assert!(core.taken_per_packet > 0.0 && core.mispredicts_per_packet > 0.0);
        let pps = run
            .metrics
            .iter()
            .find(|m| m.name == LabMetric::PacketsPerSecond.name())
            .unwrap();
        assert!(
            (pps.value - clock_mhz * 1e6 / cycles.total).abs() < 1.0,
            "{pps:?} at {clock_mhz} MHz"
        );
    }
    for direction in Direction::BOTH {
        let on = Condition::Forward {
            direction,
            gro: Gro::On,
        };
        let insns = record.samples("baseline", on, LabMetric::InsnsPerPacket.name());
        let ns = record.samples("baseline", on, LabMetric::CpuPerPacket.name());
        let l1i = record.samples("baseline", on, LabMetric::L1iMissesPerPacket.name());
        let l1d = record.samples("baseline", on, LabMetric::L1dMissesPerPacket.name());
        assert_eq!(insns.len(), 2, "{direction:?}");
        assert_eq!((l1i.len(), l1d.len()), (2, 2), "{direction:?}");
        assert!(l1i.iter().chain(&l1d).all(|&m| m > 0.0), "{l1i:?} {l1d:?}");
        // Under -icount shift=3 a guest instruction is 8 ns of guest time,
        // so QEMU's guest clock (the busy /proc/stat time behind ns/packet,
        // in 10 ms ticks, sampled a little outside the model's window, with
        // the sampling script's own work kept out of it: with that work
        // inside, a loaded host's 3,000-packet run gave a ratio of 1.49)
        // must agree with the plugin's count.
        for (i, n) in insns.iter().zip(&ns) {
            let ratio = n / (8.0 * i);
            assert!(
                (0.8..1.25).contains(&ratio),
                "{direction:?}: {n} ns/packet against {i} insns/packet × 8 ns (ratio {ratio:.3})"
            );
        }
    }
}
