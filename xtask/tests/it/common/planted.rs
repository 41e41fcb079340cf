//! Programs planted where a hostile input points the compiler, each
//! leaving a marker file when it runs: the tests assert the marker is
//! never made.

use std::path::{Path, PathBuf};

use xshell::Shell;

/// A directory with an executable `cc1` that creates `marker` (what
/// `gcc -B<dir>/` runs), and a shared object whose constructor creates
/// `marker` (what `-fplugin=` loads), built with the host gcc.
pub fn cc1_and_plugin(dir: &Path, marker: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("cc1"),
        format!("#!/bin/sh\ntouch {}\nexit 1\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(bin.join("cc1"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let src = dir.join("plugin.c");
    std::fs::write(
        &src,
        format!(
            "#include <fcntl.h>\n#include <unistd.h>\n__attribute__((constructor)) static void planted(void) \
             {{ close(open(\"{}\", O_CREAT | O_WRONLY, 0600)); }}\n",
            marker.display()
        ),
    )
    .unwrap();
    let so = dir.join("plugin.so");
    let sh = Shell::new().unwrap();
    xshell::cmd!(sh, "gcc -shared -fPIC -o {so} {src}")
        .quiet()
        .run()
        .unwrap();
    (bin, so)
}
