//! `--distcc`: the tiny profile's baseline built through a real `distccd`
//! listening on 127.0.0.1 only, with ccache in front (a scratch, empty
//! cache, so every object goes to distcc), into a scratch workspace.
//! distccd's log must show the objects it compiled, and every artifact
//! must have the sha256 of the shared local build that `cargo xtask test`
//! made. distccd ([`LocalDistccd`]) is stopped in every case (its process
//! group, on drop).
//! One tiny build: 3–7 minutes on 2 cores. And the daemon alone: it
//! listens, and stopping it leaves no process of its group running.

use crate::common::gate;

use std::os::unix::fs::PermissionsExt;

use xshell::Shell;
use xtask::host::selftest::{E2E_TARGET, E2E_VARIANTS};
use xtask::kernel_build::ccache::Ccache;
use xtask::kernel_build::command::{self, BuildMode, BuildRequest};
use xtask::kernel_build::distccd::{count_jobs, LocalDistccd};
use xtask::kernel_build::Rebuild;
use xtask::results::BuildResult;
use xtask::util::hash::sha256_file;
use xtask::util::layout::Layout;
use xtask::util::lock::Wait;

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
    let Some(dir) = gate::e2e_results_dir(variant) else {
        return;
    };
    let needs = gate::Needs::new()
        .slow("builds the tiny ARM kernel through distcc")
        .program("distcc", "distcc")
        .program("distccd", "distcc");
    if !needs.met() {
        return;
    }
    let local = BuildResult::read(&dir).unwrap();
    let layout = Layout::from_manifest_dir();
    let scratch = scratch_workspace(&layout);
    let slots = std::thread::available_parallelism().map_or(1, |n| n.get());
    let daemon = LocalDistccd::start(scratch.path(), slots).unwrap();
    let other = Layout::new(scratch.path());
    let request = BuildRequest {
        targets: vec![E2E_TARGET.to_string()],
        variants: vec![variant.to_string()],
        jobs: slots,
        kernel_src: None,
        verbose: false,
        rebuild: Rebuild::Always,
        wait: Wait::Yes,
        mode: BuildMode::Build,
        ccache: Ccache::default(),
        distcc: daemon.hosts(),
        openwrt: None,
    };
    let built = command::run(&Shell::new().unwrap(), &other, &request);
    let log = daemon.log().unwrap();
    daemon.stop();
    built.unwrap();
    let compiled = count_jobs(&log).compiled;
    assert!(
        compiled >= 100,
        "distccd compiled {compiled} objects:\n{}",
        log.lines().rev().take(20).collect::<Vec<_>>().join("\n")
    );
    assert_eq!(count_jobs(&log).errors, 0, "{log}");
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

/// The processes of process group `pgid` that run (zombies, killed and
/// not yet reaped, do not): `/proc/PID/stat` is `pid (comm) state ppid
/// pgrp …`.
fn running_in_group(pgid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split(' ').collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            found.push(pid);
        }
    }
    found
}

#[test]
fn a_local_distccd_listens_and_stops_with_its_whole_group() {
    if !gate::Needs::new().program("distccd", "distcc").met() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let daemon = LocalDistccd::start(dir.path(), 2).unwrap();
    std::net::TcpStream::connect(("127.0.0.1", daemon.port())).unwrap();
    let pgid = daemon.pid();
    // distccd forks its workers before it accepts (it listened already).
    let group = running_in_group(pgid);
    assert!(group.len() > 1, "distccd's group is only {group:?}");
    daemon.stop();
    let start = std::time::Instant::now();
    while !running_in_group(pgid).is_empty() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(15),
            "distccd's group still runs: {:?}",
            running_in_group(pgid)
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
