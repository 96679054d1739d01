//! SQL type names as text (`INT`, `ARRAY<STRING>`, `STRUCT<a: INT, b STRING>`) to [`DataType`].
//!
//! Works on text rather than parser tokens so that every place a type is written (`read_files`
//! schema strings, column lists, CAST targets) shares one grammar and one list of synonyms.

use crate::value::DataType;

const SUPPORTED: &str =
    "INT, BIGINT, DOUBLE, BOOLEAN, STRING, DATE, TIMESTAMP, ARRAY<type>, STRUCT<name: type, ...>";

/// Parses one type name; the whole text must be the type.
pub fn parse_type(text: &str) -> Result<DataType, String> {
    let mut p = TypeParser {
        text,
        pos: 0,
        depth: 0,
    };
    let ty = p.ty()?;
    p.skip_blanks();
    match p.rest() {
        "" => Ok(ty),
        rest => Err(format!("unexpected `{rest}` after type {ty}")),
    }
}

/// Deeper nesting than any real schema; the limit keeps hostile input from exhausting the stack.
const MAX_DEPTH: usize = 32;

struct TypeParser<'a> {
    text: &'a str,
    pos: usize,
    /// Current ARRAY/STRUCT nesting.
    depth: usize,
}

impl<'a> TypeParser<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn skip_blanks(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_blanks();
        let hit = self.rest().starts_with(c);
        self.pos += if hit { c.len_utf8() } else { 0 };
        hit
    }

    fn expect(&mut self, c: char, after: &str) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected `{c}` after {after}"))
        }
    }

    /// A bare word (letters, digits, `_`) or a backquoted name.
    fn word(&mut self) -> Result<String, String> {
        self.skip_blanks();
        if self.eat('`') {
            let rest = self.rest();
            let end = rest.find('`').ok_or("unterminated `quoted` name")?;
            self.pos += end + 1;
            return Ok(rest[..end].to_string());
        }
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            return Err(match rest.chars().next() {
                Some(c) => format!("expected a type name, found `{c}`"),
                None => "expected a type name".to_string(),
            });
        }
        self.pos += len;
        Ok(rest[..len].to_string())
    }

    fn ty(&mut self) -> Result<DataType, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("type nested more than {MAX_DEPTH} levels deep"));
        }
        let name = self.word()?;
        let ty = match name.to_ascii_uppercase().as_str() {
            "INT" | "INTEGER" | "SMALLINT" | "TINYINT" | "SHORT" | "BYTE" => DataType::Int,
            "BIGINT" | "LONG" => DataType::BigInt,
            "DOUBLE" | "FLOAT" | "REAL" => DataType::Double,
            "BOOLEAN" | "BOOL" => DataType::Boolean,
            "STRING" | "VARCHAR" | "CHAR" | "TEXT" => {
                self.length()?;
                DataType::String
            }
            "DATE" => DataType::Date,
            "TIMESTAMP" | "TIMESTAMP_LTZ" => DataType::Timestamp,
            "ARRAY" => {
                self.expect('<', "ARRAY")?;
                let element = self.ty()?;
                self.expect('>', "the ARRAY element type")?;
                DataType::Array(Box::new(element))
            }
            "STRUCT" => self.struct_fields()?,
            _ => return Err(format!("unknown type `{name}` (supported: {SUPPORTED})")),
        };
        self.depth -= 1;
        Ok(ty)
    }

    /// The optional `(n)` of `VARCHAR(n)`; lengths are not enforced.
    fn length(&mut self) -> Result<(), String> {
        if self.eat('(') {
            self.skip_blanks();
            let rest = self.rest();
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            self.pos += digits;
            self.expect(')', "the string length")?;
        }
        Ok(())
    }

    fn struct_fields(&mut self) -> Result<DataType, String> {
        self.expect('<', "STRUCT")?;
        let mut fields: Vec<(String, DataType)> = Vec::new();
        loop {
            let name = self.word()?;
            if fields.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
                return Err(format!("duplicate STRUCT field `{name}`"));
            }
            self.eat(':');
            fields.push((name, self.ty()?));
            if !self.eat(',') {
                break;
            }
        }
        self.expect('>', "the STRUCT fields")?;
        Ok(DataType::Struct(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_synonyms_and_nesting() {
        assert_eq!(parse_type("int"), Ok(DataType::Int));
        assert_eq!(parse_type(" LONG "), Ok(DataType::BigInt));
        assert_eq!(parse_type("VARCHAR(10)"), Ok(DataType::String));
        assert_eq!(
            parse_type("ARRAY < STRING >"),
            Ok(DataType::Array(Box::new(DataType::String)))
        );
        assert_eq!(
            parse_type("STRUCT<a: INT, `b c` ARRAY<DATE>>"),
            Ok(DataType::Struct(vec![
                ("a".into(), DataType::Int),
                ("b c".into(), DataType::Array(Box::new(DataType::Date))),
            ]))
        );
    }

    #[test]
    fn rejects_unknown_and_trailing_text() {
        assert!(parse_type("DECIMAL(10,2)")
            .unwrap_err()
            .contains("unknown type `DECIMAL`"));
        assert!(parse_type("INT NOT NULL")
            .unwrap_err()
            .contains("unexpected `NOT NULL`"));
        assert!(parse_type("ARRAY<INT")
            .unwrap_err()
            .contains("expected `>`"));
        assert!(parse_type("").is_err());
        let deep = format!("{}INT{}", "ARRAY<".repeat(40), ">".repeat(40));
        assert!(parse_type(&deep)
            .unwrap_err()
            .contains("nested more than 32"));
    }
}
