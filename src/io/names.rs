//! Whether a user-given name is safe as one file name component.
//!
//! Names from SQL (tables, flows, catalogs, schemas) become file and directory names. A name is
//! safe when it is not empty, has at most [`MAX_NAME_BYTES`] bytes (the file system's 255 less
//! the longest suffix scdflow adds), holds no path separator, NUL or other control character,
//! and does not start with `.` (`.` and `..` are directories; dot files are hidden, and scdflow
//! stages its outputs under such names). Nothing else is refused: a backquoted name may hold
//! spaces or any other character a file name can.

/// The longest name, in bytes: a file name holds 255, and the longest suffix scdflow adds
/// (`.changes.part-<process>.jsonl`) needs well under 55.
pub const MAX_NAME_BYTES: usize = 200;

/// Why `text` is not safe as one file name component, or `None` when it is.
pub fn component_problem(text: &str) -> Option<String> {
    if text.is_empty() {
        Some("is empty".to_string())
    } else if text.len() > MAX_NAME_BYTES {
        Some(format!(
            "is {} bytes long; names become file names and may have at most {MAX_NAME_BYTES}",
            text.len()
        ))
    } else if text.contains(['/', '\\']) {
        Some("contains a path separator (`/` or `\\`); names become file names".to_string())
    } else if let Some(c) = text.chars().find(|c| c.is_control()) {
        Some(format!(
            "contains the control character U+{:04X}; names become file names",
            c as u32
        ))
    } else if text.starts_with('.') {
        Some("starts with `.`; names become file names, and those are hidden or special".into())
    } else {
        None
    }
}

/// `text` as an error message shows it: escaped, at most 40 characters.
pub fn shown(text: &str) -> String {
    let short: String = text.chars().take(40).flat_map(char::escape_debug).collect();
    let more = if text.chars().count() > 40 { "..." } else { "" };
    format!("{short}{more}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_would_escape_or_hide_are_refused() {
        for bad in ["", ".", "..", ".hidden", "a/b", "a\\b", "a\0b", "a\nb"] {
            assert!(component_problem(bad).is_some(), "{bad:?}");
        }
        assert!(component_problem(&"x".repeat(MAX_NAME_BYTES + 1)).is_some());
        for good in ["users", "users_cdf", "a b", "Ünïcode", "x.changes", "a..b"] {
            assert_eq!(component_problem(good), None, "{good:?}");
        }
    }
}
