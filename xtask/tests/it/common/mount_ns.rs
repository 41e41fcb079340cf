//! Mounts for one test thread: a private mount namespace (root only), in
//! which a test mounts a tmpfs (another file system) or remounts a
//! directory read-only. Nothing is seen outside the thread, and the
//! mounts vanish with it, however the test ends.
//!
//! `crate::common::mount_ns`.
#![allow(dead_code)]

use std::path::Path;

use rustix::mount::{
    mount, mount_bind, mount_change, mount_remount, MountFlags, MountPropagationFlags,
};
use rustix::thread::{unshare_unsafe, UnshareFlags};

/// Runs `test` on a new thread (named as the calling test's, so the gate
/// names the test) in its own mount namespace. `None` when the namespace
/// cannot be made (not root), through the gate ([`crate::common::gate::Needs`]:
/// a failure under CI, which runs as root, a counted skip elsewhere).
pub fn in_private_mounts<T: Send>(test: impl FnOnce() -> T + Send) -> Option<T> {
    let name = std::thread::current().name().map(str::to_string);
    let mut builder = std::thread::Builder::new();
    if let Some(name) = name {
        builder = builder.name(name);
    }
    std::thread::scope(|s| {
        builder
            .spawn_scoped(s, || {
                // SAFETY: NEWNS (with the FS it implies) gives this thread its
                // own mount table, cwd and root; no file descriptor is unshared.
                let private = unsafe { unshare_unsafe(UnshareFlags::NEWNS) }.and_then(|()| {
                    mount_change(
                        "/",
                        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
                    )
                });
                let made =
                    private.map_err(|e| format!("a private mount namespace ({e}; run as root)"));
                if !crate::common::gate::Needs::new().check(made).met() {
                    return None;
                }
                Some(test())
            })
            .expect("spawning a test thread")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Mounts an empty tmpfs on `dir` (in the calling thread's namespace).
pub fn tmpfs(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    mount("tmpfs", dir, "tmpfs", MountFlags::empty(), None).unwrap();
}

/// Makes `dir` read-only (a read-only bind mount of itself): writes fail
/// with EROFS even for root.
pub fn read_only(dir: &Path) {
    mount_bind(dir, dir).unwrap();
    mount_remount(dir, MountFlags::BIND | MountFlags::RDONLY, "").unwrap();
}
