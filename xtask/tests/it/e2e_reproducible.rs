//! Two builds of the same inputs give the same bytes, whatever the
//! workspace's path (else a build key would not name the bytes it
//! stands for), in OpenWrt mode: the tiny profile
//! `arm-tiny` is built twice, in two scratch workspaces at different paths
//! (so its tree, a full copy in the build directory as OpenWrt builds,
//! lies at different paths too), the first through a cold ccache of its
//! own, the second without ccache (`--no-ccache`; both compile every
//! object), and every artifact's sha256 and the build key must be equal:
//! neither the path nor ccache changes a byte in OpenWrt mode.
//!
//! The checkout is the OpenWrt fixture with one board added for the test,
//! `xtasktiny/generic`: ARM, Linux 6.12, and as its `config-6.12` the complete
//! `.config` of arm-tiny's kconfig (tinyconfig plus the fragments of
//! `targets/arm-tiny.toml`, made here by the kernel's own `make
//! tinyconfig`) with modules and networking on (OpenWrt's series needs
//! them), which
//! overrides every generic symbol tinyconfig can see,
//! so the kernel is tiny while OpenWrt's whole generic patch series,
//! KCFLAGS and `.config` rules apply. Cost: OpenWrt's series classified
//! once on the 6.12 source (shared by both workspaces), then two tiny
//! builds side by side, 5–15 minutes on 2 idle cores.
//!
//! The default mode's pair is `e2e_patch_only.rs`: its build from scratch
//! runs in a scratch workspace at another path with its own patched tree,
//! without ccache, and must give the bytes of its build through ccache.

use crate::common::gate;
use crate::common::openwrt_fixture;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use xshell::{cmd, Shell};
use xtask::inputs::kernel_source;
use xtask::kernel_build::ccache::{self, Ccache};
use xtask::kernel_build::command::{self, BuildMode, BuildRequest};
use xtask::kernel_build::Rebuild;
use xtask::results::BuildResult;
use xtask::util::layout::Layout;
use xtask::util::lock::Wait;

const TARGET: &str = "arm-tiny";
const VARIANT: &str = "baseline";
const BOARD: &str = "xtasktiny";
/// The board's one subtarget (a target file names `board/subtarget`).
const SUBTARGET: &str = "generic";

/// A workspace at `dir` with its own `targets/` (this project's, with
/// arm-tiny mapped to the test board), sharing `patches/`, the unpacked
/// and prepared sources and the prepared sources' locks with `main` (so
/// the two builds, side by side, prepare a source once).
fn scratch_workspace(main: &Layout, dir: &Path) -> Layout {
    let work = dir.join("target/xtask");
    std::fs::create_dir_all(&work).unwrap();
    let targets = dir.join("targets");
    let sh = Shell::new().unwrap();
    let from = main.targets_dir();
    cmd!(sh, "cp -a {from} {targets}").run().unwrap();
    let file = targets.join(format!("{TARGET}.toml"));
    let text = std::fs::read_to_string(&file).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("openwrt = "))
        .expect("arm-tiny.toml has an openwrt line")
        .to_string();
    std::fs::write(
        &file,
        text.replace(&line, &format!("openwrt = \"{BOARD}/{SUBTARGET}\"")),
    )
    .unwrap();
    symlink(main.patches_dir(), dir.join("patches")).unwrap();
    for shared in [main.pristine_dir(), main.patched_src_dir()] {
        std::fs::create_dir_all(&shared).unwrap();
        symlink(&shared, work.join(shared.file_name().unwrap())).unwrap();
    }
    // `Layout::patched_src_lock`'s directory.
    let src_locks = main.work_dir().join("locks/src");
    std::fs::create_dir_all(&src_locks).unwrap();
    std::fs::create_dir_all(work.join("locks")).unwrap();
    symlink(&src_locks, work.join("locks/src")).unwrap();
    Layout::new(dir)
}

/// arm-tiny's complete `.config` (tinyconfig, then its fragments' lines,
/// `CONFIG_MODULES=y` and `CONFIG_NET=y`, then olddefconfig), made by the
/// kernel's kconfig in a scratch directory.
fn tiny_config(sh: &Shell, main: &Layout, scratch: &Path) -> String {
    let input = kernel_source::resolve_input(None, "6.12").unwrap();
    let pristine = kernel_source::pristine_tree(sh, main, &input).unwrap();
    let src = &pristine.dir;
    let out = scratch.join("tinyconfig");
    let kbuild = ["ARCH=arm", "CROSS_COMPILE=arm-linux-gnueabi-"];
    cmd!(sh, "make -s -C {src} O={out} {kbuild...} tinyconfig")
        .run()
        .unwrap();
    let tiny =
        xtask::inputs::targets::Target::load(&main.targets_dir().join("arm-tiny.toml")).unwrap();
    let config = out.join(".config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    for fragment in tiny.fragment_paths() {
        text.push_str(&std::fs::read_to_string(fragment).unwrap());
    }
    // OpenWrt always builds with modules and networking, and its series
    // needs them: pending 205-backtrace_module_info does not compile
    // without modules (nor KALLSYMS), hack 911-kobject_add_broadcast_uevent
    // does not link without networking.
    text.push_str("CONFIG_MODULES=y\nCONFIG_NET=y\n");
    std::fs::write(&config, text).unwrap();
    cmd!(sh, "make -s -C {src} O={out} {kbuild...} olddefconfig")
        .run()
        .unwrap();
    std::fs::read_to_string(&config).unwrap()
}

/// Adds the board `xtasktiny` (see the module docs) to the checkout.
fn add_board(checkout: &Path, config: &str) {
    let board = checkout.join("target/linux").join(BOARD);
    std::fs::create_dir_all(&board).unwrap();
    std::fs::write(
        board.join("Makefile"),
        format!(
            "include $(TOPDIR)/rules.mk\n\nARCH:=arm\nBOARD:={BOARD}\n\
             BOARDNAME:=xtask's tiny ARM profile (tests only)\nKERNEL_PATCHVER:=6.12\n\n\
             include $(INCLUDE_DIR)/target.mk\n\n$(eval $(call BuildTarget))\n"
        ),
    )
    .unwrap();
    std::fs::write(board.join("config-6.12"), config).unwrap();
    let sub = board.join(SUBTARGET);
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("target.mk"), "BOARDNAME:=Generic\n").unwrap();
}

fn build(layout: &Layout, checkout: &Path, ccache: Ccache) -> (PathBuf, BuildResult) {
    let sh = &Shell::new().unwrap();
    let request = BuildRequest {
        targets: vec![TARGET.to_string()],
        variants: vec![VARIANT.to_string()],
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel_src: None,
        verbose: false,
        rebuild: Rebuild::Always,
        wait: Wait::Yes,
        mode: BuildMode::Build,
        ccache,
        distcc: Default::default(),
        openwrt: Some(checkout.to_path_buf()),
    };
    command::run(sh, layout, &request).unwrap();
    let dir = layout.openwrt_mode().results_dir(TARGET, VARIANT);
    let result = BuildResult::read(&dir).unwrap();
    (dir, result)
}

#[test]
fn openwrt_mode_bytes_do_not_depend_on_the_workspace_path() {
    let tools = gate::Needs::new()
        .slow("builds the tiny ARM kernel twice in OpenWrt mode")
        .program("ccache", "ccache")
        .program("arm-linux-gnueabi-gcc", "gcc-arm-linux-gnueabi");
    if !tools.met() || openwrt_fixture::debian_tarball("6.12").is_none() {
        return;
    }
    let Some(fx) = openwrt_fixture::Fixture::unpack() else {
        return;
    };
    let sh = Shell::new().unwrap();
    let main = Layout::from_manifest_dir();
    std::fs::create_dir_all(main.work_dir()).unwrap();
    let scratch = tempfile::Builder::new()
        .prefix("scratch-reproducible-")
        .tempdir_in(main.work_dir())
        .unwrap();
    add_board(&fx.root, &tiny_config(&sh, &main, scratch.path()));
    let a = scratch_workspace(&main, &scratch.path().join("a"));
    let b = scratch_workspace(&main, &scratch.path().join("another/clone/b"));
    // Side by side: each build is `make -j<cores>`, and neither waits for
    // the other's workspace (only the shared, already prepared source is
    // locked).
    let cold = Ccache::On {
        max_bytes: ccache::parse_size(ccache::DEFAULT_SIZE).unwrap(),
    };
    let ((dir_a, first), (dir_b, second)) = std::thread::scope(|s| {
        let one = s.spawn(|| build(&a, &fx.root, cold));
        let other = s.spawn(|| build(&b, &fx.root, Ccache::Off));
        (one.join().unwrap(), other.join().unwrap())
    });
    let record = first.openwrt.as_ref().expect("an OpenWrt-mode result");
    eprintln!(
        "OpenWrt target {}; {} s and {} s",
        record.target, first.duration_seconds, second.duration_seconds
    );
    assert!(first.ccache.is_some(), "the first builds through ccache");
    assert_eq!(second.ccache, None, "--no-ccache recorded ccache stats");
    assert_eq!(
        first.build_key, second.build_key,
        "the path or ccache changed the key"
    );
    assert_eq!(
        first.artifacts.keys().collect::<Vec<_>>(),
        second.artifacts.keys().collect::<Vec<_>>()
    );
    let mut differ = Vec::new();
    for (name, one) in &first.artifacts {
        let other = &second.artifacts[name];
        let digest = |d: &Path| xtask::util::hash::sha256_file(&d.join(name)).unwrap();
        assert_eq!(
            digest(&dir_a),
            one.sha256,
            "{name}: the file and its record"
        );
        assert_eq!(
            digest(&dir_b),
            other.sha256,
            "{name}: the file and its record"
        );
        if one.sha256 != other.sha256 {
            differ.push(format!("{name}: {} vs {} bytes", one.size, other.size));
        }
    }
    assert!(
        differ.is_empty(),
        "two builds of the same inputs at {} and {} differ: {differ:?}",
        a.root().display(),
        b.root().display()
    );
}
