//! The library's one error type: a kind, a message and where in the user's input it happened.
//!
//! `Display` renders one line, `file:line: message` (or `file: message` without a line), which
//! is the CLI's error contract.

use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong, coarsely; stable enough to match on in tests and tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The pipeline's SQL does not parse.
    Syntax,
    /// The SQL parses but is not a valid pipeline (unknown column, bad clause combination, ...).
    Validation,
    /// An input row does not fit its schema or the flow's rules (NULL key or sequence, ...).
    InvalidRow,
    /// A file could not be read or written.
    Io,
    /// A CSV or JSON file is malformed beyond a single value (bad quoting, not JSON, ...).
    Format,
    /// Another process of the cluster failed; its own error says why.
    Peer,
    /// A persisted state (`--state DIR`) is damaged, or was written for a different pipeline.
    State,
    /// A broken internal invariant; a bug in scdflow.
    Internal,
}

impl ErrorKind {
    /// A stable code for the kind.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "syntax",
            ErrorKind::Validation => "validation",
            ErrorKind::InvalidRow => "invalid_row",
            ErrorKind::Io => "io",
            ErrorKind::Format => "format",
            ErrorKind::Peer => "peer",
            ErrorKind::State => "state",
            ErrorKind::Internal => "internal",
        }
    }
}

/// Where in the user's input an error was found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    /// The file (pipeline or data).
    pub file: Option<PathBuf>,
    /// 1-based line (of the SQL file, or of the data file for rows).
    pub line: Option<u64>,
}

/// An scdflow error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    location: Location,
    message: String,
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error without a location.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            location: Location::default(),
            message: tame(message.into()),
        }
    }

    /// Sets the file, unless one is already set (the innermost location wins).
    pub fn in_file(mut self, file: &Path) -> Self {
        if self.location.file.is_none() {
            self.location.file = Some(file.to_path_buf());
        }
        self
    }

    /// Sets the line, unless one is already set.
    pub fn at_line(mut self, line: u64) -> Self {
        if self.location.line.is_none() {
            self.location.line = Some(line);
        }
        self
    }

    /// The same error said of `what` (`"{what}: {message}"`), its kind and location kept.
    pub fn prefixed(mut self, what: &str) -> Self {
        self.message = tame(format!("{what}: {}", self.message));
        self
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The location.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The message without the location.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// A failure to read `path`.
    pub fn read(path: &Path, err: &std::io::Error) -> Self {
        Error::new(ErrorKind::Io, format!("cannot read: {err}")).in_file(path)
    }

    /// A failure to write `path`.
    pub fn write(path: &Path, err: &std::io::Error) -> Self {
        Error::new(ErrorKind::Io, format!("cannot write: {err}")).in_file(path)
    }
}

/// Words of a message longer than this many characters are cut in the middle.
const LONGEST_WORD: usize = 200;

/// `message` safe to print as one terminal line: messages quote user input (names, values,
/// SQL), so control characters (escape sequences, newlines) are escaped as `\u{..}`, and a
/// word (a run without whitespace) longer than [`LONGEST_WORD`] characters keeps its ends
/// around `...(N characters)...`, so a 100 KB identifier does not flood the terminal.
fn tame(message: String) -> String {
    let long = message
        .split(char::is_whitespace)
        .any(|w| w.chars().count() > LONGEST_WORD);
    if !long && !message.contains(char::is_control) {
        return message;
    }
    let mut out = String::with_capacity(message.len().min(4 * LONGEST_WORD));
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let n = word.chars().count();
        if n > LONGEST_WORD {
            let head: String = word.chars().take(LONGEST_WORD / 2).collect();
            let tail: String = word.chars().skip(n - LONGEST_WORD / 4).collect();
            out.push_str(&format!("{head}...({n} characters)...{tail}"));
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in message.chars() {
        if c.is_whitespace() && !c.is_control() {
            flush(&mut word, &mut out);
            out.push(c);
        } else if c.is_control() {
            word.push_str(&format!("\\u{{{:04x}}}", c as u32));
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A file's name comes from user input too (a path in the pipeline's SQL).
        let file = self
            .location
            .file
            .as_ref()
            .map(|p| tame(p.display().to_string()));
        match (file, self.location.line) {
            (Some(file), Some(line)) => write!(f, "{file}:{line}: {}", self.message),
            (Some(file), None) => write!(f, "{file}: {}", self.message),
            (None, Some(line)) => write!(f, "line {}: {}", line, self.message),
            (None, None) => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 13, item 14: user input quoted in a message cannot break the terminal line.
    #[test]
    fn messages_escape_control_characters_and_cut_huge_words() {
        let e = Error::new(ErrorKind::Syntax, "found `a\x1b[31mb\nc`");
        assert_eq!(e.message(), "found `a\\u{001b}[31mb\\u{000a}c`");
        let name = "x".repeat(100_000);
        let e = Error::new(
            ErrorKind::Validation,
            format!("unknown column `{name}` here"),
        );
        assert!(e.message().len() < 400, "{}", e.message());
        assert!(
            e.message().contains("...(100002 characters)..."),
            "{}",
            e.message()
        );
        assert!(e.message().starts_with("unknown column `xxx") && e.message().ends_with("x` here"));
        let plain = "KEYS: unknown column `usrId`";
        assert_eq!(Error::new(ErrorKind::Validation, plain).message(), plain);
        let e = Error::new(ErrorKind::Io, "cannot read").in_file(Path::new(
            "da
ta",
        ));
        assert_eq!(e.to_string(), "da\\u{000a}ta: cannot read");
    }

    #[test]
    fn renders_file_and_line() {
        let e = Error::new(
            ErrorKind::Validation,
            "KEYS: unknown column `usrId` (did you mean `userId`?)",
        )
        .at_line(3)
        .in_file(Path::new("p.sql"));
        assert_eq!(
            e.to_string(),
            "p.sql:3: KEYS: unknown column `usrId` (did you mean `userId`?)"
        );
        assert_eq!(e.kind().code(), "validation");
    }
}
