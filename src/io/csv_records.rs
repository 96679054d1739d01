//! Splitting CSV text into records whose fields know NULL from the empty string.
//!
//! The `csv` crate (RFC 4180: `,` delimiter, `"` quotes doubled inside quoted fields, `\n`,
//! `\r\n` or `\r` ending a record, blank lines skipped) does the parsing. It does not say whether
//! a field was quoted, and our NULL rule needs exactly that: an empty unquoted field is NULL, an
//! empty quoted field (`""`) is the empty string. So each record's raw byte span (from the
//! reader's position before and after it) is re-scanned by [`quoted_fields`], a copy of the
//! start-of-field decisions of `csv-core`'s state machine. A disagreement in field count
//! between the two is reported as an internal error, never guessed around.
//!
//! Line numbers are 1-based physical lines (counted by `\n`) of a record's first byte, so a
//! record with a multi-line quoted field is reported at the line where it starts. The text may
//! be the end of a file (starting at a known line), and with [`Ending::Growing`] its last record
//! may still be being written: a record whose quoted field is open at the end of the text is then
//! not read, and [`CsvRecords::consumed`] says where the records read so far end.

use super::tail::Ending;
use crate::{Error, ErrorKind, Result};
use std::path::Path;

/// One CSV record: its starting line and its fields, `None` for NULL.
///
/// The fields' text is kept in one buffer, so a record costs two allocations whatever its
/// width (it was one per field, read once and dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CsvRecord {
    /// 1-based physical line of the record's first byte.
    pub line: u64,
    /// The fields' text, one after another.
    text: String,
    /// Per field: where its text ends in `text`, and whether it is NULL (an empty unquoted
    /// field).
    ends: Vec<(usize, bool)>,
}

impl CsvRecord {
    /// A record of `count` `fields` (`None` for NULL), whose text takes `bytes` bytes in all.
    fn with_fields<'a>(
        line: u64,
        (count, bytes): (usize, usize),
        fields: impl IntoIterator<Item = Option<&'a str>>,
    ) -> Self {
        let mut record = CsvRecord {
            line,
            text: String::with_capacity(bytes),
            ends: Vec::with_capacity(count),
        };
        for field in fields {
            record.text.push_str(field.unwrap_or_default());
            record.ends.push((record.text.len(), field.is_none()));
        }
        record
    }

    /// The number of fields.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Field `i`'s text; `None` for NULL or past the last field.
    pub(crate) fn field(&self, i: usize) -> Option<&str> {
        let &(end, null) = self.ends.get(i)?;
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p].0);
        (!null).then(|| &self.text[start..end])
    }

    /// The fields in order, `None` for NULL.
    pub(crate) fn fields(&self) -> impl Iterator<Item = Option<&str>> {
        (0..self.len()).map(|i| self.field(i))
    }

    /// The raw record as a JSON array of strings (`null` for NULL), for quarantine output.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        self.fields()
            .map(|f| f.map_or(serde_json::Value::Null, |f| f.into()))
            .collect()
    }
}

/// Iterator over the records of CSV text; errors name `path` and the line.
pub(crate) struct CsvRecords<'a> {
    path: &'a Path,
    text: &'a str,
    reader: csv::Reader<&'a [u8]>,
    record: csv::StringRecord,
    /// Byte offset where the next record's span starts.
    offset: usize,
    /// Physical line at `offset`.
    line: u64,
    ending: Ending,
    done: bool,
}

impl<'a> CsvRecords<'a> {
    /// Records of `text`, the contents of `path`.
    pub(crate) fn new(path: &'a Path, text: &'a str) -> Self {
        Self::starting_at(path, text, 1, Ending::Whole)
    }

    /// Records of `text`, a part of `path` that starts at a record boundary on line `first_line`
    /// and ends as `ending` says.
    pub(crate) fn starting_at(
        path: &'a Path,
        text: &'a str,
        first_line: u64,
        ending: Ending,
    ) -> Self {
        let reader = csv::ReaderBuilder::new()
            .has_headers(false)
            // Field counts are checked per row by the caller, so a short row is one bad row.
            .flexible(true)
            .from_reader(text.as_bytes());
        CsvRecords {
            path,
            text,
            reader,
            record: csv::StringRecord::new(),
            offset: 0,
            line: first_line,
            ending,
            done: false,
        }
    }

    /// The byte offset in the text just past the records read so far (and past blank lines after
    /// them once the text is exhausted), and the line of that byte.
    pub(crate) fn consumed(&self) -> (usize, u64) {
        (self.offset, self.line)
    }

    fn read(&mut self) -> Result<Option<CsvRecord>> {
        let more = self.reader.read_record(&mut self.record).map_err(|e| {
            Error::new(ErrorKind::Format, format!("malformed CSV: {e}"))
                .at_line(self.line)
                .in_file(self.path)
        })?;
        if !more {
            // Only blank lines (if anything) are left; they are consumed too.
            let rest = self.text.as_bytes().get(self.offset..).unwrap_or_default();
            self.line += rest.iter().filter(|&&b| b == b'\n').count() as u64;
            self.offset = self.text.len();
            return Ok(None);
        }
        let end = usize::try_from(self.reader.position().byte()).unwrap_or(usize::MAX);
        let span = self
            .text
            .as_bytes()
            .get(self.offset..end)
            .unwrap_or_default();
        let (skipped_lines, quoted, unterminated) = quoted_fields(span);
        let line = self.line + skipped_lines;
        if unterminated && self.ending == Ending::Growing {
            // The record may still be being written: leave it (but not the blank lines before
            // it) for a later read.
            let blank = span
                .iter()
                .take_while(|&&b| b == b'\r' || b == b'\n')
                .count();
            self.offset += span[..blank]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            self.line += skipped_lines;
            return Ok(None);
        }
        if unterminated {
            // The parser accepts a quote left open at the end of the file and swallows the rest
            // of the file into one field; name the real problem instead of a field count.
            return Err(Error::new(
                ErrorKind::Format,
                "malformed CSV: a quoted field opened here is not closed before the end of the file",
            )
            .at_line(line)
            .in_file(self.path));
        }
        self.line += span.iter().filter(|&&b| b == b'\n').count() as u64;
        self.offset = end;
        if quoted.len() != self.record.len() {
            return Err(Error::new(
                ErrorKind::Internal,
                format!(
                    "CSV field scan found {} fields where the parser found {}",
                    quoted.len(),
                    self.record.len()
                ),
            )
            .at_line(line)
            .in_file(self.path));
        }
        let fields = self
            .record
            .iter()
            .zip(quoted)
            .map(|(text, quoted)| (quoted || !text.is_empty()).then_some(text));
        let size = (self.record.len(), self.record.as_slice().len());
        Ok(Some(CsvRecord::with_fields(line, size, fields)))
    }
}

impl Iterator for CsvRecords<'_> {
    type Item = Result<CsvRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.read().transpose();
        // After an error the reader's position no longer matches our line count; stop there.
        self.done = !matches!(item, Some(Ok(_)));
        item
    }
}

/// States of the scan; the names follow `csv-core`'s NFA.
#[derive(Clone, Copy)]
enum Scan {
    StartRecord,
    StartField,
    InField,
    InQuotedField,
    /// Just after a quote inside a quoted field: a second quote is a literal one.
    InDoubleEscapedQuote,
}

/// For the raw span of one record (possibly led by blank lines and followed by its line
/// ending): the number of `\n` before the record starts, per field whether it starts with a
/// quote, and whether the span ends inside an open quoted field. Mirrors `csv-core` with the
/// default dialect so field boundaries agree exactly.
fn quoted_fields(span: &[u8]) -> (u64, Vec<bool>, bool) {
    let is_term = |b: u8| b == b'\r' || b == b'\n';
    let mut skipped_lines = 0;
    let mut quoted = Vec::new();
    let mut state = Scan::StartRecord;
    for &b in span {
        state = match state {
            Scan::StartRecord if is_term(b) => {
                skipped_lines += u64::from(b == b'\n');
                Scan::StartRecord
            }
            Scan::StartRecord | Scan::StartField => match b {
                b'"' => {
                    quoted.push(true);
                    Scan::InQuotedField
                }
                b',' => {
                    quoted.push(false);
                    Scan::StartField
                }
                _ if is_term(b) => {
                    quoted.push(false);
                    return (skipped_lines, quoted, false);
                }
                _ => {
                    quoted.push(false);
                    Scan::InField
                }
            },
            Scan::InField | Scan::InDoubleEscapedQuote if b == b',' => Scan::StartField,
            Scan::InField | Scan::InDoubleEscapedQuote if is_term(b) => {
                return (skipped_lines, quoted, false)
            }
            Scan::InField => Scan::InField,
            Scan::InDoubleEscapedQuote if b == b'"' => Scan::InQuotedField,
            // Text after a closing quote (`"a"b`) continues the same, already quoted, field.
            Scan::InDoubleEscapedQuote => Scan::InField,
            Scan::InQuotedField if b == b'"' => Scan::InDoubleEscapedQuote,
            Scan::InQuotedField => Scan::InQuotedField,
        };
    }
    // End of input: a pending delimiter still opens one last (empty, unquoted) field.
    if matches!(state, Scan::StartField) {
        quoted.push(false);
    }
    (skipped_lines, quoted, matches!(state, Scan::InQuotedField))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str) -> Vec<CsvRecord> {
        CsvRecords::new(Path::new("t.csv"), text)
            .collect::<Result<_>>()
            .unwrap()
    }

    fn rec(line: u64, fields: &[Option<&str>]) -> CsvRecord {
        let bytes = fields.iter().flatten().map(|f| f.len()).sum();
        CsvRecord::with_fields(line, (fields.len(), bytes), fields.iter().copied())
    }

    /// Fields come back from the record's one buffer as they were parsed, NULL apart from the
    /// empty string.
    #[test]
    fn fields_read_back_from_one_buffer() {
        let r = &records("a,,\"\",xyz\n")[0];
        let fields: Vec<_> = r.fields().collect();
        assert_eq!(fields, vec![Some("a"), None, Some(""), Some("xyz")]);
        assert_eq!((r.len(), r.field(3), r.field(4)), (4, Some("xyz"), None));
        assert_eq!(r.to_json(), serde_json::json!(["a", null, "", "xyz"]));
    }

    #[test]
    fn empty_unquoted_is_null_and_quoted_empty_is_empty_string() {
        assert_eq!(
            records("a,,\"\",\"x\"\"\",\n"),
            [rec(1, &[Some("a"), None, Some(""), Some("x\""), None])]
        );
        assert_eq!(records(",\"\""), [rec(1, &[None, Some("")])]);
        assert_eq!(records("\"\"\"\""), [rec(1, &[Some("\"")])]);
    }

    #[test]
    fn multi_line_quoted_fields_and_blank_lines_keep_physical_line_numbers() {
        let text = "h1,h2\r\n\"line\none\",\"\"\n\n\nx,\"a\r\nb\"\n\"\",\nlast,";
        assert_eq!(
            records(text),
            [
                rec(1, &[Some("h1"), Some("h2")]),
                rec(2, &[Some("line\none"), Some("")]),
                rec(6, &[Some("x"), Some("a\r\nb")]),
                rec(8, &[Some(""), None]),
                rec(9, &[Some("last"), None]),
            ]
        );
    }

    #[test]
    fn text_after_a_closing_quote_joins_the_field() {
        assert_eq!(records("\"a\"b,c"), [rec(1, &[Some("ab"), Some("c")])]);
        assert_eq!(records("a\"b,\"\"c"), [rec(1, &[Some("a\"b"), Some("c")])]);
    }

    #[test]
    fn unterminated_quote_is_a_format_error_at_its_line() {
        for text in ["h\nx,\"abc\n1,2", "h\nx,\""] {
            let err = CsvRecords::new(Path::new("t.csv"), text)
                .collect::<Result<Vec<_>>>()
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Format);
            assert!(
                err.to_string()
                    .starts_with("t.csv:2: malformed CSV: a quoted field"),
                "{err}"
            );
        }
    }

    /// The scan must agree with the csv crate on every input, or reads fail with an internal
    /// error; exhaustively check all short strings over the bytes that matter.
    #[test]
    fn scan_agrees_with_csv_crate_on_all_short_inputs() {
        let alphabet = [b'a', b',', b'"', b'\r', b'\n'];
        let mut buf = Vec::new();
        for len in 0..=6u32 {
            for mut code in 0..alphabet.len().pow(len) {
                buf.clear();
                for _ in 0..len {
                    buf.push(alphabet[code % alphabet.len()]);
                    code /= alphabet.len();
                }
                let text = std::str::from_utf8(&buf).unwrap();
                let all: Result<Vec<_>> = CsvRecords::new(Path::new("t"), text).collect();
                // An unclosed quote is the input's fault (Format); a disagreement would be ours.
                if let Err(e) = &all {
                    assert_eq!(e.kind(), ErrorKind::Format, "{text:?}: {e}");
                }
            }
        }
    }
}
