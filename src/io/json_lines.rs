//! Splitting JSON-lines text into objects, keeping each object's key order.
//!
//! A JSON-lines file is one object per line; blank (all-whitespace) lines are skipped and a
//! trailing `\r` is part of the line ending. Lines are numbered from 1 by `\n`. Anything on a
//! non-blank line other than one JSON object is a `Format` error at that line, which the reader
//! turns into a bad record (schema inference fails the file on it).

use crate::{Error, ErrorKind, Result};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value as Json;
use std::fmt;
use std::path::Path;

/// One object's members in file order (schema inference names columns in first-seen order,
/// which `serde_json::Map` would sort away). Duplicate keys are all kept.
#[derive(Debug)]
pub(crate) struct JsonObject(pub Vec<(String, Json)>);

impl JsonObject {
    /// The member named `name`, case-insensitively as column names are; when two members are
    /// (`a` twice, or `a` and `A`), their keys: which one a column means would be a guess.
    pub(crate) fn get(&self, name: &str) -> Result<Option<&Json>, (&str, &str)> {
        let mut named = self.0.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name));
        match (named.next(), named.next()) {
            (Some((first, _)), Some((second, _))) => Err((first, second)),
            (found, _) => Ok(found.map(|(_, v)| v)),
        }
    }

    /// The object as a plain JSON value (for quarantine records).
    pub(crate) fn to_json(&self) -> Json {
        Json::Object(self.0.iter().cloned().collect())
    }
}

/// The non-blank lines of `text` with their 1-based line numbers.
pub(crate) fn json_lines(text: &str) -> impl Iterator<Item = (u64, &str)> {
    json_lines_from(text, 1)
}

/// The non-blank lines of `text`, whose first line is line `first_line` of its file, with their
/// line numbers in the file.
pub(crate) fn json_lines_from(text: &str, first_line: u64) -> impl Iterator<Item = (u64, &str)> {
    text.split('\n')
        .zip(first_line..)
        .map(|(line, n)| (n, line.strip_suffix('\r').unwrap_or(line)))
        .filter(|(_, line)| !line.trim().is_empty())
}

/// Parses one line as a JSON object; anything else is a `Format` error at `line` of `path`.
pub(crate) fn parse_object(path: &Path, line: u64, text: &str) -> Result<JsonObject> {
    serde_json::from_str::<JsonObject>(text).map_err(|e| {
        // serde_json's message ends in "at line 1 column N"; the line is ours to give.
        let message = e.to_string();
        let reason = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(r, _)| r);
        Error::new(
            ErrorKind::Format,
            format!("not a JSON object (column {}: {reason})", e.column()),
        )
        .at_line(line)
        .in_file(path)
    })
}

impl<'de> Deserialize<'de> for JsonObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor)
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = JsonObject;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonObject, A::Error> {
        let mut members = Vec::new();
        while let Some(member) = map.next_entry::<String, Json>()? {
            members.push(member);
        }
        Ok(JsonObject(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_skip_blanks_and_count_physically() {
        let lines: Vec<_> = json_lines("{}\r\n\n  \n{\"a\":1}").collect();
        assert_eq!(lines, [(1, "{}"), (4, "{\"a\":1}")]);
        let lines: Vec<_> = json_lines_from("\n{}\n", 10).collect();
        assert_eq!(lines, [(11, "{}")]);
    }

    #[test]
    fn objects_keep_key_order_and_match_names_case_insensitively() {
        let obj = parse_object(Path::new("f"), 1, r#"{"b":1,"A":2,"a":3,"b":4}"#).unwrap();
        let keys: Vec<_> = obj.0.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "A", "a", "b"]);
        assert_eq!(obj.get("b"), Err(("b", "b")));
        assert_eq!(obj.get("a"), Err(("A", "a")));
        assert_eq!(obj.get("B"), Err(("b", "b")));
        assert_eq!(obj.get("c"), Ok(None));
        let obj = parse_object(Path::new("f"), 1, r#"{"A":2,"b":4}"#).unwrap();
        assert_eq!(obj.get("a"), Ok(Some(&json!(2))));
        assert_eq!(obj.get("B"), Ok(Some(&json!(4))));
    }

    #[test]
    fn non_objects_are_format_errors_with_line() {
        for bad in ["[1,2]", "3", "{\"a\":", "{\"a\":1} x", "\"s\""] {
            let err = parse_object(Path::new("in.jsonl"), 7, bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Format, "{bad}");
            assert_eq!(err.location().line, Some(7));
            assert!(
                err.to_string().starts_with("in.jsonl:7: not a JSON object"),
                "{err}"
            );
        }
    }
}
