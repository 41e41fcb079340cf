//! `--distcc`: the tiny profile's baseline built through a real `distccd`
//! listening on 127.0.0.1 only, with ccache in front (a scratch, empty
//! cache, so every object goes to distcc), into a scratch workspace.
//! distccd's log must show the objects it compiled, and every artifact
//! must have the sha256 of the shared local build that `cargo xtask test`
//! made. distccd is stopped in every case (its process group, on drop).
//! One tiny build: 3–7 minutes on 2 cores.

use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use xshell::Shell;
use xtask::build::ccache::Ccache;
use xtask::build::command::{self, BuildRequest, Mode};
use xtask::build::distcc::Distcc;
use xtask::build::toolchain::find_in_path;
use xtask::build::Rebuild;
use xtask::host::selftest::{e2e_results_dir, E2E_TARGET, E2E_VARIANTS};
use xtask::results::BuildResult;
use xtask::util::hash::sha256_file;
use xtask::util::layout::Layout;
use xtask::util::lock::Wait;

/// The only address anything here listens on or connects to.
const LOOPBACK: &str = "127.0.0.1";

/// A `distccd` in its own process group, stopped (the whole group) on drop.
struct Daemon {
    child: Child,
    log: PathBuf,
    port: u16,
}

impl Daemon {
    fn start(dir: &Path, slots: usize) -> Daemon {
        // distccd drops root for its own user before opening the log.
        let logs = dir.join("distccd-log");
        std::fs::create_dir_all(&logs).unwrap();
        std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o777)).unwrap();
        let log = logs.join("distccd.log");
        std::fs::write(&log, "").unwrap();
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
        // A free port: bound by the kernel, then released for distccd.
        let port = TcpListener::bind((LOOPBACK, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("distccd")
            .args([
                "--daemon",
                "--no-detach",
                "--allow",
                LOOPBACK,
                "--listen",
                LOOPBACK,
            ])
            .arg("--port")
            .arg(port.to_string())
            .arg(format!("--log-file={}", log.display()))
            .args(["--log-level", "info", "--jobs"])
            .arg(slots.to_string())
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("starting distccd");
        let daemon = Daemon { child, log, port };
        for _ in 0..100 {
            if TcpStream::connect((LOOPBACK, port)).is_ok() {
                return daemon;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("distccd did not listen on {LOOPBACK}:{port} within 10 s");
    }

    fn group_alive(&self) -> bool {
        Command::new("kill")
            .args(["-0", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        for _ in 0..50 {
            let _ = self.child.try_wait();
            if !self.group_alive() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.wait();
    }
}

/// A workspace under `target/xtask/` sharing `targets/`, `patches/` and
/// the unpacked and patched sources with this one (its own ccache).
fn scratch_workspace(layout: &Layout) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("scratch-distcc-")
        .tempdir_in(layout.work_dir())
        .unwrap();
    // distccd (its own user) writes its log in here.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let work = dir.path().join("target/xtask");
    std::fs::create_dir_all(&work).unwrap();
    let link = std::os::unix::fs::symlink;
    link(layout.targets_dir(), dir.path().join("targets")).unwrap();
    link(layout.patches_dir(), dir.path().join("patches")).unwrap();
    link(layout.pristine_dir(), work.join("pristine")).unwrap();
    link(layout.patched_src_dir(), work.join("src")).unwrap();
    dir
}

#[test]
fn a_distcc_build_compiles_remotely_with_the_same_bytes() {
    let variant = E2E_VARIANTS[0];
    let Some(dir) = e2e_results_dir(variant).unwrap() else {
        return;
    };
    if find_in_path("distccd").is_none() || find_in_path("distcc").is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "distcc is missing under CI; `cargo xtask setup --tests` installs it"
        );
        eprintln!("note: skipping: distcc is not installed (apt-get install distcc)");
        return;
    }
    let local = BuildResult::read(&dir).unwrap();
    let layout = Layout::from_manifest_dir();
    let scratch = scratch_workspace(&layout);
    let slots = std::thread::available_parallelism().map_or(1, |n| n.get());
    let daemon = Daemon::start(scratch.path(), slots);
    let other = Layout::new(scratch.path());
    let request = BuildRequest {
        targets: vec![E2E_TARGET.to_string()],
        variants: vec![variant.to_string()],
        jobs: slots,
        kernel_src: None,
        verbose: false,
        rebuild: Rebuild::Always,
        wait: Wait::Yes,
        mode: Mode::Build,
        ccache: Ccache::default(),
        distcc: Distcc::Hosts(format!("{LOOPBACK}:{}/{slots}", daemon.port)),
        openwrt: None,
    };
    let built = command::run(&Shell::new().unwrap(), &other, &request);
    let log = std::fs::read_to_string(&daemon.log).unwrap();
    drop(daemon);
    built.unwrap();
    let compiled = log.matches(" COMPILE_OK ").count();
    assert!(
        compiled >= 100,
        "distccd compiled {compiled} objects:\n{}",
        log.lines().rev().take(20).collect::<Vec<_>>().join("\n")
    );
    assert!(!log.contains("COMPILE_ERROR"), "{log}");
    let fresh_dir = other.results_dir(E2E_TARGET, variant);
    let fresh = BuildResult::read(&fresh_dir).unwrap();
    assert_eq!(fresh.build_key, local.build_key, "distcc changed the key");
    eprintln!(
        "distccd compiled {compiled} objects; ccache {:?}",
        fresh.ccache
    );
    for (name, record) in &local.artifacts {
        assert_eq!(
            sha256_file(&fresh_dir.join(name)).unwrap(),
            record.sha256,
            "{name} differs between the distcc and the local build"
        );
    }
}
