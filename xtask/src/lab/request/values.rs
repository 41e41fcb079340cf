//! A request's option values by [`Field`]: the one place that maps each
//! whole-number option to where [`LabRequest`] keeps it, and which options
//! a request sets. Apart from `option.rs` so that the definitions do not
//! import the request.

use super::option::{Field, OPTIONS};
use super::LabRequest;

impl LabRequest {
    /// Whole-number option `field`'s value: `Some` when the request sets
    /// it (for an option with a default, when it differs from it, except
    /// runs and duration, which every request has); `None` for a field
    /// that is no count or that the request leaves unset.
    pub fn count(&self, field: Field) -> Option<u32> {
        match field {
            Field::Runs => Some(self.runs),
            Field::Duration => Some(self.duration_seconds),
            Field::Clients => self.tbench_clients,
            Field::Parallel => (self.iperf.parallel != 1).then_some(self.iperf.parallel),
            Field::Mss => self.iperf.mss,
            Field::Udp => self.iperf.udp_mbit,
            Field::Routers => self.routers.map(|n| n as u32),
            Field::Cpus => self.cpus,
            other => {
                let key = other.option()?.key?;
                other.count()?;
                self.options.get(key).copied()
            }
        }
    }

    /// Sets whole-number option `field` to `value`, unchecked
    /// ([`LabRequest::check`] checks it). Does nothing for a field that
    /// is no count.
    pub fn set_count(&mut self, field: Field, value: u32) {
        match field {
            Field::Runs => self.runs = value,
            Field::Duration => self.duration_seconds = value,
            Field::Clients => self.tbench_clients = Some(value),
            Field::Parallel => self.iperf.parallel = value,
            Field::Mss => self.iperf.mss = Some(value),
            Field::Udp => self.iperf.udp_mbit = Some(value),
            Field::Routers => self.routers = Some(value as usize),
            Field::Cpus => self.cpus = Some(value),
            other => {
                if let (Some(Some(key)), Some(_)) = (other.option().map(|o| o.key), other.count()) {
                    self.options.insert(key.to_string(), value);
                }
            }
        }
    }

    /// The options the request sets, each once, in [`OPTIONS`]' order:
    /// counts by [`LabRequest::count`] (runs and duration left out: every
    /// lab takes them), and the switches and names it sets.
    pub fn given(&self) -> Vec<Field> {
        let machine_ssh = |f: fn(&super::SshRequest) -> bool| match &self.machine {
            super::Machine::Ssh(s) => f(s),
            super::Machine::Qemu => false,
        };
        OPTIONS
            .iter()
            .map(|o| o.field)
            .filter(|&f| match f {
                Field::Runs | Field::Duration => false,
                Field::Gro => self.gro.is_some(),
                Field::Direction => self.direction.is_some(),
                Field::Nic => self.nic.is_some(),
                Field::Topology => self.topology != super::Name::NatRouter,
                Field::CacheModel => self.cache_model,
                Field::Control => !self.control,
                Field::BuildOnly => self.build_only,
                Field::Openwrt => self.openwrt.is_some(),
                Field::PacketSteering => self.packet_steering.is_some(),
                Field::Resume => self.resume.is_some(),
                Field::LabFile => machine_ssh(|s| !s.lab_file.as_os_str().is_empty()),
                Field::NoFlash => {
                    machine_ssh(|s| s.flash == crate::results::lab::Flash::NotFlashed)
                }
                Field::Workload => false,
                count => self.count(count).is_some(),
            })
            .collect()
    }
}
