//! QEMU's command line for a lab boot, from the target's `[lab]` table.

use std::path::Path;

use anyhow::{bail, Result};

use super::topology::plan::QemuNic;
use crate::inputs::lab::LabSpec;

/// `-icount`: one guest instruction per 2^3 ns of virtual time, not tied to
/// the host's clock, idle time skipped. Guest time then counts executed
/// instructions, which makes guest CPU time per packet a low-noise
/// path-length proxy, whatever else the host runs.
pub const ICOUNT: &str = "shift=3,align=off,sleep=on";

/// `-accel` of a lab machine with more than one CPU: TCG with a host
/// thread per vCPU (multi-threaded TCG, QEMU 7.2's default for these
/// guests on an x86 host), without `-icount`, which forbids it and under
/// which QEMU 7.2 boots no second CPU of these machines (Malta stops in the
/// delay-loop calibration, vexpress-a9 after the futex table). One thread
/// running the vCPUs in turn (`thread=single`) would let the cache model
/// attribute its one instruction counter exactly, but on it vexpress-a9's
/// two Cortex-A9s took 26 s of the host's time to free the kernel's init
/// memory (stop_machine) and did not reach /init within 240 s, where
/// multi-threaded TCG reaches it in 2.9 s (docs/lab-multicore.md); the
/// plugin counts per vCPU thread instead (lab/plugin/xtask-cache.c).
pub const TCG_MULTI_THREADED: &str = "tcg,thread=multi";

/// What drives the guest's clock and vCPUs on `spec`'s machine, for
/// `lab.json` ([`crate::results::lab::QemuInfo`]): `-icount` on one CPU,
/// none on more (their `-accel` is [`TCG_MULTI_THREADED`]).
pub fn icount(spec: &LabSpec) -> Option<&'static str> {
    (spec.cpus == 1).then_some(ICOUNT)
}

/// Inputs of one boot.
#[derive(Debug, Clone, Copy)]
pub struct Boot<'a> {
    /// The kernel image.
    pub kernel: &'a Path,
    /// The initramfs (newc cpio).
    pub initramfs: &'a Path,
    /// Unix socket QEMU listens on for the serial console.
    pub console_socket: &'a Path,
    /// The device tree, if the machine takes one.
    pub dtb: Option<&'a Path>,
    /// A TCG plugin to load, as `-plugin` takes it (`PATH,key=value,…`):
    /// the cache model ([`super::cache_model`]).
    pub plugin: Option<&'a str>,
}

/// The kernel command line.
pub fn kernel_cmdline(spec: &LabSpec) -> String {
    format!(
        "console={},115200 rdinit=/init panic=-1 loglevel=6",
        spec.console
    )
}

/// QEMU's argv after the program name, with `nics` (a guest's NICs as its
/// topology's plan gives them: `-netdev tap` of its tap, `-device` of the
/// `[lab]` table's NIC model with its MAC, on the table's PCI slot when
/// the machine's NICs are on PCI). Fails when a PCI machine has more
/// NICs than its table has slots.
pub fn argv(spec: &LabSpec, boot: Boot<'_>, nics: &[QemuNic]) -> Result<Vec<String>> {
    if !spec.nic_pci_slots.is_empty() && nics.len() > spec.nic_pci_slots.len() {
        bail!(
            "the guest has {} NICs, but the [lab] table's nic_pci_slots has {} slots ({}): add slots with their own IRQs",
            nics.len(),
            spec.nic_pci_slots.len(),
            spec.nic_pci_slots.join(", ")
        );
    }
    let mut a: Vec<String> = Vec::new();
    let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
    push(&["-M", &spec.machine, "-cpu", &spec.cpu]);
    push(&[
        "-smp",
        &spec.cpus.to_string(),
        "-m",
        &spec.memory_mib.to_string(),
    ]);
    push(&["-nodefaults", "-no-reboot", "-display", "none"]);
    // The RTC on the virtual clock too: Malta's kernel calibrates its CPU
    // timer against the RTC at boot; on the host's clock that calibration
    // measured TCG's speed (56–152 MHz from boot to boot), and guest ticks,
    // hence ns/packet, scaled with it.
    match icount(spec) {
        Some(icount) => push(&["-icount", icount, "-rtc", "clock=vm"]),
        None => push(&["-accel", TCG_MULTI_THREADED, "-rtc", "clock=vm"]),
    }
    push(&["-kernel", &boot.kernel.display().to_string()]);
    push(&["-initrd", &boot.initramfs.display().to_string()]);
    push(&["-append", &kernel_cmdline(spec)]);
    if let Some(dtb) = boot.dtb {
        push(&["-dtb", &dtb.display().to_string()]);
    }
    let chardev = format!(
        "socket,id=con,path={},server=on,wait=on",
        boot.console_socket.display()
    );
    push(&["-chardev", &chardev, "-serial", "chardev:con"]);
    for (i, nic) in nics.iter().enumerate() {
        let id = &nic.id;
        let netdev = format!("tap,id={id},ifname={},script=no,downscript=no", nic.tap);
        let mut device = format!("{},netdev={id},mac={}", spec.nic, nic.mac);
        if let Some(slot) = spec.nic_pci_slots.get(i) {
            // An empty romfile: Debian's qemu-system-mips has no option ROMs.
            device.push_str(&format!(",addr={slot},romfile="));
        }
        push(&["-netdev", &netdev, "-device", &device]);
    }
    if let Some(plugin) = boot.plugin {
        push(&["-plugin", plugin]);
    }
    a.extend(spec.qemu_args.iter().cloned());
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn malta() -> LabSpec {
        toml_edit::de::from_str(
            r#"
qemu = "qemu-system-mipsel"
qemu_package = "qemu-system-mips"
machine = "malta"
cpu = "74Kf"
guest_arch = "mipsel"
fragments = []
nic = "pcnet"
nic_pci_slots = ["0x12", "0x14"]
qemu_args = ["-vga", "none"]
"#,
        )
        .unwrap()
    }

    #[test]
    fn malta_nics_sit_on_their_own_slots_with_fixed_macs() {
        let boot = Boot {
            kernel: Path::new("/k/vmlinux"),
            initramfs: Path::new("/i.cpio"),
            console_socket: Path::new("/s/console.sock"),
            dtb: None,
            plugin: None,
        };
        let t = crate::lab::topology::nat_router::topology();
        let names = crate::lab::net::Names { pid: 1, serial: 0 };
        let plan = crate::lab::topology::plan::plan(&t, names).unwrap();
        let nics = plan.nics("router").unwrap();
        let a = argv(&malta(), boot, nics).unwrap().join(" ");
        assert!(!a.contains("-plugin"), "{a}");
        let with = Boot {
            plugin: Some("/p/lib.so,icachesize=32768"),
            ..boot
        };
        let b = argv(&malta(), with, nics).unwrap().join(" ");
        assert!(
            b.contains(" -plugin /p/lib.so,icachesize=32768 -vga none"),
            "{b}"
        );
        assert!(a.contains("-M malta -cpu 74Kf -smp 1 -m 256"), "{a}");
        assert!(
            a.contains("-icount shift=3,align=off,sleep=on -rtc clock=vm"),
            "{a}"
        );
        assert!(
            a.contains("-device pcnet,netdev=lan,mac=52:54:00:12:34:01,addr=0x12,romfile="),
            "{a}"
        );
        assert!(
            a.contains("-netdev tap,id=wan,ifname=xl1_0b,script=no,downscript=no"),
            "{a}"
        );
        assert!(a.contains("path=/s/console.sock,server=on,wait=on"), "{a}");
        assert!(a.ends_with("-vga none"), "{a}");
        let two = LabSpec { cpus: 2, ..malta() };
        let c = argv(&two, boot, nics).unwrap().join(" ");
        assert!(c.contains("-smp 2 -m 256"), "{c}");
        assert!(c.contains("-accel tcg,thread=multi -rtc clock=vm"), "{c}");
        assert!(!c.contains("-icount"), "{c}");
        let three = [nics, &nics[..1]].concat();
        let err = argv(&malta(), boot, &three).unwrap_err().to_string();
        assert!(err.contains("3 NICs") && err.contains("2 slots"), "{err}");
    }
}
