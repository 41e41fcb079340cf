//! Where the project's inputs and outputs live.
//!
//! Inputs are in the repository (`targets/`, `patches/`); everything
//! generated goes under `target/xtask/`:
//!
//! ```text
//! target/xtask/
//!   pristine/<tarball-sha256-prefix>/linux-<ver>/   unpacked source, never modified
//!   src/<kver>-<series-hash>/                       hard-linked copy, patched
//!   build/<target>/<variant>/                       make O= directory
//!   results/<target>/<variant>/                     artifacts, build.log, result.json
//!   locks/{build,results}/<target>/<variant>.lock   who builds into them (flock)
//!   locks/src/<kver>-<series-hash>.lock             who makes that patched tree
//! ```
//!
//! A layout made with [`Layout::with_work_dir`] (the build benchmark's,
//! `target/xtask/bench/`) puts its builds, results, ccache, distcc state
//! and their locks elsewhere, but shares `pristine/`, `src/` and the
//! patched trees' locks with the workspace: those are caches addressed
//! by content that builds never write, and sharing their locks keeps a
//! benchmark and an ordinary build from replacing a tree under each
//! other.

use std::path::{Path, PathBuf};

/// The project's directory layout, rooted at the workspace directory.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
    /// Where generated files other than the shared source caches go;
    /// `None`: `target/xtask/`.
    work: Option<PathBuf>,
}

impl Layout {
    /// Layout of the workspace that contains this crate (the parent of `xtask/`).
    pub fn from_manifest_dir() -> Layout {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        Layout::new(manifest.parent().unwrap_or(manifest))
    }

    /// Layout rooted at `root` (the directory holding `targets/` and `patches/`).
    pub fn new(root: &Path) -> Layout {
        Layout {
            root: root.to_path_buf(),
            work: None,
        }
    }

    /// This workspace with its generated files under `work` instead of
    /// `target/xtask/` (builds, results, ccache, distcc state, their
    /// locks), sharing `targets/`, `patches/`, the unpacked and patched
    /// sources and the patched trees' locks with it (see the module docs).
    pub fn with_work_dir(&self, work: &Path) -> Layout {
        Layout {
            root: self.root.clone(),
            work: Some(work.to_path_buf()),
        }
    }

    /// OpenWrt mode's layout (`build --openwrt`, `size-report --openwrt`):
    /// builds, results and ccache under `target/xtask/openwrt/`, apart from
    /// the default mode's, sharing the sources ([`Layout::with_work_dir`]).
    pub fn openwrt_mode(&self) -> Layout {
        self.with_work_dir(&self.shared_work_dir().join("openwrt"))
    }

    /// Whether this is [`Layout::openwrt_mode`]'s layout.
    pub fn is_openwrt_mode(&self) -> bool {
        self.work.as_deref() == Some(self.shared_work_dir().join("openwrt").as_path())
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `targets/`: one TOML file per target plus kconfig fragments.
    pub fn targets_dir(&self) -> PathBuf {
        self.root.join("targets")
    }

    /// `patches/`: the managed patch stack and `variants.toml`.
    pub fn patches_dir(&self) -> PathBuf {
        self.root.join("patches")
    }

    /// `patches/variants.toml`.
    pub fn variants_file(&self) -> PathBuf {
        self.patches_dir().join("variants.toml")
    }

    /// `lab/runtime.toml`: the host lab's runtime variants.
    pub fn runtime_variants_file(&self) -> PathBuf {
        self.root.join("lab").join("runtime.toml")
    }

    /// `target/xtask/`: every generated file (or the directory given to
    /// [`Layout::with_work_dir`]).
    pub fn work_dir(&self) -> PathBuf {
        self.work.clone().unwrap_or_else(|| self.shared_work_dir())
    }

    /// `target/xtask/` of the workspace, whatever the work directory: the
    /// home of the source caches every layout of it shares.
    fn shared_work_dir(&self) -> PathBuf {
        self.root.join("target").join("xtask")
    }

    /// Where kernel tarballs are unpacked, never to be modified (shared).
    pub fn pristine_dir(&self) -> PathBuf {
        self.shared_work_dir().join("pristine")
    }

    /// Where patched source trees live, one per distinct patch series
    /// (shared).
    pub fn patched_src_dir(&self) -> PathBuf {
        self.shared_work_dir().join("src")
    }

    /// `make O=` directory for one (target, variant).
    pub fn build_dir(&self, target: &str, variant: &str) -> PathBuf {
        self.work_dir().join("build").join(target).join(variant)
    }

    /// Results root: `target/xtask/results/`.
    pub fn results_root(&self) -> PathBuf {
        self.work_dir().join("results")
    }

    /// Results of one (target, variant): artifacts, `build.log`, `result.json`.
    pub fn results_dir(&self, target: &str, variant: &str) -> PathBuf {
        self.results_root().join(target).join(variant)
    }

    /// The lock file of [`Layout::build_dir`] (kept outside it: the
    /// directory is emptied by a build).
    pub fn build_lock(&self, target: &str, variant: &str) -> PathBuf {
        self.locks_dir()
            .join("build")
            .join(target)
            .join(format!("{variant}.lock"))
    }

    /// The lock file of [`Layout::results_dir`] (kept outside it, so that
    /// results directories hold only results).
    pub fn results_lock(&self, target: &str, variant: &str) -> PathBuf {
        self.locks_dir()
            .join("results")
            .join(target)
            .join(format!("{variant}.lock"))
    }

    /// The lock file of the patched tree `src/<name>` while it is made
    /// (shared, as the tree is).
    pub fn patched_src_lock(&self, name: &str) -> PathBuf {
        self.shared_work_dir()
            .join("locks")
            .join("src")
            .join(format!("{name}.lock"))
    }

    /// The lock file under which one lab makes the lab cache `name`
    /// (`target/xtask/lab/locks/<name>.lock`: the initramfs of an
    /// architecture, the static guest, the cache model's QEMU source and
    /// plugins) while another waits and then finds it made.
    pub fn lab_cache_lock(&self, name: &str) -> PathBuf {
        self.work_dir()
            .join("lab")
            .join("locks")
            .join(format!("{name}.lock"))
    }

    /// The lock file of the lab run directory `dir` while `lab --resume`
    /// continues it, so that two resumptions never write one `lab.json`:
    /// named by the sha256 of `dir`'s canonical path (the path as given
    /// when it cannot be resolved), under the shared
    /// `target/xtask/locks/lab-run/` (a lab of either mode).
    pub fn lab_run_lock(&self, dir: &Path) -> PathBuf {
        let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let key = super::hash::sha256_bytes(canonical.as_os_str().as_encoded_bytes());
        self.shared_work_dir()
            .join("locks")
            .join("lab-run")
            .join(format!("{}.lock", &key[..16]))
    }

    /// `target/xtask/locks/`.
    fn locks_dir(&self) -> PathBuf {
        self.work_dir().join("locks")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_work_dir_moves_builds_but_shares_the_sources() {
        let main = Layout::new(Path::new("/w"));
        let bench = main.with_work_dir(Path::new("/w/target/xtask/bench"));
        assert_eq!(bench.root(), main.root());
        assert_eq!(bench.targets_dir(), main.targets_dir());
        assert_eq!(bench.pristine_dir(), main.pristine_dir());
        assert_eq!(bench.patched_src_dir(), main.patched_src_dir());
        assert_eq!(bench.patched_src_lock("t"), main.patched_src_lock("t"));
        assert_eq!(
            bench.build_dir("t", "v"),
            Path::new("/w/target/xtask/bench/build/t/v")
        );
        assert_eq!(
            bench.results_dir("t", "v"),
            Path::new("/w/target/xtask/bench/results/t/v")
        );
        assert_eq!(
            bench.build_lock("t", "v"),
            Path::new("/w/target/xtask/bench/locks/build/t/v.lock")
        );
        assert_ne!(bench.results_lock("t", "v"), main.results_lock("t", "v"));
    }
}
