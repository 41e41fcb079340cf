//! distcc: compile on other machines (`--distcc HOSTS`, in `DISTCC_HOSTS`
//! syntax) through Debian's distcc in plain mode: each source is
//! preprocessed here and compiled by the same cross compiler on a host
//! running `distccd`, so the objects are those a local compiler makes.
//! `DISTCC_FALLBACK=0`: a host that fails is an error, not a silent local
//! compile. With ccache on, ccache runs distcc on a miss
//! (`CCACHE_PREFIX=distcc`), so hits never leave the machine.
//!
//! Like ccache, distcc is not part of the build key (`tests/it/e2e_distcc.rs`
//! compares the bytes with a local build). `-j` is the whole run's budget:
//! raise it to the number of remote slots.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use super::ccache::{self, Ccache};
use crate::util::layout::Layout;

/// Whether compiles go to distcc hosts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Distcc {
    /// Compile here (the default).
    #[default]
    Off,
    /// `DISTCC_HOSTS`: the hosts, as distcc(1) writes them
    /// (`192.168.1.2/8 10.0.0.3:3633/4`).
    Hosts(String),
}

/// `--distcc HOSTS` checked: not empty, one line, no `,cpp`/`,lzo`
/// pump-mode options (plain mode only: pump mode sends headers and needs
/// include-server).
pub fn parse_hosts(text: &str) -> Result<Distcc> {
    let hosts = text.trim();
    if hosts.is_empty() {
        bail!("--distcc: no hosts; give them as DISTCC_HOSTS does (`10.0.0.2/4 10.0.0.3/4`)");
    }
    if hosts.chars().any(char::is_control) {
        bail!("--distcc {hosts:?}: hosts are one line, separated by spaces");
    }
    if hosts.contains(",cpp") {
        bail!("--distcc {hosts:?}: pump mode (,cpp) is not supported; drop it to use plain mode");
    }
    Ok(Distcc::Hosts(hosts.to_string()))
}

/// distcc's state directory: `target/xtask/distcc/`.
pub fn state_dir(layout: &Layout) -> PathBuf {
    layout.work_dir().join("distcc")
}

/// `make`'s `CC=` argument and environment for ccache and distcc; `None`
/// when both are off.
pub fn compiler_setup(
    layout: &Layout,
    ccache_mode: Ccache,
    distcc: &Distcc,
    cc: &str,
    build: &Path,
) -> Option<(String, Vec<(&'static str, String)>)> {
    let cached = ccache::make_setup(layout, ccache_mode, cc, build);
    let Distcc::Hosts(hosts) = distcc else {
        return cached;
    };
    let mut env = vec![
        ("DISTCC_HOSTS", hosts.clone()),
        ("DISTCC_FALLBACK", "0".to_string()),
        ("DISTCC_DIR", state_dir(layout).display().to_string()),
    ];
    Some(match cached {
        Some((cc_arg, cache_env)) => {
            env.extend(cache_env);
            env.push(("CCACHE_PREFIX", "distcc".to_string()));
            (cc_arg, env)
        }
        None => (format!("CC=distcc {cc}"), env),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_checked() {
        assert_eq!(
            parse_hosts(" 127.0.0.1:3700/2 ").unwrap(),
            Distcc::Hosts("127.0.0.1:3700/2".into())
        );
        for bad in ["", "  ", "a\nb", "10.0.0.2,cpp,lzo"] {
            assert!(parse_hosts(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn distcc_goes_behind_ccache_or_in_front_of_the_compiler() {
        let layout = Layout::new(Path::new("/w"));
        let build = Path::new("/w/b");
        let hosts = Distcc::Hosts("127.0.0.1:3700/2".into());
        let get = |env: &[(&str, String)], k: &str| {
            env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
        };
        let (cc, env) = compiler_setup(&layout, Ccache::Off, &hosts, "arm-gcc", build).unwrap();
        assert_eq!(cc, "CC=distcc arm-gcc");
        assert_eq!(get(&env, "DISTCC_FALLBACK").as_deref(), Some("0"));
        assert_eq!(get(&env, "CCACHE_PREFIX"), None);
        let (cc, env) =
            compiler_setup(&layout, Ccache::default(), &hosts, "arm-gcc", build).unwrap();
        assert_eq!(cc, "CC=ccache arm-gcc");
        assert_eq!(get(&env, "CCACHE_PREFIX").as_deref(), Some("distcc"));
        assert_eq!(
            get(&env, "DISTCC_HOSTS").as_deref(),
            Some("127.0.0.1:3700/2")
        );
        assert!(compiler_setup(&layout, Ccache::Off, &Distcc::Off, "gcc", build).is_none());
    }
}
