//! Splitting CSV text into records whose fields know NULL from the empty string.
//!
//! The dialect is RFC 4180 as the `csv` crate reads it by default: `,` delimits, `"` quotes (a
//! doubled `"` inside a quoted field is one literal quote, text after a closing quote joins the
//! field, a `"` inside an unquoted field is literal), `\n`, `\r\n` or `\r` end a record, blank
//! lines are skipped and records may have any number of fields. Our NULL rule needs what that
//! crate does not report: whether a field was quoted (an empty unquoted field is NULL, `""` the
//! empty string). So the scan is our own, one pass that finds field ends with `memchr`; reading
//! through the crate, re-scanning each record's bytes for its quotes and copying its fields out
//! cost three passes and two allocations per record, most of reading a file. The `csv` crate
//! stays the reference: a test checks that both split every short input over the bytes that
//! matter into the same records and fields.
//!
//! A field is where it lies in the text ([`Record`] holds its span): only a quoted field whose
//! text differs from the bytes between its quotes (a doubled quote, text after the closing
//! quote) is copied, unescaped, into a buffer the reader reuses. Copying every field's text
//! into the record, as the scan first did, was a call to `memcpy` per field: splitting a
//! record of the generated workload (seven fields, one quoted) took 1,142 instructions, 732
//! without the copies, and reading it as a packed row 2,762, 2,387 (`valgrind
//! --tool=callgrind` over `scdflow run` of 200,000 SCD1 events in 20 files, all threads).
//!
//! Line numbers are 1-based physical lines (counted by `\n`) of a record's first byte, so a
//! record with a multi-line quoted field is reported at the line where it starts. The text may
//! be the end of a file (starting at a known line), and with [`Ending::Growing`] its last record
//! may still be being written: a record whose quoted field is open at the end of the text is then
//! not read, and [`CsvRecords::consumed`] says where the records read so far end.

use super::tail::Ending;
use crate::{Error, ErrorKind, Result};
use memchr::{memchr, memchr3};
use std::path::Path;

/// Where a field's text lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// In the text read (an owned record: in its own text).
    Text,
    /// In the reader's buffer of unescaped fields.
    Unescaped,
    /// Nowhere: the field is NULL (empty and unquoted).
    Null,
}

/// A field: its place and its byte range there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    place: Place,
    start: usize,
    end: usize,
}

/// One CSV record as the reader found it: its starting line and its fields, `None` for NULL,
/// valid until the reader reads the next one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Record<'r> {
    /// 1-based physical line of the record's first byte.
    pub line: u64,
    text: &'r str,
    unescaped: &'r str,
    spans: &'r [Span],
}

impl<'r> Record<'r> {
    /// The number of fields.
    pub(crate) fn len(self) -> usize {
        self.spans.len()
    }

    /// Field `i`'s text; `None` for NULL or past the last field.
    pub(crate) fn field(self, i: usize) -> Option<&'r str> {
        let span = self.spans.get(i)?;
        match span.place {
            Place::Text => Some(&self.text[span.start..span.end]),
            Place::Unescaped => Some(&self.unescaped[span.start..span.end]),
            Place::Null => None,
        }
    }

    /// The fields in order, `None` for NULL.
    pub(crate) fn fields(self) -> impl Iterator<Item = Option<&'r str>> {
        (0..self.len()).map(move |i| self.field(i))
    }

    /// The raw record as a JSON array of strings (`null` for NULL), for quarantine output.
    pub(crate) fn to_json(self) -> serde_json::Value {
        self.fields()
            .map(|f| f.map_or(serde_json::Value::Null, |f| f.into()))
            .collect()
    }

    /// An owned copy, its fields' text one after another.
    pub(crate) fn owned(self) -> CsvRecord {
        let mut owned = CsvRecord {
            line: self.line,
            ..CsvRecord::default()
        };
        for field in self.fields() {
            owned.push(field);
        }
        owned
    }
}

/// An owned CSV record (a header kept across reads, a sample), made by [`Record::owned`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CsvRecord {
    /// 1-based physical line of the record's first byte.
    pub line: u64,
    /// The fields' text, one after another.
    text: String,
    spans: Vec<Span>,
}

impl CsvRecord {
    /// The record, read as the reader's records are.
    pub(crate) fn view(&self) -> Record<'_> {
        Record {
            line: self.line,
            text: &self.text,
            unescaped: "",
            spans: &self.spans,
        }
    }

    /// Appends a field (`None`: NULL).
    fn push(&mut self, field: Option<&str>) {
        let start = self.text.len();
        self.text.push_str(field.unwrap_or_default());
        let place = field.map_or(Place::Null, |_| Place::Text);
        let end = self.text.len();
        self.spans.push(Span { place, start, end });
    }
}

/// What scanning from a record boundary found.
enum Scan {
    /// A record, now in the scanner's spans, whose span (with its line ending) ends at `end`.
    Record { end: usize, newlines: u64 },
    /// Only blank lines (or nothing) up to the end of the text.
    End { newlines: u64 },
    /// A record whose quoted field is still open at the end of the text; `blank` bytes of
    /// blank lines (with `newlines` line ends) come before it.
    Open { blank: usize, newlines: u64 },
}

/// Reader of the records of CSV text; errors name `path` and the line.
pub(crate) struct CsvRecords<'a> {
    path: &'a Path,
    text: &'a str,
    /// The last record's line and fields, the buffers reused for the next.
    line_of_record: u64,
    spans: Vec<Span>,
    unescaped: String,
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
        CsvRecords {
            path,
            text,
            line_of_record: 0,
            spans: Vec::new(),
            unescaped: String::new(),
            offset: 0,
            line: first_line,
            ending,
            done: false,
        }
    }

    /// At most how many records are left: one per line end, and one for a last line without
    /// one (a quoted field with line breaks, or a blank line, makes it an overestimate).
    pub(crate) fn most_left(&self) -> usize {
        let rest = &self.text.as_bytes()[self.offset..];
        memchr::memchr_iter(b'\n', rest).count() + usize::from(!rest.ends_with(b"\n"))
    }

    /// The byte offset in the text just past the records read so far (and past blank lines after
    /// them once the text is exhausted), and the line of that byte.
    pub(crate) fn consumed(&self) -> (usize, u64) {
        (self.offset, self.line)
    }

    /// The next record, valid until the next call; `None` after the last record or an error.
    pub(crate) fn next_record(&mut self) -> Option<Result<Record<'_>>> {
        if self.done {
            return None;
        }
        match self.scan() {
            Scan::Record { end, newlines } => {
                self.offset = end;
                self.line += newlines;
                Some(Ok(Record {
                    line: self.line_of_record,
                    text: self.text,
                    unescaped: &self.unescaped,
                    spans: &self.spans,
                }))
            }
            Scan::End { newlines } => {
                self.done = true;
                self.offset = self.text.len();
                self.line += newlines;
                None
            }
            Scan::Open { blank, newlines } => {
                self.done = true;
                let line = self.line + newlines;
                if self.ending == Ending::Growing {
                    // The record may still be being written: leave it (but not the blank lines
                    // before it) for a later read.
                    self.offset += blank;
                    self.line = line;
                    return None;
                }
                Some(Err(Error::new(
                    ErrorKind::Format,
                    "malformed CSV: a quoted field opened here is not closed before the end of the file",
                )
                .at_line(line)
                .in_file(self.path)))
            }
        }
    }

    /// Scans the record at `offset` into the spans; see [`Scan`].
    fn scan(&mut self) -> Scan {
        let (text, bytes) = (self.text, self.text.as_bytes());
        let mut at = self.offset;
        let mut newlines = 0;
        while let Some(&b @ (b'\r' | b'\n')) = bytes.get(at) {
            newlines += u64::from(b == b'\n');
            at += 1;
        }
        if at == bytes.len() {
            return Scan::End { newlines };
        }
        let skipped = newlines;
        // Blank bytes up to and including the last `\n` before the record.
        let blank = bytes[self.offset..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let open = Scan::Open {
            blank,
            newlines: skipped,
        };
        self.line_of_record = self.line + newlines;
        self.spans.clear();
        self.unescaped.clear();
        loop {
            let (span, stop) = if bytes.get(at) == Some(&b'"') {
                let first = at + 1;
                let Some(close) = memchr(b'"', &bytes[first..]) else {
                    return open;
                };
                newlines += count_newlines(&bytes[first..first + close]);
                at = first + close + 1;
                if matches!(bytes.get(at), None | Some(b',' | b'\r' | b'\n')) {
                    // The field is the text between its quotes, as nearly every quoted field.
                    let end = first + close;
                    let span = Span {
                        place: Place::Text,
                        start: first,
                        end,
                    };
                    (span, at)
                } else {
                    let start = self.unescaped.len();
                    self.unescaped.push_str(&text[first..first + close]);
                    // A doubled quote is one literal quote, and the field goes on quoted.
                    while bytes.get(at) == Some(&b'"') {
                        self.unescaped.push('"');
                        at += 1;
                        let Some(close) = memchr(b'"', &bytes[at..]) else {
                            return open;
                        };
                        newlines += count_newlines(&bytes[at..at + close]);
                        self.unescaped.push_str(&text[at..at + close]);
                        at += close + 1;
                    }
                    // Text after the closing quote, up to a delimiter, joins the field.
                    let stop = field_end(bytes, at);
                    self.unescaped.push_str(&text[at..stop]);
                    let end = self.unescaped.len();
                    let span = Span {
                        place: Place::Unescaped,
                        start,
                        end,
                    };
                    (span, stop)
                }
            } else {
                let stop = field_end(bytes, at);
                let place = if stop == at { Place::Null } else { Place::Text };
                let span = Span {
                    place,
                    start: at,
                    end: stop,
                };
                (span, stop)
            };
            self.spans.push(span);
            at = stop + 1;
            match bytes.get(stop) {
                // A delimiter opens another field, even at the end of the text.
                Some(b',') => continue,
                Some(b'\r') if bytes.get(at) == Some(&b'\n') => {
                    return Scan::Record {
                        end: at + 1,
                        newlines: newlines + 1,
                    }
                }
                Some(&b) => {
                    return Scan::Record {
                        end: at,
                        newlines: newlines + u64::from(b == b'\n'),
                    }
                }
                None => {
                    return Scan::Record {
                        end: stop,
                        newlines,
                    }
                }
            }
        }
    }
}

/// How many `\n` a quoted field's bytes hold.
fn count_newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

/// The first `,`, `\r` or `\n` at or after `from` (or the end): a plain loop over the first
/// bytes, since most fields are short and `memchr3` costs more to start than such a scan, and
/// `memchr3` past them.
fn field_end(bytes: &[u8], from: usize) -> usize {
    const SHORT: usize = 16;
    let is_end = |b: &u8| matches!(b, b',' | b'\r' | b'\n');
    let head = &bytes[from..bytes.len().min(from + SHORT)];
    if let Some(i) = head.iter().position(is_end) {
        return from + i;
    }
    let rest = from + head.len();
    memchr3(b',', b'\r', b'\n', &bytes[rest..]).map_or(bytes.len(), |i| rest + i)
}

impl Iterator for CsvRecords<'_> {
    type Item = Result<CsvRecord>;

    /// The next record, as an owned copy (for the few records read apart: headers, samples).
    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().map(|r| r.map(Record::owned))
    }
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
        let mut record = CsvRecord {
            line,
            ..CsvRecord::default()
        };
        for &field in fields {
            record.push(field);
        }
        record
    }

    /// Fields come back as they were parsed, NULL apart from the empty string, whether read
    /// where they lie, unescaped or from an owned copy.
    #[test]
    fn fields_read_back_as_they_were_parsed() {
        let owned = &records("a,,\"\",xyz\n")[0];
        let r = owned.view();
        let fields: Vec<_> = r.fields().collect();
        assert_eq!(fields, vec![Some("a"), None, Some(""), Some("xyz")]);
        assert_eq!((r.len(), r.field(3), r.field(4)), (4, Some("xyz"), None));
        assert_eq!(r.to_json(), serde_json::json!(["a", null, "", "xyz"]));
    }

    /// A record read in place mixes fields lying in the text with unescaped ones; each reads
    /// back as its own text, and the next record reuses the buffers.
    #[test]
    fn fields_in_place_and_unescaped_read_back_alike() {
        let text = "a,\"b\"\"c\",\"d\"e,,\"f\"\n\"x\"\"\",y\n";
        let mut records = CsvRecords::new(Path::new("t"), text);
        let first = records.next_record().unwrap().unwrap();
        let fields: Vec<_> = first.fields().collect();
        assert_eq!(
            fields,
            [Some("a"), Some("b\"c"), Some("de"), None, Some("f")]
        );
        let second = records.next_record().unwrap().unwrap();
        assert_eq!(
            (second.line, second.field(0), second.field(1)),
            (2, Some("x\""), Some("y"))
        );
        assert!(records.next_record().is_none());
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

    /// The scan splits text exactly as the `csv` crate does: checked on every string of up to
    /// seven bytes over the bytes that matter, record by record and field by field.
    #[test]
    fn scan_agrees_with_csv_crate_on_all_short_inputs() {
        let alphabet = [b'a', b',', b'"', b'\r', b'\n'];
        let mut buf = Vec::new();
        for len in 0..=7u32 {
            for mut code in 0..alphabet.len().pow(len) {
                buf.clear();
                for _ in 0..len {
                    buf.push(alphabet[code % alphabet.len()]);
                    code /= alphabet.len();
                }
                let text = std::str::from_utf8(&buf).unwrap();
                let ours: Result<Vec<_>> = CsvRecords::new(Path::new("t"), text).collect();
                let mut reader = csv::ReaderBuilder::new()
                    .has_headers(false)
                    .flexible(true)
                    .from_reader(text.as_bytes());
                let theirs: Vec<Vec<String>> = reader
                    .records()
                    .map(|r| r.unwrap().iter().map(str::to_string).collect())
                    .collect();
                match ours {
                    Ok(ours) => {
                        let ours: Vec<Vec<String>> = ours
                            .iter()
                            .map(|r| {
                                r.view()
                                    .fields()
                                    .map(|f| f.unwrap_or("").to_string())
                                    .collect()
                            })
                            .collect();
                        assert_eq!(ours, theirs, "{text:?}");
                    }
                    // The crate swallows an unclosed quote into one field; we refuse it.
                    Err(e) => {
                        assert_eq!(e.kind(), ErrorKind::Format, "{text:?}: {e}");
                        assert!(e.to_string().contains("not closed"), "{text:?}: {e}");
                    }
                }
            }
        }
    }

    /// Growing text: a record with a quote still open is left, blank lines before it are not.
    #[test]
    fn an_open_quote_in_growing_text_is_left_for_a_later_read() {
        let text = "a,b\n\n\"x\ny";
        let mut records = CsvRecords::starting_at(Path::new("t"), text, 1, Ending::Growing);
        assert_eq!(
            records.next().unwrap().unwrap(),
            rec(1, &[Some("a"), Some("b")])
        );
        assert!(records.next().is_none());
        assert_eq!(records.consumed(), (5, 3));
    }

    /// Every line ending counts one line, `\r\n` included, and ends where consumption ends.
    #[test]
    fn line_endings_are_consumed_whole() {
        let text = "a\r\nb\rc\n\r\nd";
        let mut records = CsvRecords::new(Path::new("t"), text);
        let mut seen = Vec::new();
        while let Some(r) = records.next_record() {
            let r = r.unwrap();
            let (line, field) = (r.line, r.field(0).unwrap().to_string());
            seen.push((line, field, records.consumed().0));
        }
        assert_eq!(
            seen,
            [
                (1, "a".into(), 3),
                (2, "b".into(), 5),
                (2, "c".into(), 7),
                (4, "d".into(), 10)
            ]
        );
        assert_eq!(records.consumed(), (10, 4));
    }
}
