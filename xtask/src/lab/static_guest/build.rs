//! The static guest's programs, cross-compiled from Debian's source
//! packages (unpacked with `dpkg-source -x`, Debian's patches applied):
//! busybox with Debian's own `busybox-static` configuration, ethtool,
//! dbench's `tbench` and `tbench_srv` (from its upstream tarball, linked
//! with popt built static), and the lab's stand-ins for nftables' `nft`
//! (`lab/static-guest/nft.c`) and batctl (`lab/static-guest/batctl.c`).
//! Every compile runs under `nice -n 19` with `make -j1`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::sources::SourcePackage;
use crate::lab::process::run_appending_to_log;

/// Longest one build step may take (busybox at `-j1` on a loaded host
/// takes minutes).
const STEP_TIMEOUT: Duration = Duration::from_secs(3600);

/// Arguments of busybox's `make` besides `CROSS_COMPILE` (its own `-Os`).
pub const BUSYBOX_MAKE: &[&str] = &["-j1", "busybox"];

/// ethtool's `configure` arguments besides `--host`. Without netlink (it
/// would need libmnl): `-K` and `-k` use the ioctl interface, which Linux
/// 6.12 still serves. No pretty dumps of NIC registers.
pub const ETHTOOL_CONFIGURE: &[&str] = &[
    "--disable-netlink",
    "--disable-pretty-dump",
    "--sbindir=/sbin",
    "LDFLAGS=-static",
];

/// The cross compiler's flags for the nftables loader.
pub const NFT_CFLAGS: &[&str] = &["-Os", "-static", "-Wall", "-Wextra", "-Werror"];

/// The lab's nftables loader, compiled for the guest.
pub const NFT_SOURCE: &str = include_str!("../../../../lab/static-guest/nft.c");

/// The lab's read-only batctl, compiled for the guest with [`NFT_CFLAGS`].
pub const BATCTL_SOURCE: &str = include_str!("../../../../lab/static-guest/batctl.c");

/// popt's `configure` arguments besides `--host`: a static library only,
/// installed under a staging directory that dbench's build reads.
pub const POPT_CONFIGURE: &[&str] = &[
    "--prefix=/usr",
    "--disable-shared",
    "--enable-static",
    "--disable-nls",
];

/// Where tbench finds its loadfile in the guest (dbench's `DATADIR`, as
/// Debian's dbench package installs it).
pub const DBENCH_DATADIR: &str = "/usr/share/dbench";

/// dbench's `make` goals and variables: the two network programs, with
/// [`DBENCH_DATADIR`] compiled in.
pub const DBENCH_MAKE: &[&str] = &["-j1", "tbench", "tbench_srv", "datadir=/usr/share/dbench"];

/// One built program and how long its build took.
pub struct BuiltBinary {
    /// The stripped binary.
    pub binary: PathBuf,
    /// Wall-clock seconds of its build (unpacking included).
    pub seconds: f64,
}

/// Where and with what the guest's programs are built.
#[derive(Clone, Copy)]
pub struct Toolchain<'a> {
    /// The cross toolchain's prefix, e.g. `mips-linux-gnu-`.
    pub cross: &'a str,
    /// The scratch directory the sources unpack into.
    pub work: &'a Path,
    /// The directory of the steps' logs, `<program>-<step>.log`.
    pub logs: &'a Path,
}

/// Runs `args` under `nice -n 19` in `dir`, its output in `log`.
fn nice(args: &[&str], dir: &Path, log: &Path, what: &str) -> Result<()> {
    let mut cmd = Command::new("nice");
    cmd.args(["-n", "19"]).args(args).current_dir(dir);
    // Kconfig's generated files without the build's date.
    cmd.env("KCONFIG_NOTIMESTAMP", "1");
    run_appending_to_log(cmd, what, log, STEP_TIMEOUT)
}

impl Toolchain<'_> {
    /// `package` unpacked ([`Self::unpack`]), configured with `options`
    /// ([`Self::configure`]) and made with `make <make_args>`; returns its tree.
    fn made(
        &self,
        package: &SourcePackage,
        options: &[&str],
        make_args: &[&str],
    ) -> Result<PathBuf> {
        let tree = self.unpack(package)?;
        let name = &package.name;
        self.configure(options, &tree, name)?;
        let logs = self.logs;
        let mut make = vec!["make"];
        make.extend(make_args);
        nice(
            &make,
            &tree,
            &logs.join(format!("{name}-make.log")),
            &format!("{name} make"),
        )?;
        Ok(tree)
    }

    /// `./configure --host=<triplet>` with `options` in `tree`, logged to
    /// `<name>-configure.log` in `logs`.
    fn configure(&self, options: &[&str], tree: &Path, name: &str) -> Result<()> {
        let Toolchain { cross, logs, .. } = *self;
        let host = format!("--host={}", cross.trim_end_matches('-'));
        let mut configure = vec!["./configure", &host];
        configure.extend(options);
        let log = logs.join(format!("{name}-configure.log"));
        nice(
            &configure,
            tree,
            &log,
            &format!("{name} configure (cross, static)"),
        )
    }

    /// `dpkg-source -x` of `package` into `work/<name>`: the upstream tarball
    /// with Debian's patches applied. `--no-check` skips the uploader's
    /// signature (no Debian developer keyring here); the files' sha256 were
    /// checked against the `.dsc` already ([`super::sources`]).
    fn unpack(&self, package: &SourcePackage) -> Result<PathBuf> {
        let Toolchain { work, logs, .. } = *self;
        let tree = work.join(&package.name);
        // dpkg-source copies the tarballs next to the tree it makes.
        std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
        let mut cmd = Command::new("dpkg-source");
        cmd.args(["--no-check", "-x"])
            .arg(&package.dsc)
            .arg(&tree)
            .current_dir(work);
        run_appending_to_log(
            cmd,
            &format!("dpkg-source -x {}", package.dsc.display()),
            &logs.join(format!("{}-unpack.log", package.name)),
            STEP_TIMEOUT,
        )?;
        Ok(tree)
    }

    /// Copies `from` to `to` and strips it with `<cross>strip`.
    fn strip_into(&self, from: &Path, to: &Path) -> Result<()> {
        let Toolchain { cross, logs, .. } = *self;
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::copy(from, to).with_context(|| format!("copying {}", from.display()))?;
        let mut cmd = Command::new(format!("{cross}strip"));
        cmd.arg(to);
        run_appending_to_log(
            cmd,
            &format!("{cross}strip {}", to.display()),
            &logs.join("strip.log"),
            Duration::from_secs(120),
        )
    }

    /// `from` stripped into `to` ([`Self::strip_into`]), built since `started`.
    fn installed(&self, from: &Path, to: PathBuf, started: Instant) -> Result<BuiltBinary> {
        self.strip_into(from, &to)?;
        Ok(BuiltBinary {
            binary: to,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// busybox from Debian's source with Debian's `busybox-static` config
    /// (`debian/config/os/linux` then `debian/config/pkg/static`, as
    /// `debian/rules` writes it); `make oldconfig` must leave it unchanged.
    pub fn busybox(&self, package: &SourcePackage, out: &Path) -> Result<BuiltBinary> {
        let Toolchain { cross, logs, .. } = *self;
        let started = Instant::now();
        let tree = self.unpack(package)?;
        let debian_config = ["debian/config/os/linux", "debian/config/pkg/static"]
            .iter()
            .map(|f| {
                crate::util::fs::read_limited(
                    &tree.join(f),
                    crate::util::fs::FileLimit::record("busybox config"),
                    "",
                )
                .with_context(|| format!("reading {f} of Debian's busybox"))
            })
            .collect::<Result<Vec<_>>>()?
            .concat();
        if !debian_config.lines().any(|l| l == "CONFIG_STATIC=y") {
            bail!("Debian's busybox-static config has no CONFIG_STATIC=y");
        }
        std::fs::write(tree.join(".config"), &debian_config)
            .with_context(|| format!("writing {}", tree.join(".config").display()))?;
        let cross_arg = format!("CROSS_COMPILE={cross}");
        nice(
            &["make", &cross_arg, "oldconfig"],
            &tree,
            &logs.join("busybox-oldconfig.log"),
            "busybox make oldconfig",
        )?;
        let settings = |text: &str| -> Vec<String> {
            let mut s: Vec<String> = text
                .lines()
                .filter(|l| l.starts_with("CONFIG_") || l.starts_with("# CONFIG_"))
                .map(str::to_string)
                .collect();
            s.sort();
            s
        };
        let config = crate::util::fs::read_limited(
            &tree.join(".config"),
            crate::util::fs::FileLimit::record(".config"),
            "",
        )
        .context("reading busybox's .config")?;
        if settings(&config) != settings(&debian_config) {
            bail!(
                "busybox's oldconfig changed Debian's static configuration (see {})",
                tree.join(".config").display()
            );
        }
        let mut make = vec!["make", cross_arg.as_str()];
        make.extend(BUSYBOX_MAKE);
        nice(
            &make,
            &tree,
            &logs.join("busybox-make.log"),
            "busybox make (cross, static)",
        )?;
        self.installed(&tree.join("busybox"), out.join("bin/busybox"), started)
    }

    /// ethtool from Debian's source, `configure --host=<triplet>` with
    /// [`ETHTOOL_CONFIGURE`], linked static.
    pub fn ethtool(&self, package: &SourcePackage, out: &Path) -> Result<BuiltBinary> {
        let started = Instant::now();
        let tree = self.made(package, ETHTOOL_CONFIGURE, &["-j1", "ethtool"])?;
        self.installed(&tree.join("ethtool"), out.join("sbin/ethtool"), started)
    }

    /// popt from Debian's source, `configure --host=<triplet>` with
    /// [`POPT_CONFIGURE`], installed into `stage` (`usr/include/popt.h`,
    /// `usr/lib/libpopt.a`) for dbench's build; nothing of it goes into the
    /// guest.
    pub fn popt(&self, package: &SourcePackage, stage: &Path) -> Result<f64> {
        let started = Instant::now();
        let tree = self.made(package, POPT_CONFIGURE, &["-j1"])?;
        let logs = self.logs;
        let destdir = format!("DESTDIR={}", stage.display());
        nice(
            &["make", "install", &destdir],
            &tree,
            &logs.join("popt-install.log"),
            "popt make install",
        )?;
        Ok(started.elapsed().as_secs_f64())
    }

    /// dbench's `tbench` and `tbench_srv` from its upstream tarball (Debian's
    /// changes are not on the lab's mirror: [`super::sources::Parts::Upstream`]),
    /// `autoheader` and `autoconf` as its `autogen.sh` runs them, `configure
    /// --host=<triplet>` linking static with popt from `popt_stage`
    /// ([`popt`]), `make` with [`DBENCH_MAKE`]. The loadfile (`client.txt`)
    /// goes to [`DBENCH_DATADIR`] in `out`. Returns the two binaries (the
    /// first's [`Built::seconds`] covers both).
    pub fn dbench(
        &self,
        package: &SourcePackage,
        popt_stage: &Path,
        out: &Path,
    ) -> Result<[BuiltBinary; 2]> {
        let Toolchain { cross, work, logs } = *self;
        let started = Instant::now();
        let tarball = package
            .files
            .iter()
            .find(|f| f.file.contains(".orig.tar."))
            .context("dbench's source has no upstream tarball")?;
        let dir = package.dsc.parent().unwrap_or(Path::new("."));
        let unpacked = work.join("dbench");
        std::fs::create_dir_all(&unpacked)
            .with_context(|| format!("creating {}", unpacked.display()))?;
        let mut untar = Command::new("tar");
        untar
            .arg("-xf")
            .arg(dir.join(&tarball.file))
            .current_dir(&unpacked);
        run_appending_to_log(
            untar,
            &format!("tar -xf {}", tarball.file),
            &logs.join("dbench-unpack.log"),
            STEP_TIMEOUT,
        )?;
        // The tarball holds one directory, dbench-<version>.
        let entries: Vec<PathBuf> = std::fs::read_dir(&unpacked)
            .with_context(|| format!("reading {}", unpacked.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        let [tree] = &entries[..] else {
            bail!(
                "{} unpacked into {} entries, not one directory",
                tarball.file,
                entries.len()
            );
        };
        if !tree.join("configure.in").is_file() {
            bail!("{} has no configure.in in {}", tarball.file, tree.display());
        }
        let tree = tree.clone();
        let log = logs.join("dbench-autogen.log");
        nice(&["autoheader"], &tree, &log, "dbench autoheader")?;
        nice(&["autoconf"], &tree, &log, "dbench autoconf")?;
        let host = format!("--host={}", cross.trim_end_matches('-'));
        let cflags = format!("CFLAGS=-Os -I{}/usr/include", popt_stage.display());
        let libs = format!("LIBS=-static -L{}/usr/lib", popt_stage.display());
        nice(
            &["./configure", &host, &cflags, &libs],
            &tree,
            &logs.join("dbench-configure.log"),
            "dbench configure (cross, static)",
        )?;
        let mut make = vec!["make"];
        make.extend(DBENCH_MAKE);
        nice(&make, &tree, &logs.join("dbench-make.log"), "dbench make")?;
        let seconds = started.elapsed().as_secs_f64();
        let mut built = Vec::new();
        for program in ["tbench", "tbench_srv"] {
            let binary = out.join("usr/bin").join(program);
            self.strip_into(&tree.join(program), &binary)?;
            built.push(BuiltBinary { binary, seconds });
        }
        let loadfile = out.join(&DBENCH_DATADIR[1..]).join("client.txt");
        if let Some(parent) = loadfile.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::copy(tree.join("client.txt"), &loadfile)
            .with_context(|| format!("copying dbench's client.txt to {}", loadfile.display()))?;
        let [tbench, tbench_srv]: [BuiltBinary; 2] = built
            .try_into()
            .map_err(|_| anyhow::anyhow!("dbench built not two programs"))?;
        Ok([tbench, tbench_srv])
    }

    /// The lab's read-only batctl (`lab/static-guest/batctl.c`) for the guest,
    /// stripped, at `out/usr/sbin/batctl` (where Debian's batctl has it).
    pub fn batctl(&self, out: &Path) -> Result<BuiltBinary> {
        let Toolchain { cross, work, logs } = *self;
        let started = Instant::now();
        let dir = work.join("batctl");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("batctl.c"), BATCTL_SOURCE).context("writing batctl.c")?;
        let gcc = format!("{cross}gcc");
        let source = dir.join("batctl.c").display().to_string();
        let unstripped = dir.join("batctl").display().to_string();
        let mut argv: Vec<&str> = vec![&gcc];
        argv.extend(NFT_CFLAGS);
        argv.extend([source.as_str(), "-o", &unstripped]);
        nice(
            &argv,
            &dir,
            &logs.join("batctl-cc.log"),
            "compiling the lab's batctl",
        )?;
        self.installed(&dir.join("batctl"), out.join("usr/sbin/batctl"), started)
    }
}

/// `ruleset` as a C header: `static const char XL_RULESET[]`, one string
/// literal per line.
pub fn ruleset_header(ruleset: &str) -> String {
    let mut out = String::from(
        "/* Generated by xtask from guest::ruleset(). */\nstatic const char XL_RULESET[] =\n",
    );
    for line in ruleset.split_inclusive('\n') {
        let mut lit = String::new();
        for b in line.bytes() {
            match b {
                b'\\' => lit.push_str("\\\\"),
                b'"' => lit.push_str("\\\""),
                b'\t' => lit.push_str("\\t"),
                b'\n' => lit.push_str("\\n"),
                b' '..=b'~' => lit.push(b as char),
                // A hex escape ends at the string's end, not at the next hex digit.
                b => lit.push_str(&format!("\\x{b:02x}\"\"")),
            }
        }
        out.push_str(&format!("\t\"{lit}\"\n"));
    }
    out.push_str("\t\"\";\n");
    out
}

/// The lab's nftables loader for `ruleset`, compiled with `cc` (a cross
/// compiler's gcc, or the host's for the tests) into `binary`.
pub fn nft_loader(cc: &str, ruleset: &str, work: &Path, logs: &Path, binary: &Path) -> Result<()> {
    let dir = work.join("nft");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(dir.join("nft.c"), NFT_SOURCE).context("writing nft.c")?;
    std::fs::write(dir.join("xl-ruleset.h"), ruleset_header(ruleset))
        .context("writing xl-ruleset.h")?;
    if let Some(parent) = binary.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let mut args: Vec<String> = vec![cc.to_string()];
    args.extend(NFT_CFLAGS.iter().map(|s| s.to_string()));
    args.extend(["-I".to_string(), dir.display().to_string()]);
    args.push(dir.join("nft.c").display().to_string());
    args.extend(["-o".to_string(), binary.display().to_string()]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    nice(
        &argv,
        &dir,
        &logs.join("nft-cc.log"),
        "compiling the nftables loader",
    )
}

impl Toolchain<'_> {
    /// The lab's nftables loader for the guest, stripped, at `out/usr/sbin/nft`
    /// (where Debian's nftables has it).
    pub fn nft(&self, ruleset: &str, out: &Path) -> Result<BuiltBinary> {
        let Toolchain { cross, work, logs } = *self;
        let started = Instant::now();
        let unstripped = work.join("nft/nft");
        nft_loader(&format!("{cross}gcc"), ruleset, work, logs, &unstripped)?;
        self.installed(&unstripped, out.join("usr/sbin/nft"), started)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ruleset_header_is_one_c_string_of_the_text() {
        let h = ruleset_header("table ip xl {\n\tchain \"a\\b\"\n}\n");
        assert!(
            h.contains(
                "\t\"table ip xl {\\n\"\n\t\"\\tchain \\\"a\\\\b\\\"\\n\"\n\t\"}\\n\"\n\t\"\";\n"
            ),
            "{h}"
        );
    }
}
