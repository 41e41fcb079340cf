//! A kernel source of another series than the target's `kernel =` is
//! refused before anything is unpacked or built: its results would replace
//! the target's under the same name.

use std::path::Path;

use xshell::{cmd, Shell};
use xtask::inputs::targets::Target;
use xtask::inputs::variants::Variant;
use xtask::kernel_build::kbuild::KbuildBackend;
use xtask::kernel_build::{BuildBackend, Job};
use xtask::util::layout::Layout;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_source_of_another_series_is_refused_before_unpacking() {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout::new(dir.path());
    write(
        &layout.targets_dir().join("t.toml"),
        "openwrt = \"bcm53xx/generic\"\nsoc = \"S\"\ncpu = \"c\"\narch = \"arm\"\ncross_compile = \"arm-linux-gnueabi-\"\ncompiler_package = \"gcc-arm-linux-gnueabi\"\nkernel = \"6.12\"\nartifacts = [\"vmlinux\"]\n[kconfig]\nbase = \"allnoconfig\"\n",
    );
    let target = Target::load(&layout.targets_dir().join("t.toml")).unwrap();
    let tree = dir.path().join("src/linux-6.1.5");
    write(
        &tree.join("Makefile"),
        "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 5\nEXTRAVERSION =\n",
    );
    write(&tree.join("Kbuild"), "");
    let sh = Shell::new().unwrap();
    let tarball = dir.path().join("linux-6.1.tar");
    let src = dir.path().join("src");
    cmd!(sh, "tar -cf {tarball} -C {src} linux-6.1.5")
        .run()
        .unwrap();

    let variant = Variant {
        name: "v".into(),
        description: String::new(),
        os_flags: "-Os".into(),
        o2_flags: "-O2".into(),
        patches: vec![],
        kconfig: vec![],
    };
    let jobs = [Job { target, variant }];
    for source in [&tarball, &tree] {
        let backend = KbuildBackend::new(layout.clone(), Some(source.clone()));
        let err = format!("{:#}", backend.preflight(&sh, &jobs).unwrap_err());
        let t_toml = layout.targets_dir().join("t.toml");
        for wanted in [
            format!("kernel source {} is Linux 6.1.5", source.display()),
            format!("{} says kernel = \"6.12\"", t_toml.display()),
            "Pass --kernel-src with a Linux 6.12 tarball or tree".to_string(),
            "set kernel = \"6.1\"".to_string(),
        ] {
            assert!(err.contains(&wanted), "wanted {wanted:?} in:\n{err}");
        }
        assert!(
            !layout.work_dir().exists(),
            "something was unpacked or built"
        );
    }
}
