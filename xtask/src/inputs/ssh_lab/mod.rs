//! The SSH lab file (`cargo xtask lab --lab ssh://root@HOST --lab-file
//! lab-ssh.toml`): how to reach a real router, which of its interfaces
//! forward, where iperf3's client and server run on this machine, and
//! which image to flash per target. Everything is checked when the file
//! is loaded, before anything runs.
//!
//! ```toml
//! [ssh]
//! # Optional when --lab ssh://root@HOST names it (both: they must agree).
//! destination = "ssh://root@192.168.1.1"
//! identity = "/root/.ssh/id_ed25519"        # ssh -i; relative to this file
//! options = ["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"]
//! from = "lan"            # ssh runs in the LAN endpoint's namespace (host, lan, wan)
//!
//! [router]
//! lan_interface = "br-lan"   # counters (rx/tx packets) of the router's LAN side
//! wan_interface = "wan"
//! gro_interfaces = ["lan1", "wan"]   # ethtool -K … gro; default: the two above
//! interrupt_names = ["eth0"]         # /proc/interrupts names; default: the two above
//! wan_address = "203.0.113.1"        # what the WAN side sees after masquerade
//!
//! [lan]
//! netns = "lan"                      # an existing namespace: the iperf3 client
//!
//! [wan]
//! interface = "enp3s0"               # moved into a namespace of the lab's for the run
//! address = "203.0.113.2/24"         # the iperf3 server's address
//!
//! [images]
//! # Per target; {variant} and {results} (the variant's results directory)
//! # are filled in; relative paths are relative to this file.
//! bcm53xx = "images/bcm53xx-{variant}-squashfs.trx"
//!
//! [timeouts]
//! connect_seconds = 10     # ssh ConnectTimeout
//! command_seconds = 60     # one remote command
//! copy_seconds = 600       # scp of an image
//! reboot_seconds = 600     # sysupgrade until the router answers again
//! ```

pub mod names;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

pub use names::{check_interface, check_netns, check_ssh_option, Destination};

/// The file as written (see the module docs).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    ssh: RawSsh,
    router: RawRouter,
    lan: RawEndpoint,
    wan: RawEndpoint,
    #[serde(default)]
    images: BTreeMap<String, String>,
    #[serde(default)]
    timeouts: Timeouts,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSsh {
    destination: Option<String>,
    identity: Option<PathBuf>,
    #[serde(default)]
    options: Vec<String>,
    #[serde(default)]
    from: SshFrom,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRouter {
    lan_interface: String,
    wan_interface: String,
    #[serde(default)]
    gro_interfaces: Vec<String>,
    #[serde(default)]
    interrupt_names: Vec<String>,
    wan_address: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEndpoint {
    netns: Option<String>,
    interface: Option<String>,
    address: Option<String>,
    gateway: Option<String>,
}

/// Which namespace of this machine ssh and scp run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SshFrom {
    /// The host's own namespace (the default).
    #[default]
    Host,
    /// The LAN endpoint's namespace (the router's LAN, OpenWrt's default
    /// management side).
    Lan,
    /// The WAN endpoint's namespace.
    Wan,
}

/// Bounds of the lab's remote steps, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    /// ssh's `ConnectTimeout`.
    pub connect_seconds: u32,
    /// One remote command (sampling, ethtool).
    pub command_seconds: u32,
    /// Copying one image with scp.
    pub copy_seconds: u32,
    /// From `sysupgrade` until the rebooted router answers again.
    pub reboot_seconds: u32,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            connect_seconds: 10,
            command_seconds: 60,
            copy_seconds: 600,
            reboot_seconds: 600,
        }
    }
}

/// Where one side's iperf3 runs on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SshPlace {
    /// An existing network namespace, set up by the user.
    Netns(String),
    /// An interface of the host's namespace that the lab moves into a
    /// namespace of its own for the run (it returns, unaddressed, when
    /// the namespace is removed).
    Interface(String),
}

/// One side of the router on this machine, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshEndpoint {
    /// Its namespace or interface.
    pub place: SshPlace,
    /// Its address and prefix length: required for an interface (the lab
    /// assigns it) and on the WAN side (the iperf3 server binds to it).
    pub address: Option<(IpAddr, Option<u8>)>,
    /// A default route through the router, for an interface.
    pub gateway: Option<IpAddr>,
}

/// The router's side of the lab, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterSide {
    /// The router's LAN interface (counters).
    pub lan_interface: String,
    /// The router's WAN interface (counters).
    pub wan_interface: String,
    /// Interfaces GRO is switched on.
    pub gro_interfaces: Vec<String>,
    /// `/proc/interrupts` names counted as the NICs' interrupts.
    pub interrupt_names: Vec<String>,
    /// The router's WAN address, as the WAN side must see the client.
    pub wan_address: IpAddr,
}

/// A loaded and checked SSH lab file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshLabFile {
    /// The file.
    pub path: PathBuf,
    /// sha256 of its bytes, lowercase hex.
    pub sha256: String,
    /// `[ssh] destination`, if given.
    pub destination: Option<Destination>,
    /// `ssh -i`, made absolute.
    pub identity: Option<PathBuf>,
    /// `ssh -o` options, checked against the allow-list.
    pub options: Vec<String>,
    /// Where ssh runs.
    pub from: SshFrom,
    /// The router.
    pub router: RouterSide,
    /// The LAN side on this machine (iperf3 client).
    pub lan: SshEndpoint,
    /// The WAN side on this machine (iperf3 server).
    pub wan: SshEndpoint,
    /// Image path templates per target.
    pub images: BTreeMap<String, String>,
    /// Bounds of the remote steps.
    pub timeouts: Timeouts,
}

impl SshLabFile {
    /// Reads and checks `path`; errors name the file and the field.
    pub fn load(path: &Path) -> Result<SshLabFile> {
        let limit = crate::util::fs::FileLimit {
            what: "lab file",
            max_bytes: crate::util::fs::MAX_INPUT_BYTES,
        };
        let text = crate::util::fs::read_limited(path, limit, "pass the lab's TOML file")?;
        let bytes = text.as_bytes();
        let dir = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, dir)
            .map(|mut f| {
                f.path = path.to_path_buf();
                f.sha256 = crate::util::hash::sha256_bytes(bytes);
                f
            })
            .with_context(|| format!("refusing the lab file {}", path.display()))
    }

    /// Checks the file's `text`; relative paths are relative to `dir`.
    pub fn parse(text: &str, dir: &Path) -> Result<SshLabFile> {
        let raw: RawFile = toml_edit::de::from_str(text).context("not a lab file")?;
        let destination = raw
            .ssh
            .destination
            .as_deref()
            .map(Destination::parse)
            .transpose()
            .context("[ssh] destination")?;
        let identity = match &raw.ssh.identity {
            Some(p) => Some(identity_path(dir, p)?),
            None => None,
        };
        for o in &raw.ssh.options {
            check_ssh_option(o).context("[ssh] options")?;
        }
        let r = &raw.router;
        check_interface("[router] lan_interface", &r.lan_interface)?;
        check_interface("[router] wan_interface", &r.wan_interface)?;
        let or_both = |list: &[String]| -> Vec<String> {
            if list.is_empty() {
                vec![r.lan_interface.clone(), r.wan_interface.clone()]
            } else {
                list.to_vec()
            }
        };
        let gro_interfaces = or_both(&r.gro_interfaces);
        for i in &gro_interfaces {
            check_interface("[router] gro_interfaces", i)?;
        }
        let interrupt_names = or_both(&r.interrupt_names);
        for i in &interrupt_names {
            if i.is_empty() || i.chars().any(char::is_whitespace) {
                bail!("[router] interrupt_names: {i:?} is not one word");
            }
        }
        let wan_address = r.wan_address.parse().with_context(|| {
            format!(
                "[router] wan_address {:?}: not an IP address",
                r.wan_address
            )
        })?;
        let lan = endpoint("lan", &raw.lan)?;
        let wan = endpoint("wan", &raw.wan)?;
        if wan.address.is_none() {
            bail!("[wan] needs address = \"…\": the iperf3 server binds to it and the client connects to it");
        }
        if let (SshPlace::Netns(a), SshPlace::Netns(b)) = (&lan.place, &wan.place) {
            if a == b {
                bail!("[lan] and [wan] name the same namespace {a:?}: traffic would not cross the router");
            }
        }
        for (target, template) in &raw.images {
            crate::util::path::check_relative(Path::new(target))
                .with_context(|| format!("[images] key {target:?}"))?;
            check_template(template).with_context(|| format!("[images] {target}"))?;
        }
        let t = raw.timeouts;
        for (name, v) in [
            ("connect_seconds", t.connect_seconds),
            ("command_seconds", t.command_seconds),
            ("copy_seconds", t.copy_seconds),
            ("reboot_seconds", t.reboot_seconds),
        ] {
            if !(1..=3600).contains(&v) {
                bail!("[timeouts] {name} = {v}: use 1 to 3600 seconds");
            }
        }
        Ok(SshLabFile {
            path: PathBuf::new(),
            sha256: String::new(),
            destination,
            identity,
            options: raw.ssh.options,
            from: raw.ssh.from,
            router: RouterSide {
                lan_interface: r.lan_interface.clone(),
                wan_interface: r.wan_interface.clone(),
                gro_interfaces,
                interrupt_names,
                wan_address,
            },
            lan,
            wan,
            images: raw.images,
            timeouts: t,
        })
    }

    /// The image to flash for `target`'s `variant`, whose results are in
    /// `results_dir`; `None` when `[images]` has no entry for `target`.
    pub fn image(&self, target: &str, variant: &str, results_dir: &Path) -> Option<PathBuf> {
        let template = self.images.get(target)?;
        let text = template
            .replace("{variant}", variant)
            .replace("{results}", &results_dir.display().to_string());
        let dir = self.path.parent().unwrap_or(Path::new("."));
        Some(dir.join(text))
    }
}

/// `ssh -i`'s file: relative to `dir`, existing, without `%` (ssh
/// expands `%` tokens in it) or a newline.
fn identity_path(dir: &Path, path: &Path) -> Result<PathBuf> {
    let full = dir.join(path);
    let text = full.to_string_lossy();
    if text.contains('%') || text.contains('\n') || text.starts_with('-') {
        bail!("[ssh] identity {text:?}: no '%', newline or leading '-', please");
    }
    if !full.is_file() {
        bail!("[ssh] identity {text:?} is not a file");
    }
    Ok(full)
}

/// An image path template: one line, only `{variant}` and `{results}`.
fn check_template(template: &str) -> Result<()> {
    if template.is_empty() || template.contains('\n') {
        bail!("{template:?}: one line naming the image file");
    }
    let rest = template.replace("{variant}", "").replace("{results}", "");
    if rest.contains('{') || rest.contains('}') {
        bail!("{template:?}: only {{variant}} and {{results}} are filled in");
    }
    Ok(())
}

fn endpoint(side: &str, raw: &RawEndpoint) -> Result<SshEndpoint> {
    let place = match (&raw.netns, &raw.interface) {
        (Some(n), None) => {
            check_netns(&format!("[{side}] netns"), n)?;
            SshPlace::Netns(n.clone())
        }
        (None, Some(i)) => {
            check_interface(&format!("[{side}] interface"), i)?;
            SshPlace::Interface(i.clone())
        }
        _ => {
            bail!("[{side}] needs exactly one of netns = \"…\" (a namespace) and interface = \"…\"")
        }
    };
    let address = raw
        .address
        .as_deref()
        .map(|a| parse_address(a).with_context(|| format!("[{side}] address")))
        .transpose()?;
    let gateway = raw
        .gateway
        .as_deref()
        .map(|g| {
            g.parse::<IpAddr>()
                .with_context(|| format!("[{side}] gateway {g:?}: not an IP address"))
        })
        .transpose()?;
    if let SshPlace::Interface(i) = &place {
        if !matches!(address, Some((_, Some(_)))) {
            bail!("[{side}] interface {i:?} needs address = \"A.B.C.D/LEN\": the lab assigns it");
        }
    } else if gateway.is_some() {
        bail!("[{side}] gateway is for an interface; a namespace keeps its own routes");
    }
    Ok(SshEndpoint {
        place,
        address,
        gateway,
    })
}

/// `A.B.C.D` or `A.B.C.D/LEN` (IPv6 too).
fn parse_address(text: &str) -> Result<(IpAddr, Option<u8>)> {
    let (ip, len) = match text.split_once('/') {
        Some((ip, len)) => (ip, Some(len)),
        None => (text, None),
    };
    let ip: IpAddr = ip
        .parse()
        .with_context(|| format!("{text:?}: not an IP address"))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len = match len {
        None => None,
        Some(l) => Some(
            l.parse::<u8>()
                .ok()
                .filter(|l| *l <= max)
                .with_context(|| format!("{text:?}: prefix length {l:?} is not 0 to {max}"))?,
        ),
    };
    Ok((ip, len))
}

#[cfg(test)]
mod tests;
