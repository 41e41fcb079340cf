//! The lab's core model (`cargo xtask lab --cache-model` on a target with
//! `[lab.timing]`): the plugin's branch predictor and L2, and the known
//! answers of guest programs run under it.

use std::process::Command;

use xtask::inputs::targets;
use xtask::lab::cache_model::{compile, source};
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
    lab::check_host_tools(spec).unwrap();
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
