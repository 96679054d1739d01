//! Versioned snapshot files (`read_files(..., version => 'pattern')`, D12): the first capture
//! group of the pattern, which must match the whole file name, is the version (BIGINT).

use super::list_files;
use crate::{Error, ErrorKind, Result};
use regex::Regex;
use std::path::{Path, PathBuf};

/// `pattern` anchored to match whole file names.
pub fn version_regex(pattern: &str) -> std::result::Result<Regex, regex::Error> {
    Regex::new(&format!("^(?:{pattern})$"))
}

/// The files under `path` whose names `regex` (see [`version_regex`]) matches, with their
/// versions, in increasing version order (then name). Files that do not match are ignored, but
/// files of which none matches are an error: a mistyped pattern would otherwise read as an
/// empty snapshot history. (No files at all is no snapshot yet.)
pub fn versioned_files(path: &Path, regex: &Regex) -> Result<Vec<(i64, PathBuf)>> {
    let mut files = Vec::new();
    let listed = list_files(path)?;
    for file in &listed {
        let Some(name) = file.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(group) = regex.captures(name).and_then(|c| c.get(1)) else {
            continue;
        };
        let version = group.as_str().parse::<i64>().map_err(|_| {
            Error::new(
                ErrorKind::InvalidRow,
                format!(
                    "the version `{}` in the file name is not a BIGINT",
                    group.as_str()
                ),
            )
            .in_file(file)
        })?;
        files.push((version, file.clone()));
    }
    if let (true, Some(example)) = (files.is_empty(), listed.first()) {
        let pattern = regex.as_str();
        let pattern = pattern
            .strip_prefix("^(?:")
            .and_then(|p| p.strip_suffix(")$"))
            .unwrap_or(pattern);
        let name = example.file_name().unwrap_or_default().to_string_lossy();
        return Err(Error::new(
            ErrorKind::Validation,
            format!(
                "none of its {} file(s) (such as `{name}`) matches the version pattern \
                 `{pattern}`, which must match whole file names with the version as its first \
                 group",
                listed.len()
            ),
        )
        .in_file(path));
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_come_from_the_first_group_in_numeric_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "snapshot_10.csv",
            "snapshot_2.csv",
            "notes.txt",
            "snapshot_x.csv",
        ] {
            std::fs::write(dir.path().join(name), "a\n").unwrap();
        }
        let regex = version_regex("snapshot_([0-9]+)[.]csv").unwrap();
        let files = versioned_files(dir.path(), &regex).unwrap();
        let versions: Vec<i64> = files.iter().map(|(v, _)| *v).collect();
        assert_eq!(versions, vec![2, 10]);
    }

    /// Issue 13, item 15: a pattern that matches none of the files is a mistake, not history.
    #[test]
    fn a_pattern_that_matches_no_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let regex = version_regex("snapshot_([0-9]+)[.]csv").unwrap();
        assert!(versioned_files(dir.path(), &regex).unwrap().is_empty());
        std::fs::write(dir.path().join("snap_1.csv"), "a\n").unwrap();
        let e = versioned_files(dir.path(), &regex).unwrap_err();
        assert!(
            e.to_string().contains(
                "none of its 1 file(s) (such as `snap_1.csv`) matches the version pattern \
                 `snapshot_([0-9]+)[.]csv`"
            ),
            "{e}"
        );
    }
}
