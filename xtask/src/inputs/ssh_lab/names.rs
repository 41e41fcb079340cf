//! Checks of every name the SSH lab file hands to a command: the ssh
//! destination, Linux interface and network-namespace names, ssh `-o`
//! options. Interface names reach the router's shell (ssh joins its
//! command words into one string, see `lab::ssh::remote`), so they are
//! held to a stricter alphabet than Linux's own rules.

use std::net::IpAddr;

use anyhow::{bail, Context, Result};

/// Longest Linux interface name, in bytes (`IFNAMSIZ` 16 with its NUL).
pub const IFNAME_MAX: usize = 15;

/// Longest network namespace name this workbench accepts, in bytes.
pub const NETNS_MAX: usize = 64;

/// Checks a Linux interface name: 1–15 bytes, not `.` or `..`, no `/`,
/// `:` or whitespace (what Linux refuses), and — because the name reaches
/// the router's shell — only letters, digits and `_ . - @`, not starting
/// with `-` (ethtool would take it as an option).
pub fn check_interface(field: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() > IFNAME_MAX {
        bail!("{field} = {name:?}: an interface name has 1 to {IFNAME_MAX} characters");
    }
    if name == "." || name == ".." {
        bail!("{field} = {name:?} is not an interface name");
    }
    if let Some(c) = name
        .chars()
        .find(|c| c.is_whitespace() || *c == '/' || *c == ':')
    {
        bail!("{field} = {name:?}: Linux refuses {c:?} in an interface name");
    }
    if name.starts_with('-') {
        bail!("{field} = {name:?} starts with '-', which ethtool and ip would take as an option");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_.-@".contains(*c)))
    {
        bail!(
            "{field} = {name:?} contains {c:?}; the lab takes letters, digits and '_', '.', '-', '@' \
             (the name reaches the router's shell over ssh)"
        );
    }
    Ok(())
}

/// Checks a network namespace name (a file in `/run/netns/`): 1–64
/// letters, digits, `_`, `.` or `-`, not starting with `-` or `.`.
pub fn check_netns(field: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() > NETNS_MAX {
        bail!("{field} = {name:?}: a namespace name has 1 to {NETNS_MAX} characters");
    }
    if name.starts_with('-') || name.starts_with('.') {
        bail!("{field} = {name:?} starts with {:?}", &name[..1]);
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_.-".contains(*c)))
    {
        bail!("{field} = {name:?} contains {c:?}; use letters, digits, '_', '.' and '-'");
    }
    Ok(())
}

/// Where ssh logs in: `[USER@]HOST[:PORT]`, user `root` unless named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// The login name.
    pub user: String,
    /// A host name, or an IPv4 or IPv6 address (without brackets).
    pub host: String,
    /// TCP port of the SSH server.
    pub port: u16,
}

/// The login name when the destination names none (OpenWrt's only user).
pub const DEFAULT_USER: &str = "root";

impl Destination {
    /// Parses `ssh://[USER@]HOST[:PORT]` (IPv6 addresses in brackets).
    pub fn parse(text: &str) -> Result<Destination> {
        let rest = text.strip_prefix("ssh://").with_context(|| {
            format!("{text:?}: an ssh destination is written ssh://[USER@]HOST[:PORT]")
        })?;
        let (user, hostport) = match rest.split_once('@') {
            Some((u, h)) => (u, h),
            None => (DEFAULT_USER, rest),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .with_context(|| format!("{text:?}: '[' without ']'"))?;
            (h, after.strip_prefix(':'))
        } else {
            match hostport.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        let port = match port {
            None => 22,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .with_context(|| format!("{text:?}: port {p:?} is not 1 to 65535"))?,
        };
        check_user(user).with_context(|| format!("ssh destination {text:?}"))?;
        check_host(host).with_context(|| format!("ssh destination {text:?}"))?;
        Ok(Destination {
            user: user.to_string(),
            host: host.to_string(),
            port,
        })
    }

    /// `user@host`, ssh's destination argument.
    pub fn login(&self) -> String {
        format!("{}@{}", self.user, self.host)
    }

    /// `user@host:path` (`user@[v6]:path`), scp's target.
    pub fn scp_target(&self, path: &str) -> String {
        if self.host.contains(':') {
            format!("{}@[{}]:{path}", self.user, self.host)
        } else {
            format!("{}@{}:{path}", self.user, self.host)
        }
    }
}

/// A login name: a letter or `_`, then letters, digits, `_ . -`; at most
/// 32 characters.
fn check_user(user: &str) -> Result<()> {
    let ok = !user.is_empty()
        && user.len() <= 32
        && user
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    if !ok {
        bail!("user {user:?} is not a login name (letters, digits, '_', '.', '-')");
    }
    Ok(())
}

/// A host: an IP address, or a DNS name of letter/digit/`-` labels (no
/// label starts or ends with `-`), at most 253 characters.
fn check_host(host: &str) -> Result<()> {
    if host.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    let ok = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    if !ok {
        bail!("host {host:?} is neither an IP address nor a DNS name");
    }
    Ok(())
}

/// ssh `-o` options the lab file may set (compared case-insensitively, as
/// ssh does): how to trust and reach the router. Options that run
/// commands (`ProxyCommand`, `LocalCommand`, `KnownHostsCommand`, …) or
/// read other files (`Include`) are not among them.
pub const SSH_OPTIONS: &[&str] = &[
    "StrictHostKeyChecking",
    "UserKnownHostsFile",
    "GlobalKnownHostsFile",
    "IdentitiesOnly",
    "HostKeyAlgorithms",
    "PubkeyAcceptedAlgorithms",
    "PubkeyAcceptedKeyTypes",
    "KexAlgorithms",
    "Ciphers",
    "MACs",
    "LogLevel",
    "ServerAliveInterval",
    "ServerAliveCountMax",
    "ConnectionAttempts",
    "AddressFamily",
    "Compression",
    "CheckHostIP",
];

/// Checks one `Key=Value` ssh option against [`SSH_OPTIONS`]; the value
/// is one word of letters, digits and `_ . / : , + - @ =`.
pub fn check_ssh_option(option: &str) -> Result<()> {
    let (key, value) = option
        .split_once('=')
        .with_context(|| format!("ssh option {option:?}: write it as Key=Value"))?;
    if !SSH_OPTIONS.iter().any(|k| k.eq_ignore_ascii_case(key)) {
        bail!(
            "ssh option {key:?} is not one the lab passes on; allowed: {}",
            SSH_OPTIONS.join(", ")
        );
    }
    let value_ok = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:,+-@=".contains(c));
    if !value_ok {
        bail!(
            "ssh option {option:?}: the value must be one word of letters, digits and '_./:,+-@='"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_as_linux_and_the_shell_allow() {
        for ok in [
            "eth0",
            "br-lan",
            "lan1",
            "wan",
            "veth.10",
            "a@b",
            "x_y",
            "abcdefghijklmno",
        ] {
            check_interface("i", ok).unwrap();
        }
        for bad in [
            "",
            "abcdefghijklmnop",
            ".",
            "..",
            "eth0/1",
            "eth 0",
            "eth0\t",
            "eth0:1",
            "-K",
            "eth0;reboot",
            "$(reboot)",
            "a`b`",
            "a'b",
            "a|b",
            "ä",
        ] {
            assert!(check_interface("i", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn namespace_names() {
        check_netns("n", "xt-lan-12345").unwrap();
        for bad in ["", "-x", ".hidden", "a/b", "a b", "a;b", &"n".repeat(65)] {
            assert!(check_netns("n", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn destinations() {
        let d = Destination::parse("ssh://root@192.168.1.1").unwrap();
        assert_eq!((d.login(), d.port), ("root@192.168.1.1".to_string(), 22));
        let d = Destination::parse("ssh://router.lab:2222").unwrap();
        assert_eq!((d.user.as_str(), d.port), ("root", 2222));
        let d = Destination::parse("ssh://admin@[fd00::1]:22").unwrap();
        assert_eq!(d.host, "fd00::1");
        assert_eq!(d.scp_target("/tmp/x"), "admin@[fd00::1]:/tmp/x");
        for bad in [
            "root@host",
            "ssh://",
            "ssh://root@",
            "ssh://-oProxyCommand=x",
            "ssh://root@-oProxyCommand=x",
            "ssh://ro ot@host",
            "ssh://root@host:0",
            "ssh://root@host:99999",
            "ssh://root@ho_st",
            "ssh://root@host;reboot",
            "ssh://root@[fd00::1",
            "ssh://$(id)@host",
        ] {
            assert!(Destination::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn only_allowed_ssh_options() {
        check_ssh_option("StrictHostKeyChecking=no").unwrap();
        check_ssh_option("userknownhostsfile=/dev/null").unwrap();
        check_ssh_option("PubkeyAcceptedAlgorithms=+ssh-rsa").unwrap();
        for bad in [
            "ProxyCommand=nc %h %p",
            "LocalCommand=id",
            "PermitLocalCommand=yes",
            "Include=/etc/x",
            "StrictHostKeyChecking",
            "UserKnownHostsFile=/tmp/a b",
            "UserKnownHostsFile=%d/x",
            "LogLevel=",
        ] {
            assert!(check_ssh_option(bad).is_err(), "{bad:?}");
        }
    }
}
