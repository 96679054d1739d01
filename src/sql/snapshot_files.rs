//! `FROM SNAPSHOT read_files('dir', ..., version => 'regex')`: a directory of full snapshots,
//! one per file, whose names carry the version (D12).
//!
//! Invariants: the pattern compiles, is matched against the whole file name (it is anchored
//! here, the user's text is kept as written) and has at least one capture group, whose text
//! is the version. Without `schema =>`, the schema is inferred from the matching file with the
//! lowest version, so files the pattern ignores never shape the target.

use super::cursor::invalid;
use super::paths::Paths;
use super::schema::parse_schema_text;
use super::sources::file_format;
use super::syntax::ReadFiles;
use crate::plan::SnapshotSource;
use crate::value::Schema;
use crate::Result;
use regex::Regex;

const EXAMPLE: &str = "e.g. version => 'snapshot_([0-9]+)[.]csv'";

/// The snapshot source and its files' schema; its path resolves by `paths`.
pub(crate) fn snapshot_files(spec: &ReadFiles, paths: Paths) -> Result<(SnapshotSource, Schema)> {
    let Some(pattern) = &spec.version else {
        let message = format!(
            "FROM SNAPSHOT read_files: version => 'pattern' is required: a regular expression over the file names whose first capture group is the version, {EXAMPLE}"
        );
        return Err(invalid(spec.line, message));
    };
    let regex = version_regex(pattern, spec.line)?;
    let path = paths.of(spec)?;
    let format = file_format(spec, &path)?;
    let header = spec.header.unwrap_or(true);
    // A pattern that matches none of the files there is a mistake in the pipeline: said at its
    // line. (No files yet is fine when the schema is given.)
    let files = match path.exists() {
        true => crate::io::versioned_files(&path, &regex).map_err(|e| match e.kind() {
            crate::ErrorKind::Validation => invalid(
                spec.line,
                format!("FROM SNAPSHOT read_files: `{}`: {}", spec.path, e.message()),
            ),
            _ => e,
        })?,
        false => Vec::new(),
    };
    let file_schema = match &spec.schema {
        Some(text) => parse_schema_text(text, spec.line)?,
        None => {
            let Some((_, first)) = files.into_iter().next() else {
                let message = format!(
                    "FROM SNAPSHOT read_files: no file in `{}` matches version => '{pattern}', so there is no file to infer the schema from; add schema => '...' or a matching file",
                    spec.path
                );
                return Err(invalid(spec.line, message));
            };
            super::sources::infer_schema(&first, format, header)?
        }
    };
    let source = SnapshotSource::Files {
        path,
        version: regex,
        version_pattern: pattern.clone(),
        format,
        header,
        file_schema: file_schema.clone(),
    };
    Ok((source, file_schema))
}

/// `^(?:pattern)$`, which must compile and capture the version.
fn version_regex(pattern: &str, line: u64) -> Result<Regex> {
    let regex = crate::io::version_regex(pattern).map_err(|e| {
        let message = format!(
            "read_files version: `{pattern}` is not a valid regular expression: {}",
            crate::expr::regex_reason(&e.to_string())
        );
        invalid(line, message)
    })?;
    // Group 0 is the whole match.
    if regex.captures_len() < 2 {
        let message = format!(
            "read_files version: `{pattern}` has no capture group; put the version number in one, {EXAMPLE}"
        );
        return Err(invalid(line, message));
    }
    Ok(regex)
}
