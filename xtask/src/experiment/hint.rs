//! What a key of an experiment file takes, for serde's type errors
//! ("invalid type: string \"100\", expected u32"), which name neither
//! the key's meaning nor its range.

use std::ops::Range;

/// What the key whose value holds `span` in `text` takes, as "`key`
/// takes …", or `None` for a key this module does not know. The key is
/// found in the parsed document by the value's span (so a value on an
/// array's continuation line, a dotted key or an inline table still names
/// its own key, and text inside a multi-line string never does).
pub fn for_span(text: &str, span: &Range<usize>) -> Option<String> {
    let doc = toml_edit::Document::parse(text).ok()?;
    let key = key_at(doc.as_table(), span.start)?;
    let key = key.as_str();
    // The lab's whole-number options, from their definitions.
    if let Some(takes) = crate::lab::request::option::by_key(key).and_then(|o| o.takes()) {
        return Some(format!("{key} takes {takes}"));
    }
    let takes = match key {
        "control" | "symbols" => "true or false, without quotes".to_string(),
        "targets" | "variants" | "formats" => {
            format!("a list of names in quotes, e.g. {key} = [\"…\"]")
        }
        _ => return None,
    };
    Some(format!("{key} takes {takes}"))
}

/// The innermost key of `table` whose value's span holds byte `at`.
fn key_at(table: &toml_edit::Table, at: usize) -> Option<String> {
    for (key, item) in table.iter() {
        let found = match item {
            toml_edit::Item::Table(t) => key_at(t, at),
            toml_edit::Item::Value(v) => value_key(key, v, at),
            toml_edit::Item::ArrayOfTables(a) => a.iter().find_map(|t| key_at(t, at)),
            toml_edit::Item::None => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

fn value_key(key: &str, value: &toml_edit::Value, at: usize) -> Option<String> {
    if let toml_edit::Value::InlineTable(t) = value {
        if let Some(inner) = t.iter().find_map(|(k, v)| value_key(k, v, at)) {
            return Some(inner);
        }
    }
    let span = value.span()?;
    (span.start <= at && at < span.end.max(span.start + 1)).then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_whose_value_holds_the_error_is_named_with_its_range() {
        let text = "[lab]\nruns = \"100\"\n";
        let span = text.find("\"100\"").unwrap()..text.len() - 1;
        assert_eq!(
            for_span(text, &span).unwrap(),
            "runs takes a whole number of rounds, 1 to 1000 (default 5)"
        );
        let text = "[lab]\ncontrol = \"yes\"\n";
        let span = text.find("\"yes\"").unwrap()..text.len() - 1;
        assert!(for_span(text, &span)
            .unwrap()
            .starts_with("control takes true or false"));
        assert_eq!(for_span("[lab]\n", &(0..5)), None);
        assert_eq!(for_span("topology = 3\n", &(11..12)), None);
        // A value on an array's continuation line names its array.
        let text = "targets = [\n  \"brcm47xx\",\n  5,\n]\n";
        let span = text.find('5').unwrap()..text.find('5').unwrap() + 1;
        assert!(for_span(text, &span).unwrap().starts_with("targets takes"));
        // Text inside a multi-line string is not a key.
        let text = "targets = [\"a\", \'\'\'\nruns = \'\'\', 5]\n";
        let at = text.rfind('5').unwrap();
        assert!(for_span(text, &(at..at + 1))
            .unwrap()
            .starts_with("targets takes"));
        // Dotted keys and inline tables.
        let text = "lab.runs = \"x\"\n";
        let at = text.find('"').unwrap();
        assert!(for_span(text, &(at..at + 3))
            .unwrap()
            .starts_with("runs takes"));
        let text = "lab = { runs = \"x\" }\n";
        let at = text.find('"').unwrap();
        assert!(for_span(text, &(at..at + 3))
            .unwrap()
            .starts_with("runs takes"));
    }
}
