//! The lab's whole-number flags (`--runs`, `--set-mss`, …), made from
//! their one definition each ([`xtask::lab::OPTIONS`]): name, short flag,
//! value name, help, range and default. A new whole-number option needs
//! nothing here.

use std::collections::BTreeMap;

use clap::{Arg, ArgMatches, Command};
use xtask::lab::request::{Field, LabOption, OPTIONS};

/// The whole-number lab flags given on the command line, by field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountArgs(pub BTreeMap<Field, u32>);

fn counts() -> impl Iterator<Item = &'static LabOption> {
    OPTIONS.iter().filter(|o| o.count.is_some())
}

impl CountArgs {
    /// Option `field`'s value, or its definition's default.
    pub fn get_or_default(&self, field: Field) -> Option<u32> {
        self.0
            .get(&field)
            .copied()
            .or_else(|| field.count().and_then(|c| c.default))
    }
}

impl clap::FromArgMatches for CountArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut values = BTreeMap::new();
        for o in counts() {
            if let Some(v) = m.get_one::<u32>(o.flag) {
                values.insert(o.field, *v);
            }
        }
        Ok(CountArgs(values))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for CountArgs {
    fn augment_args(cmd: Command) -> Command {
        counts().fold(cmd, |cmd, o| {
            let c = o.count.expect("a count");
            let default = c
                .default
                .map_or(String::new(), |d| format!("; default {d}"));
            let mut arg = Arg::new(o.flag)
                .long(o.flag)
                .value_name(o.value_name)
                .help(format!(
                    "{} ({} to {}{default}). For {}",
                    o.help,
                    c.min,
                    c.max,
                    o.labs.describe()
                ))
                .value_parser(move |text: &str| -> Result<u32, String> {
                    // The definition's range, and why it is that range.
                    match text.parse::<u32>() {
                        Ok(v) if (c.min..=c.max).contains(&v) => Ok(v),
                        _ => Err(format!("use {} to {} ({})", c.min, c.max, c.limit)),
                    }
                });
            if let Some(s) = o.short {
                arg = arg.short(s);
            }
            cmd.arg(arg)
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
