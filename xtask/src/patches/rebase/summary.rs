//! The rebase summary: counts per class, the table and the JSON.

use std::collections::BTreeMap;
use std::path::Path;

use super::state::{Class, RebaseState};

/// How many of `classes` fall in each class, every class present (zeros
/// included), in the order clean, offset, fuzz, upstream, conflict.
pub fn tally(classes: impl IntoIterator<Item = Class>) -> BTreeMap<Class, usize> {
    let mut c: BTreeMap<Class, usize> = [
        Class::Clean,
        Class::Offset,
        Class::Fuzz,
        Class::Upstream,
        Class::Conflict,
    ]
    .into_iter()
    .map(|k| (k, 0))
    .collect();
    for class in classes {
        *c.entry(class).or_default() += 1;
    }
    c
}

/// Counts per class of a rebase's results ([`tally`]).
pub fn counts(state: &RebaseState) -> BTreeMap<Class, usize> {
    tally(state.results.iter().map(|r| r.class))
}

/// The summary table: counts per class, then one line per patch.
pub fn table(state: &RebaseState, tree: &Path) -> String {
    let mut s = format!(
        "rebase {} → {}{}\n",
        state.from,
        state.to,
        state
            .target
            .as_ref()
            .map(|t| format!(" ({t})"))
            .unwrap_or_default()
    );
    for (class, n) in counts(state) {
        s.push_str(&format!("  {:<9} {n:>5}\n", class.as_str()));
    }
    s.push_str(&format!("  {:<9} {:>5}\n", "pending", state.pending.len()));
    let width = state
        .results
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(10);
    for r in &state.results {
        let mut flags = Vec::new();
        if r.refreshed {
            flags.push("refreshed".to_string());
        }
        if r.removed {
            flags.push("removed".to_string());
        }
        if !r.rejects.is_empty() {
            flags.push(format!("rejects: {}", r.rejects.join(", ")));
        }
        if !r.note.is_empty() {
            flags.push(r.note.clone());
        }
        s.push_str(&format!(
            "{:<width$}  {:<8}  {}\n",
            r.name,
            r.class.as_str(),
            flags.join("; ")
        ));
    }
    for k in &state.kept_existing {
        s.push_str(&format!(
            "{k}: already in the new directory and different; kept the new one\n"
        ));
    }
    if let Some(name) = &state.stopped_at {
        s.push_str(&format!(
            "stopped at {name}: fix the files in {} (see the .rej files), then \
             `cargo xtask patches rebase --continue` (or --skip, --abort)\n",
            tree.display()
        ));
    }
    s
}

/// The same as JSON: `{from, to, target, tree, stopped_at, counts, patches, pending, kept_existing}`.
pub fn json(state: &RebaseState, tree: &Path) -> String {
    let counts: BTreeMap<&str, usize> = counts(state)
        .into_iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let v = serde_json::json!({
        "from": state.from,
        "to": state.to,
        "target": state.target,
        "tree": tree,
        "stopped_at": state.stopped_at,
        "counts": counts,
        "patches": state.results,
        "pending": state.pending,
        "kept_existing": state.kept_existing,
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}
