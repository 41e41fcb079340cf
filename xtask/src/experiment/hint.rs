//! What a key of an experiment file takes, for serde's type errors
//! ("invalid type: string \"100\", expected u32"), which name neither
//! the key's meaning nor its range.

use std::ops::Range;

use crate::lab::guest_tbench::MAX_CLIENTS;
use crate::results::lab::iperf::{MAX_MSS, MAX_PARALLEL, MAX_UDP_MBIT, MIN_MSS};

/// The largest `runs` (rounds) an experiment file may ask for.
pub const MAX_RUNS: u32 = 1000;
/// The largest `duration` (seconds per run) an experiment file may ask for.
pub const MAX_DURATION_SECONDS: u32 = 3600;

/// What the key on the line of `span` in `text` takes, as "`key` takes
/// …", or `None` for a line without a key this module knows (a table
/// header, an array's continuation line, a string key whose own check
/// names its values).
pub fn for_span(text: &str, span: &Range<usize>) -> Option<String> {
    let start = text[..span.start.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let takes = match key {
        "runs" => format!("a whole number of rounds, 1 to {MAX_RUNS}, e.g. runs = 10"),
        "duration" => format!(
            "a whole number of seconds per run, 1 to {MAX_DURATION_SECONDS}, e.g. duration = 10"
        ),
        "clients" => format!("a whole number of tbench clients, 1 to {MAX_CLIENTS}"),
        "parallel" => format!("a whole number of iperf3 streams (-P), 1 to {MAX_PARALLEL}"),
        "mss" => format!("a whole number of bytes (iperf3 -M), {MIN_MSS} to {MAX_MSS}"),
        "udp" => format!("a whole number of Mbit/s per stream (iperf3 -u -b), 1 to {MAX_UDP_MBIT}"),
        "control" | "symbols" => "true or false, without quotes".to_string(),
        "targets" | "variants" | "formats" => {
            format!("a list of names in quotes, e.g. {key} = [\"…\"]")
        }
        _ => return None,
    };
    Some(format!("{key} takes {takes}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_on_the_error_s_line_is_named_with_its_range() {
        let text = "[lab]\nruns = \"100\"\n";
        let span = text.find("\"100\"").unwrap()..text.len() - 1;
        assert_eq!(
            for_span(text, &span).unwrap(),
            "runs takes a whole number of rounds, 1 to 1000, e.g. runs = 10"
        );
        let text = "[lab]\ncontrol = \"yes\"\n";
        let span = text.find("\"yes\"").unwrap()..text.len() - 1;
        assert!(for_span(text, &span)
            .unwrap()
            .starts_with("control takes true or false"));
        assert_eq!(for_span("[lab]\n", &(0..5)), None);
        assert_eq!(for_span("topology = 3\n", &(11..12)), None);
    }
}
