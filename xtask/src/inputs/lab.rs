//! The `[lab]` table of `targets/<t>.toml`: which QEMU machine runs the
//! target's router kernel, and how the lab kernel's config differs.
//!
//! ```toml
//! [lab]
//! qemu = "qemu-system-mipsel"
//! qemu_package = "qemu-system-mips"
//! machine = "malta"
//! cpu = "74Kf"
//! guest_arch = "mipsel"
//! replace_fragments = ["kconfig/brcm47xx.config"]
//! fragments = ["kconfig/lab-malta.config", "kconfig/lab-malta-le.config"]
//! nic = "e1000"
//! other_nics = ["pcnet"]
//! nic_pci_slots = ["0x12", "0x14"]
//!
//! # The real SoC's L1 caches, which `lab --cache-model` simulates (bytes).
//! [lab.l1]
//! icache = { size = 32768, ways = 4, line = 32 }
//! dcache = { size = 32768, ways = 4, line = 32 }
//!
//! # The SoC's clock, costs, L2 and branch predictor, each value with its
//! # source, with which `lab --cache-model` costs every run in cycles.
//! [lab.timing]
//! # … (see crate::inputs::timing)
//! ```

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use super::timing::TimingSpec;

/// How the lab runs one target (see the module docs for an example).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabSpec {
    /// The QEMU system emulator, e.g. `qemu-system-mipsel`.
    pub qemu: String,
    /// Debian package providing it, e.g. `qemu-system-mips`.
    pub qemu_package: String,
    /// `-M` value, e.g. `malta` or `vexpress-a9`.
    pub machine: String,
    /// `-cpu` value, e.g. `74Kf`.
    pub cpu: String,
    /// The lab machine's CPUs (QEMU's `-smp`), 1 to
    /// [`crate::inputs::steering::MAX_CPUS`] (`smp` in older files). One
    /// CPU runs under `-icount` (guest time counts instructions); more run
    /// without it, on QEMU's multi-threaded TCG
    /// (`xtask/src/lab/qemu.rs` says why), so the guest's CPU time is host
    /// time there. `cargo xtask lab --cpus N` overrides it.
    #[serde(default = "one", alias = "smp")]
    pub cpus: u32,
    /// The most CPUs the lab kernel boots: its `CONFIG_NR_CPUS` with
    /// `CONFIG_SMP=y` in the lab fragments (1 without SMP, the default).
    /// `cpus` and `--cpus` above it are refused: the guest would boot
    /// fewer CPUs than asked, after the kernels were built.
    #[serde(default = "one")]
    pub max_cpus: u32,
    /// How the measured router spreads receive processing over its CPUs
    /// ([`crate::inputs::steering`]): `"openwrt"`, `"off"` or the masks;
    /// `None`: off. `cargo xtask lab --packet-steering` overrides it.
    #[serde(default)]
    pub packet_steering: Option<super::steering::SteeringSpec>,
    /// Guest RAM in MiB (`-m`).
    #[serde(default = "default_memory")]
    pub memory_mib: u32,
    /// Debian architecture of the guest userspace (`mipsel`, `armel`); with
    /// [`LabSpec::static_guest`], the architecture's name for the record
    /// only (`mips`: big-endian MIPS, which Debian 12 has no port of).
    pub guest_arch: String,
    /// `[lab.static_guest]`: build the guest's userspace from Debian's
    /// source packages with a cross compiler instead of downloading the
    /// guest architecture's binary packages (`xtask/src/lab/static_guest/`).
    #[serde(default)]
    pub static_guest: Option<StaticGuestSpec>,
    /// The target's fragments (as written in its `[kconfig]`) that describe
    /// the real SoC and are left out of the lab kernel. Every other fragment
    /// (the router configuration) is kept.
    #[serde(default)]
    pub replace_fragments: Vec<String>,
    /// Fragments relative to `targets/` merged after the kept ones: the
    /// emulated machine, its NIC, console and initramfs support.
    pub fragments: Vec<String>,
    /// The file QEMU boots, relative to the build directory: `vmlinux` on
    /// MIPS, `arch/arm/boot/zImage` on ARM.
    #[serde(default = "default_kernel_image")]
    pub kernel_image: String,
    /// A device tree the kernel builds and QEMU passes with `-dtb`, as a
    /// `make` goal under `arch/<arch>/boot/dts/`, e.g.
    /// `arm/vexpress-v2p-ca9.dtb`; none on Malta.
    #[serde(default)]
    pub dtb: Option<String>,
    /// Serial console device in the guest, e.g. `ttyS0` or `ttyAMA0`.
    #[serde(default = "default_console")]
    pub console: String,
    /// QEMU NIC model (`-device` name) the lab boots with, e.g. `e1000`.
    pub nic: String,
    /// Other NIC models the lab kernel drives too, which `cargo xtask lab
    /// --nic MODEL` boots instead of [`LabSpec::nic`] (e.g. `["pcnet"]`,
    /// to compare with a driver that never uses GRO).
    #[serde(default)]
    pub other_nics: Vec<String>,
    /// PCI slot of each NIC (LAN first), e.g. `["0x12", "0x14"]`; empty for
    /// NICs that are not on PCI (virtio-mmio).
    #[serde(default)]
    pub nic_pci_slots: Vec<String>,
    /// Extra QEMU arguments, e.g. `["-vga", "none"]`.
    #[serde(default)]
    pub qemu_args: Vec<String>,
    /// The real SoC's L1 caches (`[lab.l1]`), which the lab's cache model
    /// (`--cache-model`) simulates; `None`: the target has no model.
    #[serde(default)]
    pub l1: Option<L1Spec>,
    /// `lab --openwrt PATH`: the OpenWrt `target/subtarget` built for this
    /// QEMU machine (`malta/le`, `malta/be`, `armsr/armv7`): its config
    /// files and patch series, with the router target's KCFLAGS
    /// (`xtask/src/kernel_build/openwrt_lab.rs`); `None`: no OpenWrt-mode lab.
    #[serde(default)]
    pub openwrt: Option<String>,
    /// `lab --openwrt PATH`: fragments relative to `targets/` merged onto
    /// OpenWrt's config for [`LabSpec::openwrt`], in order: only what the
    /// lab needs (the machine's NIC and console, the guest's initramfs and
    /// userland, the ruleset's netfilter built in).
    #[serde(default)]
    pub openwrt_fragments: Vec<String>,
    /// The real SoC's timing (`[lab.timing]`): the clock, the costs the
    /// core model turns counts into cycles with, the L2 and the branch
    /// predictor, each with its source; `None`: the cache model counts
    /// misses only.
    #[serde(default)]
    pub timing: Option<TimingSpec>,
}

/// How the lab builds a static guest userspace (`[lab.static_guest]`) when
/// Debian has no binary packages for the guest's architecture.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticGuestSpec {
    /// The cross compiler's prefix, e.g. `mips-linux-gnu-` (its `gcc`,
    /// `ar`, `ranlib`, `strip` and `readelf` are used).
    pub cross_compile: String,
    /// Debian packages of the host that provide that compiler, its
    /// binutils and a static C library, e.g. `["gcc-mips-linux-gnu",
    /// "libc6-dev-mips-cross"]` (`cargo xtask setup` installs them).
    pub packages: Vec<String>,
}

/// The L1 caches of a target's SoC (`[lab.l1]`): what its documentation
/// (core manual, datasheet, the kernel's boot log) says, cited in the
/// target file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L1Spec {
    /// The L1 instruction cache.
    pub icache: CacheSpec,
    /// The L1 data cache.
    pub dcache: CacheSpec,
}

/// One cache's geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    /// Capacity in bytes, e.g. 32768.
    pub size: u64,
    /// Associativity (ways per set), e.g. 4.
    pub ways: u64,
    /// Line size in bytes, e.g. 32.
    pub line: u64,
}

impl CacheSpec {
    /// Sets: size / (ways × line).
    pub fn sets(&self) -> u64 {
        self.size / (self.ways * self.line)
    }

    /// Checks what the model can simulate (the plugin's rules): a line
    /// of a power of two from 4 to 4096 bytes, 1 to 64 ways, a size that
    /// is a whole number of sets, a power-of-two number of sets (the set
    /// index is address bits), at most 16 MiB.
    pub fn check(&self, which: &str) -> Result<()> {
        let Self { size, ways, line } = *self;
        if !(4..=4096).contains(&line) || !line.is_power_of_two() {
            bail!("[lab.l1] {which}: line = {line}: a power of two from 4 to 4096 bytes");
        }
        if !(1..=64).contains(&ways) {
            bail!("[lab.l1] {which}: ways = {ways}: 1 to 64");
        }
        if size == 0 || size > 16 << 20 || size % (ways * line) != 0 {
            bail!(
                "[lab.l1] {which}: size = {size}: a multiple of ways × line ({}) up to 16 MiB",
                ways * line
            );
        }
        if !self.sets().is_power_of_two() {
            bail!(
                "[lab.l1] {which}: {} sets (size / (ways × line)): the model needs a power of two",
                self.sets()
            );
        }
        Ok(())
    }
}

fn one() -> u32 {
    1
}

/// Checks a lab machine's CPU count: 1 to [`super::steering::MAX_CPUS`].
pub fn check_cpus(cpus: u32) -> Result<()> {
    let max = super::steering::MAX_CPUS;
    if !(1..=max).contains(&cpus) {
        bail!("{cpus} CPUs: a lab machine has 1 to {max} (the MT7621's two cores of two VPEs)");
    }
    Ok(())
}

fn default_memory() -> u32 {
    256
}

fn default_kernel_image() -> String {
    "vmlinux".to_string()
}

fn default_console() -> String {
    "ttyS0".to_string()
}

impl LabSpec {
    /// Checks the table against its target file: replaced fragments must be
    /// the target's, added ones must exist, two PCI slots or none.
    pub fn validate(&self, target_file: &Path, target_fragments: &[String]) -> Result<()> {
        let file = target_file.display();
        for f in &self.replace_fragments {
            if !target_fragments.contains(f) {
                bail!(
                    "{file}: [lab] replace_fragments names {f:?}, which is not in [kconfig] fragments {target_fragments:?}"
                );
            }
        }
        for f in self
            .fragments
            .iter()
            .chain(&self.replace_fragments)
            .chain(&self.openwrt_fragments)
        {
            if let Some(why) = crate::util::path::unsafe_reason(Path::new(f)) {
                bail!("{file}: [lab] fragment {f:?} ({why}); name a file under targets/");
            }
        }
        if let Some(openwrt) = &self.openwrt {
            crate::util::path::check_plain("[lab] openwrt", openwrt, "._-/")
                .with_context(|| format!("{file}: refusing this [lab] table"))?;
            if openwrt
                .split('/')
                .any(|part| part.is_empty() || part == "..")
            {
                bail!("{file}: [lab] openwrt = {openwrt:?}: write OpenWrt's target/subtarget, e.g. \"malta/le\"");
            }
        } else if !self.openwrt_fragments.is_empty() {
            bail!("{file}: [lab] openwrt_fragments needs openwrt = \"<target/subtarget>\", the OpenWrt target they go on top of");
        }
        if let Some(dtb) = &self.dtb {
            // A make goal on make's command line.
            crate::util::path::check_plain("[lab] dtb", dtb, "._-/")
                .with_context(|| format!("{file}: refusing this [lab] table"))?;
        }
        let dir = target_file.parent().unwrap_or(Path::new("."));
        for f in self.fragments.iter().chain(&self.openwrt_fragments) {
            if !dir.join(f).is_file() {
                bail!(
                    "{file}: [lab] fragment {f:?} does not exist in {}",
                    dir.display()
                );
            }
        }
        // Each of these reaches QEMU's argv inside a `-device`, `-append`
        // or `-M` value, or a path and an apt sources line (guest_arch):
        // no commas, spaces or '/' that would add options or leave the
        // lab's directories.
        for (key, value, extra) in [
            ("qemu", &self.qemu, "-"),
            ("machine", &self.machine, "-._"),
            ("cpu", &self.cpu, "-._"),
            ("guest_arch", &self.guest_arch, ""),
            ("console", &self.console, ""),
            ("nic", &self.nic, "-"),
        ] {
            crate::util::path::check_plain(&format!("[lab] {key}"), value, extra)
                .with_context(|| format!("{file}: refusing this [lab] table"))?;
        }
        for nic in &self.other_nics {
            crate::util::path::check_plain("[lab] other_nics", nic, "-")
                .with_context(|| format!("{file}: refusing this [lab] table"))?;
        }
        for slot in &self.nic_pci_slots {
            let hex = slot.strip_prefix("0x").unwrap_or("");
            if hex.is_empty() || hex.len() > 2 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                bail!("{file}: [lab] nic_pci_slots has {slot:?}; a PCI slot is written 0x00 to 0x1f, e.g. \"0x12\"");
            }
        }
        check_qemu_args(&self.qemu_args)
            .with_context(|| format!("{file}: refusing this [lab] table"))?;
        if !(self.nic_pci_slots.is_empty() || self.nic_pci_slots.len() == 2) {
            bail!(
                "{file}: [lab] nic_pci_slots needs two slots (LAN, WAN) or none, not {:?}",
                self.nic_pci_slots
            );
        }
        if let Some(g) = &self.static_guest {
            crate::util::path::check_plain(
                "[lab.static_guest] cross_compile",
                &g.cross_compile,
                "._-+",
            )
            .with_context(|| format!("{file}: refusing this [lab] table"))?;
            if !g.cross_compile.ends_with('-') {
                bail!(
                    "{file}: [lab.static_guest] cross_compile = {:?} should end in '-' (e.g. \"mips-linux-gnu-\")",
                    g.cross_compile
                );
            }
        }
        check_cpus(self.max_cpus).with_context(|| format!("{file}: [lab] max_cpus"))?;
        check_cpus(self.cpus).with_context(|| format!("{file}: [lab] cpus"))?;
        if self.cpus > self.max_cpus {
            bail!(
                "{file}: [lab] cpus = {} but its lab kernel boots at most max_cpus = {}",
                self.cpus,
                self.max_cpus
            );
        }
        if self.memory_mib < 64 {
            bail!("{file}: [lab] needs memory_mib >= 64");
        }
        if let Some(l1) = &self.l1 {
            l1.icache
                .check("icache")
                .and_then(|()| l1.dcache.check("dcache"))
                .with_context(|| format!("{file}: refusing this [lab] table"))?;
        }
        if let Some(t) = &self.timing {
            if self.l1.is_none() {
                bail!("{file}: [lab.timing] needs [lab.l1]: the core model costs the L1 misses the cache model counts");
            }
            t.check()
                .with_context(|| format!("{file}: refusing this [lab.timing] table"))?;
        }
        Ok(())
    }

    /// This table with `nic` as the NIC QEMU boots with (`cargo xtask lab
    /// --nic`): [`LabSpec::nic`] or one of [`LabSpec::other_nics`], the
    /// models the lab kernel has drivers for; `None` keeps the default.
    /// Errors: another model, naming the ones the table allows and
    /// `target_file`, whose `[lab]` lists them.
    pub fn with_nic(&self, nic: Option<&str>, target_file: &Path) -> Result<LabSpec> {
        let Some(nic) = nic else {
            return Ok(self.clone());
        };
        if nic != self.nic && !self.other_nics.iter().any(|n| n == nic) {
            let mut allowed = vec![self.nic.as_str()];
            allowed.extend(self.other_nics.iter().map(String::as_str));
            bail!(
                "--nic {nic:?}: this lab's kernel drives {} ([lab] nic and other_nics in {}); \
                 another NIC needs its driver in the lab's kconfig fragments and its name in other_nics",
                allowed.join(", "),
                target_file.display()
            );
        }
        Ok(LabSpec {
            nic: nic.to_string(),
            ..self.clone()
        })
    }

    /// The table with `cpus` CPUs instead of its own (`--cpus`; `None`
    /// keeps it). Errors outside 1 to [`super::steering::MAX_CPUS`], or
    /// above the lab kernel's `max_cpus`.
    pub fn with_cpus(&self, cpus: Option<u32>) -> Result<LabSpec> {
        let Some(cpus) = cpus else {
            return Ok(self.clone());
        };
        check_cpus(cpus).context("--cpus")?;
        if cpus > self.max_cpus {
            bail!(
                "--cpus {cpus}: this target's lab kernel boots at most {} CPU(s) ([lab] max_cpus, its CONFIG_NR_CPUS{})",
                self.max_cpus,
                if self.max_cpus == 1 { "; it is built without SMP" } else { "" }
            );
        }
        Ok(LabSpec {
            cpus,
            ..self.clone()
        })
    }
}

/// The QEMU options `[lab] qemu_args` may hold, each with one value: what
/// the machines need to boot quietly. Anything else could add a NIC, a
/// network or a monitor the lab does not control, so it is refused.
pub const QEMU_OPTIONS: &[&str] = &["-vga", "-audiodev", "-global"];

/// Checks `[lab] qemu_args`: pairs of an option of [`QEMU_OPTIONS`] and a
/// plain value (letters, digits and `,=._-:`), none naming a network
/// backend (`netdev`, `nic`, `chardev`).
pub fn check_qemu_args(args: &[String]) -> Result<()> {
    if !args.len().is_multiple_of(2) {
        bail!(
            "[lab] qemu_args {args:?}: give each option with one value, e.g. [\"-vga\", \"none\"]"
        );
    }
    for pair in args.chunks(2) {
        let (option, value) = (&pair[0], &pair[1]);
        if !QEMU_OPTIONS.contains(&option.as_str()) {
            bail!(
                "[lab] qemu_args has {option:?}; the lab allows only {QEMU_OPTIONS:?} (the NICs, console \
                 and network are its own, so nothing reaches another network)"
            );
        }
        crate::util::path::check_plain(&format!("[lab] qemu_args {option}"), value, ",=._-:")?;
        if ["netdev", "nic", "chardev"]
            .iter()
            .any(|w| value.contains(w))
        {
            bail!("[lab] qemu_args {option} {value:?} names a network or character device backend; the lab adds its own");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_takes_only_caches_it_can_index() {
        let ok = CacheSpec {
            size: 32768,
            ways: 4,
            line: 32,
        };
        ok.check("icache").unwrap();
        assert_eq!(ok.sets(), 256);
        for (bad, why) in [
            (CacheSpec { line: 24, ..ok }, "power of two"),
            (
                CacheSpec {
                    size: 3 * 32768,
                    ..ok
                },
                "sets",
            ),
            (CacheSpec { size: 1000, ..ok }, "multiple"),
            (CacheSpec { ways: 0, ..ok }, "ways"),
        ] {
            let err = bad.check("icache").unwrap_err().to_string();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        // 3-way caches exist: 3 × 32 × 256 bytes has 256 sets.
        CacheSpec {
            size: 3 * 32 * 256,
            ways: 3,
            line: 32,
        }
        .check("dcache")
        .unwrap();
    }

    #[test]
    fn a_hostile_lab_table_is_refused() {
        let base = "qemu = \"qemu-system-mipsel\"\nqemu_package = \"qemu-system-mips\"\n\
                    machine = \"malta\"\ncpu = \"74Kf\"\nfragments = []\n";
        let spec = |extra: &str| -> LabSpec {
            toml_edit::de::from_str(&format!("{base}{extra}")).unwrap()
        };
        let file = Path::new("targets/brcm47xx.toml");
        let ok = "guest_arch = \"mipsel\"\nnic = \"pcnet\"\nnic_pci_slots = [\"0x12\", \"0x14\"]\n\
                  qemu_args = [\"-vga\", \"none\", \"-audiodev\", \"none,id=noaudio\"]\n";
        spec(ok).validate(file, &[]).unwrap();
        for (bad, why) in [
            ("guest_arch = \"../../tmp/x\"\nnic = \"pcnet\"\n", "guest_arch"),
            ("guest_arch = \"mipsel\"\nnic = \"pcnet,netdev=u\"\n", "[lab] nic"),
            ("guest_arch = \"mipsel\"\nnic = \"pcnet\"\nconsole = \"ttyS0 init=/bin/sh\"\n", "console"),
            ("guest_arch = \"mipsel\"\nnic = \"pcnet\"\nnic_pci_slots = [\"0x12,x\", \"0x14\"]\n", "PCI slot"),
            ("guest_arch = \"mipsel\"\nnic = \"pcnet\"\nqemu_args = [\"-netdev\", \"user,id=u\"]\n", "allows only"),
            ("guest_arch = \"mipsel\"\nnic = \"pcnet\"\nqemu_args = [\"-global\", \"chardev=x\"]\n", "backend"),
            ("guest_arch = \"mipsel\"\nnic = \"pcnet\"\nqemu_args = [\"-vga\"]\n", "one value"),
            ("guest_arch = \"mipsel\"\nnic = \"pcnet\"\ncpus = 9\n", "9 CPUs"),
            ("guest_arch = \"mipsel\"\nnic = \"pcnet\"\nsmp = 0\n", "0 CPUs"),
            (
                "guest_arch = \"mipsel\"\nnic = \"pcnet\"\ncpus = 2\n",
                "cpus = 2 but its lab kernel boots at most max_cpus = 1",
            ),
            ("guest_arch = \"mipsel\"\nnic = \"pcnet\"\nmax_cpus = 5\n", "max_cpus"),
        ] {
            let err = format!("{:#}", spec(bad).validate(file, &[]).unwrap_err());
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        // --cpus above what the lab kernel boots is refused before anything
        // is built (before: accepted, and the guest's CPU check failed at
        // boot).
        let one = spec("guest_arch = \"mipsel\"\nnic = \"pcnet\"\n");
        let err = format!("{:#}", one.with_cpus(Some(2)).unwrap_err());
        assert!(
            err.contains("at most 1 CPU(s)") && err.contains("without SMP"),
            "{err}"
        );
        let two = spec("guest_arch = \"mipsel\"\nnic = \"pcnet\"\nmax_cpus = 2\n");
        assert_eq!(two.with_cpus(Some(2)).unwrap().cpus, 2);
        assert!(two.with_cpus(Some(3)).is_err());
    }

    #[test]
    fn another_nic_is_one_the_lab_kernel_drives() {
        let spec: LabSpec = toml_edit::de::from_str(
            "qemu = \"qemu-system-mipsel\"\nqemu_package = \"qemu-system-mips\"\n\
             machine = \"malta\"\ncpu = \"74Kf\"\nguest_arch = \"mipsel\"\nfragments = []\n\
             nic = \"e1000\"\nother_nics = [\"pcnet\"]\n",
        )
        .unwrap();
        let file = Path::new("targets/brcm47xx.toml");
        assert_eq!(spec.with_nic(None, file).unwrap().nic, "e1000");
        assert_eq!(spec.with_nic(Some("pcnet"), file).unwrap().nic, "pcnet");
        assert_eq!(spec.with_nic(Some("e1000"), file).unwrap(), spec);
        let err = spec.with_nic(Some("virtio-net-pci"), file).unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("drives e1000, pcnet"), "{msg}");
        assert!(msg.contains("targets/brcm47xx.toml"), "{msg}");
        let hostile = LabSpec {
            other_nics: vec!["pcnet,netdev=x".into()],
            ..spec
        };
        let err = format!("{:#}", hostile.validate(file, &[]).unwrap_err());
        assert!(err.contains("other_nics"), "{err}");
    }

    #[test]
    fn a_static_guest_names_a_plain_cross_prefix() {
        let table = |prefix: &str| -> LabSpec {
            toml_edit::de::from_str(&format!(
                "qemu = \"qemu-system-mips\"\nqemu_package = \"qemu-system-mips\"\n\
                 machine = \"malta\"\ncpu = \"24Kc\"\nguest_arch = \"mips\"\n\
                 fragments = []\nnic = \"pcnet\"\n\
                 [static_guest]\ncross_compile = \"{prefix}\"\n\
                 packages = [\"gcc-mips-linux-gnu\", \"libc6-dev-mips-cross\"]\n"
            ))
            .unwrap()
        };
        let ok = table("mips-linux-gnu-");
        assert_eq!(
            ok.static_guest.as_ref().unwrap().packages,
            ["gcc-mips-linux-gnu", "libc6-dev-mips-cross"]
        );
        let file = Path::new("targets/ath79.toml");
        ok.validate(file, &[]).unwrap();
        for (bad, why) in [
            ("mips-linux-gnu", "should end in '-'"),
            ("-mips-", "starts with '-'"),
            ("mips linux-", "contains"),
        ] {
            let err = format!("{:#}", table(bad).validate(file, &[]).unwrap_err());
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }
}
