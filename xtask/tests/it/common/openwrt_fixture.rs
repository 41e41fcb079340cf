//! The OpenWrt test fixture (a snapshot of OpenWrt's main branch, see
//! `shared/openwrt/README.md` beside the checkout), unpacked into a
//! temporary directory,
//! and GNU make as the judge of OpenWrt's make rules.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use xshell::{cmd, Shell};

/// The fixture tarball: `$OPENWRT_FIXTURE`, else the snapshot in the
/// `shared/` directory beside the checkout (as CI and the developers' machines
/// lay it out).
pub fn tarball() -> PathBuf {
    std::env::var_os("OPENWRT_FIXTURE").map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../shared/openwrt/openwrt-main-9736d42141.tar.xz")
        },
        PathBuf::from,
    )
}

/// Debian's `linux-source-<kver>` tarball; `None` when it is not
/// installed (through the gate, [`crate::common::gate::Needs`]: a failure under
/// CI, where `.ci/run` installs it, a counted skip elsewhere).
pub fn debian_tarball(kver: &str) -> Option<PathBuf> {
    let tarball = xtask::inputs::kernel_source::default_tarball(kver);
    crate::common::gate::Needs::new()
        .file(&tarball, &format!("apt-get install linux-source-{kver}"))
        .met()
        .then_some(tarball)
}

/// An unpacked fixture, removed on drop.
pub struct Fixture {
    dir: tempfile::TempDir,
    /// The checkout's top directory.
    pub root: PathBuf,
}

impl Fixture {
    /// Unpacks the fixture; `None` when the tarball is missing (through
    /// the gate: a failure under CI, a counted skip elsewhere).
    pub fn unpack() -> Option<Fixture> {
        let tarball = tarball();
        let how = "the OpenWrt snapshot of shared/openwrt/, or set OPENWRT_FIXTURE";
        if !crate::common::gate::Needs::new().file(&tarball, how).met() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("openwrt");
        std::fs::create_dir(&root).unwrap();
        let sh = Shell::new().unwrap();
        cmd!(sh, "tar -xJf {tarball} -C {root}").run().unwrap();
        Some(Fixture { dir, root })
    }

    /// A scratch directory next to the checkout.
    pub fn dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

/// What GNU make prints for `$(info EXPR)` after `rules`, with `vars` set
/// on its command line, run in `cwd` (make's `$(CURDIR)`) when given.
pub fn make_eval(
    sh: &Shell,
    scratch: &Path,
    rules: &str,
    vars: &[(String, String)],
    expr: &str,
    cwd: Option<&Path>,
) -> String {
    let file = tempfile::Builder::new()
        .suffix(".mk")
        .tempfile_in(scratch)
        .unwrap();
    std::fs::write(file.path(), format!("{rules}\n$(info {expr})\nall: ;@:\n")).unwrap();
    let path = file.path();
    let args: Vec<String> = vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let dir = cwd.unwrap_or(scratch);
    cmd!(
        sh,
        "make -s --no-print-directory -C {dir} -f {path} {args...}"
    )
    .read()
    .unwrap()
}
