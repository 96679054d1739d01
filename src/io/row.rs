//! What readers produce per record: a typed row, or the reason it is not one.

use crate::value::Row;
use crate::{Error, ErrorKind};
use std::path::Path;

/// A typed input row and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceRow {
    /// 1-based physical line of the record's first byte in its file.
    pub line: u64,
    /// Values in schema order, packed as they were parsed (expressions read its datums).
    pub row: Row,
}

/// A record that does not fit the schema. Not an error by itself: the flow's `--on-invalid`
/// policy decides whether it fails the update ([`RowError::into_error`]) or is quarantined.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RowError {
    /// 1-based physical line of the record's first byte.
    pub line: u64,
    /// The schema column whose value is bad; `None` when the record as a whole is (field count).
    pub column: Option<String>,
    /// Why, e.g. `` `abc` is not a valid INT ``.
    pub reason: String,
    /// The record as read: a JSON array of strings (CSV, `null` for NULL) or the JSON object.
    pub raw: serde_json::Value,
}

impl RowError {
    /// The message without location: `` column `seq`: `abc` is not a valid INT ``.
    pub fn message(&self) -> String {
        match &self.column {
            Some(column) => format!("column `{column}`: {}", self.reason),
            None => self.reason.clone(),
        }
    }

    /// An `InvalidRow` error at this row's line of `file`.
    pub fn into_error(self, file: &Path) -> Error {
        Error::new(ErrorKind::InvalidRow, self.message())
            .at_line(self.line)
            .in_file(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn into_error_names_file_line_and_column() {
        let bad = RowError {
            line: 4,
            column: Some("sequenceNum".into()),
            reason: "`abc` is not a valid INT".into(),
            raw: serde_json::json!(["1", "abc"]),
        };
        let err = bad.into_error(Path::new("cdc/a.csv"));
        assert_eq!(err.kind(), ErrorKind::InvalidRow);
        assert_eq!(
            err.to_string(),
            "cdc/a.csv:4: column `sequenceNum`: `abc` is not a valid INT"
        );
    }
}
