//! Addresses as a topology writes them: an interface address with its
//! prefix ([`Cidr`], `192.168.1.1/24`) and a MAC ([`Mac`],
//! `52:54:00:12:34:01`). Typed, so that what reaches an `ip` argv or the
//! guest's generated setup script is an address and nothing else.

use std::fmt;
use std::net::IpAddr;

use anyhow::{bail, Context, Result};

/// An interface address with its prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    /// The address.
    pub addr: IpAddr,
    /// The prefix length (bits).
    pub prefix: u8,
}

impl Cidr {
    /// `addr/prefix`, checking the prefix fits the address family (32 or
    /// 128 bits).
    pub fn new(addr: IpAddr, prefix: u8) -> Result<Cidr> {
        let max = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > max {
            bail!("{addr}/{prefix}: a prefix of at most {max} bits");
        }
        Ok(Cidr { addr, prefix })
    }

    /// Parses `192.168.1.1/24`.
    pub fn parse(s: &str) -> Result<Cidr> {
        let (a, p) = s
            .split_once('/')
            .with_context(|| format!("{s:?}: write an address with its prefix, ADDR/LEN"))?;
        let addr: IpAddr = a
            .parse()
            .with_context(|| format!("{s:?}: not an address"))?;
        let prefix: u8 = p
            .parse()
            .with_context(|| format!("{s:?}: not a prefix length"))?;
        Cidr::new(addr, prefix)
    }

    /// Whether `other` lies in this address's network.
    pub fn contains(&self, other: IpAddr) -> bool {
        match (self.addr, other) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(a) & mask == u32::from(b) & mask
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(a) & mask == u128::from(b) & mask
            }
            _ => false,
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// A MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mac(pub [u8; 6]);

impl Mac {
    /// A locally administered unicast MAC in QEMU's `52:54:00` block,
    /// ending in `a:b:c`.
    pub const fn qemu(a: u8, b: u8, c: u8) -> Mac {
        Mac([0x52, 0x54, 0x00, a, b, c])
    }
}

impl fmt::Display for Mac {
    /// Lowercase, colon-separated, as `/sys/class/net/*/address` shows it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_print_as_ip_and_sysfs_write_them() {
        let c = Cidr::parse("192.168.1.1/24").unwrap();
        assert_eq!(c.to_string(), "192.168.1.1/24");
        assert!(c.contains("192.168.1.200".parse().unwrap()));
        assert!(!c.contains("192.168.2.1".parse().unwrap()));
        assert!(Cidr::parse("192.168.1.1/33").is_err());
        assert!(Cidr::parse("192.168.1.1").is_err());
        assert!(Cidr::parse("10.0.0.0/0")
            .unwrap()
            .contains("1.2.3.4".parse().unwrap()));
        assert_eq!(Mac::qemu(0x12, 0x34, 0x0a).to_string(), "52:54:00:12:34:0a");
    }
}
