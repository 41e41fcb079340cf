//! The lab's core model (`cargo xtask lab --cache-model` on a target with
//! `[lab.timing]`): the plugin refuses what it cannot model, and the known
//! answers of guest programs run under it in the ramips-mt7621 Malta guest
//! (CI, root: QEMU, network namespaces, the one Malta lab kernel the other
//! lab tests build too; what is missing goes through
//! `tests/it/common/gate.rs`: a failure under CI, a counted skip
//! elsewhere):
//!
//! * with brcm47xx's table (the 74K's majority-vote predictor, no L2):
//!   a branch always taken is predicted, an alternating one too (global
//!   history), a random one half the time; a pointer chase through 1 MiB
//!   costs the table's DRAM latency per load;
//! * with ramips-mt7621's own table (a bimodal predictor, a 256 KB L2) on
//!   the same guest: the alternating branch defeats the bimodal counters
//!   (50 % to 100 %), and the chase misses the L2 too.
//!
//! About two minutes when the lab kernel is built.

use crate::common::gate;
use crate::common::lab_build;

use std::process::Command;

use xtask::inputs::targets;
use xtask::lab::cache_model::{compile, source};
use xtask::lab::known_answer;
use xtask::lab::{self, kernel};
use xtask::util::layout::Layout;

/// QEMU refuses our plugin with a clear message when its core-model
/// arguments do not make a model; the plugin builds with -Werror.
#[test]
fn the_plugin_refuses_a_core_model_it_cannot_build() {
    let layout = Layout::from_manifest_dir();
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    let target = targets::select(&all, &["brcm47xx".to_string()])
        .unwrap()
        .remove(0);
    let spec = kernel::spec_of(&target).unwrap();
    let needs = gate::Needs::new()
        .slow("builds the cache-model plugin and starts QEMU with it")
        .cache_model_lab(spec);
    if !needs.met() {
        return;
    }
    let qemu_src = source::fetch(&layout, &spec.qemu_package).unwrap();
    let ours = compile::plugin(&layout, &qemu_src).unwrap();
    let l1 = "icachesize=32768,iassoc=4,iblksize=32,dcachesize=32768,dassoc=4,dblksize=32";
    for (extra, why) in [
        ("bp=bimodal,bpentries=512", "need isa="),
        ("isa=mips,bp=bimodal,bpentries=500", "power of two"),
        ("isa=mips,bp=gshare,bpentries=512", "bphist="),
        ("isa=sparc,bp=bimodal,bpentries=512", "isa=sparc"),
        (
            "isa=mips,bp=bimodal,bpentries=512,l2size=1000,l2assoc=8,l2blksize=32",
            "multiple of ways",
        ),
        ("isa=arm,bp=gshare,bpentries=4096,bphist=12,btac=3", "btac="),
    ] {
        let out = Command::new(&spec.qemu)
            .args(["-M", &spec.machine, "-nodefaults", "-display", "none"])
            .arg("-plugin")
            .arg(format!("{},{l1},{extra}", ours.path.display()))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra}: QEMU started");
        assert!(err.contains(why), "{extra}: {err}");
    }
}

#[test]
fn known_answers_on_the_malta_guest() {
    // One lab at a time in this process (common::leftovers).
    let _lab = crate::common::leftovers::one_at_a_time();
    let layout = Layout::from_manifest_dir();
    let all = targets::load_all(&layout.targets_dir()).unwrap();
    let pick = |name: &str| {
        targets::select(&all, &[name.to_string()])
            .unwrap()
            .remove(0)
    };
    // The guest is ramips-mt7621's, the Malta lab kernel the other lab
    // tests boot too (one kernel build in CI); brcm47xx's table is the
    // other predictor.
    let target = pick("ramips-mt7621");
    let spec = kernel::spec_of(&target).unwrap();
    let needs = gate::Needs::new()
        .slow("builds the ramips-mt7621 lab kernel and boots it in QEMU")
        .root("taps and network namespaces")
        .cache_model_lab(spec);
    if !needs.met() {
        return;
    }
    let variants =
        xtask::inputs::variants::load(&layout.variants_file(), &layout.patches_dir()).unwrap();
    let baseline = xtask::inputs::variants::select(&variants, &["baseline".to_string()]).unwrap();
    let sh = xshell::Shell::new().unwrap();
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
    let k = &kernels[0];
    lab::net::start_clean("test").unwrap();
    let brcm47xx = pick("brcm47xx");
    let majority_without_l2 = kernel::spec_of(&brcm47xx).unwrap().timing.clone().unwrap();
    for table in [Some(&majority_without_l2), None] {
        let model = known_answer::model(&layout, &target, table).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let answers = known_answer::run(
            &layout,
            &target,
            (&k.image, k.dtb.as_deref()),
            &model,
            (dir.path(), None),
        )
        .unwrap();
        eprintln!("{}", answers.render());
        assert!(answers.pass(), "{answers:#?}");
        assert_eq!(answers.answers.len(), 4);
        for a in &answers.answers[..3] {
            let it = &a.per_iteration;
            // The pattern's branch and the loop's back-edge, in a loop
            // of four to twelve instructions executed (a taken pattern
            // branch skips its addiu; a CI run measured 4.88 for
            // `always`), and what a timer tick adds.
            assert!(
                (1.95..2.1).contains(&it.cond_branches) && (3.5..13.0).contains(&it.insns),
                "{a:?}"
            );
        }
        let chase = &answers.answers[3].per_iteration;
        // Every load misses the L1 D-cache and the L2 (or goes to DRAM
        // without one), in a loop of three instructions.
        assert!(
            chase.l1d_misses > 0.97 && chase.l1d_misses < 1.05,
            "{chase:?}"
        );
        assert!(
            chase.l2_misses > 0.97 && chase.l2_misses < 1.05,
            "{chase:?}"
        );
        assert!((2.5..6.0).contains(&chase.insns), "{chase:?}");
        let memory = chase.cycles.l2 + chase.cycles.dram;
        assert!(
            (chase.cycles.total - memory - chase.insns).abs() < 3.0,
            "the rest is the loop's instructions and its taken branch: {chase:?}"
        );
    }
}
