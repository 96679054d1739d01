//! A warehouse: a directory of catalogs, schemas and tables, as `--warehouse DIR` gives it.
//!
//! Layout: `DIR/<catalog>/<schema>/<table>/` is a Delta table ([`crate::delta`]);
//! `DIR/<catalog>/<schema>/` exists once `CREATE SCHEMA` made it, and a table can only be
//! created in an existing schema (as in Unity Catalog); `/Volumes/<catalog>/<schema>/<volume>/...`
//! paths in `read_files` resolve to `DIR/<catalog>/<schema>/<volume>/...` (volumes and tables
//! share a schema's names, as in Unity Catalog).
//!
//! Names are case-insensitive: a directory holds the ASCII-lower-cased name, so `Users` and
//! `users` are one table. A name of one or two parts takes the missing catalog and schema from
//! the defaults (`--catalog`, `--schema`; `main` and `default` when not given), as a Lakeflow
//! pipeline's settings do.
//!
//! Invariant: a path is only ever built from names that are safe as one file name component
//! ([`crate::io::names`]), and a volume path only from such components, so no name from SQL can
//! reach outside `DIR`.

mod dml;
mod event_log;
mod list_files;
mod merge;
mod metadata_statements;
mod parse;
pub mod scope;
pub mod select;
pub mod snapshot_versions;
pub mod statements;
mod subqueries;
mod table_changes;
mod target_edits;
mod view_statements;
mod views;

use crate::io::names::{component_problem, shown};
use crate::{Error, ErrorKind, Result};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The catalog a one- or two-part name is in when `--catalog` is not given.
pub const DEFAULT_CATALOG: &str = "main";
/// The schema a one-part name is in when `--schema` is not given.
pub const DEFAULT_SCHEMA: &str = "default";

/// A warehouse directory and the defaults for short names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warehouse {
    root: PathBuf,
    catalog: String,
    schema: String,
    /// How long a statement on a pipeline's target waits for a run that is writing it.
    lock_wait: Duration,
}

/// [`Warehouse::lock_wait`] unless [`Warehouse::with_lock_wait`] says otherwise: longer than a
/// durable step usually takes, short enough that a stuck run is reported.
pub const LOCK_WAIT: Duration = Duration::from_secs(60);

/// A table's full name, each part lower-cased and checked safe as a file name component.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TableName {
    /// The catalog.
    pub catalog: String,
    /// The schema in the catalog.
    pub schema: String,
    /// The table in the schema.
    pub table: String,
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}.{}",
            quoted(&self.catalog),
            quoted(&self.schema),
            quoted(&self.table)
        )
    }
}

/// `name` as SQL would need it written: backquoted unless it is a plain identifier.
fn quoted(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| !c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("`{}`", name.replace('`', "``"))
    }
}

impl Warehouse {
    /// The warehouse at `root` with the given defaults for short names (`main` and `default`
    /// when `None`). The directory must exist; the defaults must be valid names.
    pub fn open(root: &Path, catalog: Option<&str>, schema: Option<&str>) -> Result<Warehouse> {
        let meta = std::fs::metadata(root).map_err(|e| Error::read(root, &e))?;
        if !meta.is_dir() {
            let message = format!("--warehouse {} is not a directory", root.display());
            return Err(Error::new(ErrorKind::Io, message));
        }
        Ok(Warehouse {
            root: root.to_path_buf(),
            catalog: part(catalog.unwrap_or(DEFAULT_CATALOG), "--catalog")?,
            schema: part(schema.unwrap_or(DEFAULT_SCHEMA), "--schema")?,
            lock_wait: LOCK_WAIT,
        })
    }

    /// The same warehouse whose statements on a pipeline's target wait `wait` for a run that
    /// is writing it (then fail, saying so).
    pub fn with_lock_wait(self, wait: Duration) -> Warehouse {
        Warehouse {
            lock_wait: wait,
            ..self
        }
    }

    /// How long a statement on a pipeline's target waits for a run that is writing it.
    pub fn lock_wait(&self) -> Duration {
        self.lock_wait
    }

    /// Fails unless the schema of `name` exists (a table or view is created only in a schema
    /// `CREATE SCHEMA` made, as in Unity Catalog).
    pub(crate) fn require_schema(&self, name: &TableName) -> Result<()> {
        if self.has_schema(&name.catalog, &name.schema) {
            return Ok(());
        }
        let message = format!(
            "schema {}.{} does not exist; create it with CREATE SCHEMA",
            name.catalog, name.schema
        );
        Err(Error::new(ErrorKind::Validation, message))
    }

    /// The same warehouse with other defaults for short names (a view's, as it was created);
    /// an error when they are not valid names.
    pub(crate) fn with_defaults(&self, catalog: &str, schema: &str) -> Result<Warehouse> {
        Ok(Warehouse {
            root: self.root.clone(),
            catalog: part(catalog, "catalog")?,
            schema: part(schema, "schema")?,
            lock_wait: self.lock_wait,
        })
    }

    /// The warehouse directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The catalog and schema that shorter names take.
    pub fn defaults(&self) -> (&str, &str) {
        (&self.catalog, &self.schema)
    }

    /// The full name of a table written with `parts` (one to three), defaults filling in.
    /// The error says what is wrong with the name, for the caller to locate.
    pub fn table_name(&self, parts: &[&str]) -> Result<TableName, String> {
        let (catalog, schema, table) = match parts {
            [t] => (self.catalog.clone(), self.schema.clone(), *t),
            [s, t] => (self.catalog.clone(), name_part(s, "schema")?, *t),
            [c, s, t] => (name_part(c, "catalog")?, name_part(s, "schema")?, *t),
            _ => {
                let message = format!(
                    "`{}` has {} parts; a table name has at most three \
                     (catalog.schema.table)",
                    shown(&parts.join(".")),
                    parts.len()
                );
                return Err(message);
            }
        };
        Ok(TableName {
            catalog,
            schema,
            table: name_part(table, "table")?,
        })
    }

    /// The full name of a schema written with `parts` (one or two).
    pub fn schema_name(&self, parts: &[&str]) -> Result<(String, String), String> {
        match parts {
            [s] => Ok((self.catalog.clone(), name_part(s, "schema")?)),
            [c, s] => Ok((name_part(c, "catalog")?, name_part(s, "schema")?)),
            _ => Err(format!(
                "`{}` has {} parts; a schema name has at most two (catalog.schema)",
                shown(&parts.join(".")),
                parts.len()
            )),
        }
    }

    /// The directory of a schema.
    pub fn schema_dir(&self, catalog: &str, schema: &str) -> PathBuf {
        self.root.join(catalog).join(schema)
    }

    /// The directory of a table.
    pub fn table_dir(&self, name: &TableName) -> PathBuf {
        self.schema_dir(&name.catalog, &name.schema)
            .join(&name.table)
    }

    /// Where `pipeline`'s tables are published, in [`crate::plan::Pipeline::published`]'s
    /// order (its targets, then its streaming tables): each in the default catalog and schema
    /// unless its name is qualified (`catalog.schema.table`, as the pipeline's declared names
    /// give it), in a schema that must exist (as Lakeflow requires of a pipeline's target
    /// schema). A published table may not be one the pipeline reads: a run would replace its
    /// own input.
    pub fn published_dirs(&self, pipeline: &crate::plan::Pipeline) -> Result<Vec<PathBuf>> {
        let mut dirs = Vec::new();
        for target in pipeline.published() {
            let parts: Vec<&str> = target.name.split('.').collect();
            let name = self
                .table_name(&parts)
                .map_err(|why| Error::new(ErrorKind::Validation, why))?;
            if !self.has_schema(&name.catalog, &name.schema) {
                let message = format!(
                    "the pipeline publishes `{}` in schema {}.{}, which does not exist in \
                     the warehouse {}; create it first (`scdflow sql --warehouse {} \"CREATE \
                     SCHEMA {}.{}\"`) or choose another with --catalog and --schema",
                    target.name,
                    name.catalog,
                    name.schema,
                    self.root.display(),
                    self.root.display(),
                    name.catalog,
                    name.schema
                );
                return Err(Error::new(ErrorKind::Validation, message));
            }
            let dir = self.table_dir(&name);
            let read = pipeline.tables.iter().find(
                |t| matches!(&t.input, crate::plan::SourceInput::Delta { dir: d, .. } if *d == dir),
            );
            if let Some(source) = read {
                let message = format!(
                    "`{}` would be published as {name}, which the pipeline reads as \
                     `{}`; a run would replace its own input",
                    target.name, source.name
                );
                return Err(Error::new(ErrorKind::Validation, message));
            }
            dirs.push(dir);
        }
        Ok(dirs)
    }

    /// Whether the schema of `name` exists.
    pub fn has_schema(&self, catalog: &str, schema: &str) -> bool {
        self.schema_dir(catalog, schema).is_dir()
    }

    /// Creates a schema (and its catalog); `Ok(false)` when it existed already.
    pub fn create_schema(&self, catalog: &str, schema: &str) -> Result<bool> {
        let dir = self.schema_dir(catalog, schema);
        if dir.is_dir() {
            return Ok(false);
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::write(&dir, &e))?;
        Ok(true)
    }

    /// Where `/Volumes/<catalog>/<schema>/<volume>/<rest>` is inside the warehouse; `None` when
    /// `path` is not under `/Volumes/`. Every component must be a safe name.
    pub fn volume_path(&self, path: &str) -> Option<Result<PathBuf, String>> {
        let rest = path.strip_prefix("/Volumes/")?;
        let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
        if parts.len() < 3 {
            let message = format!(
                "`{}`: a volume path is /Volumes/<catalog>/<schema>/<volume>/...",
                shown(path)
            );
            return Some(Err(message));
        }
        let mut dir = self.root.clone();
        for (i, p) in parts.iter().enumerate() {
            let what = ["catalog", "schema", "volume"]
                .get(i)
                .unwrap_or(&"path component");
            let component = if i < 3 {
                name_part(p, what)
            } else {
                checked(p, what).map(str::to_string)
            };
            match component {
                Ok(c) => dir.push(c),
                Err(e) => return Some(Err(e)),
            }
        }
        Some(Ok(dir))
    }
}

/// A name part as stored: checked, then lower-cased.
fn name_part(text: &str, what: &str) -> Result<String, String> {
    Ok(checked(text, what)?.to_ascii_lowercase())
}

fn checked<'a>(text: &'a str, what: &str) -> Result<&'a str, String> {
    match component_problem(text) {
        None => Ok(text),
        Some(why) => Err(format!("{what} name `{}` {why}", shown(text))),
    }
}

/// A default given on the command line (`flag`), checked like a name part.
fn part(text: &str, flag: &str) -> Result<String> {
    name_part(text, flag).map_err(|e| Error::new(ErrorKind::Validation, format!("{flag}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warehouse() -> (tempfile::TempDir, Warehouse) {
        let dir = tempfile::tempdir().unwrap();
        let w = Warehouse::open(dir.path(), None, Some("Tutorial")).unwrap();
        (dir, w)
    }

    #[test]
    fn short_names_take_the_defaults_and_every_part_is_lower_cased() {
        let (_d, w) = warehouse();
        let full = |parts: &[&str]| w.table_name(parts).unwrap().to_string();
        assert_eq!(full(&["Users"]), "main.tutorial.users");
        assert_eq!(full(&["s", "t"]), "main.s.t");
        assert_eq!(full(&["C", "S", "T"]), "c.s.t");
        assert_eq!(full(&["c", "s", "a b"]), "c.s.`a b`");
        let name = w
            .table_name(&["main", "cdc_tutorial", "users_cdf"])
            .unwrap();
        assert!(w.table_dir(&name).ends_with("main/cdc_tutorial/users_cdf"));
    }

    #[test]
    fn names_that_are_not_one_safe_component_are_refused() {
        let (_d, w) = warehouse();
        for parts in [
            &["..", "t"][..],
            &["a/b"],
            &["c", ".s", "t"],
            &["a", "b", "c", "d"],
        ] {
            let e = w.table_name(parts).unwrap_err();
            assert!(!e.is_empty(), "{parts:?}");
        }
        assert!(w
            .table_name(&["x", "..", "t"])
            .unwrap_err()
            .contains("schema name `..`"));
        let e = Warehouse::open(w.root(), Some("../up"), None).unwrap_err();
        assert!(e.message().contains("--catalog"), "{}", e.message());
    }

    #[test]
    fn volume_paths_resolve_inside_the_warehouse_or_are_refused() {
        let (_d, w) = warehouse();
        let inside = w
            .volume_path("/Volumes/Main/s/v/dir/f.csv")
            .unwrap()
            .unwrap();
        assert_eq!(inside, w.root().join("main/s/v/dir/f.csv"));
        assert!(w.volume_path("/data/f.csv").is_none());
        for bad in [
            "/Volumes/main/s",
            "/Volumes/main/s/v/../../../etc",
            "/Volumes/a/./b/c",
        ] {
            assert!(w.volume_path(bad).unwrap().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_schema_is_created_once() {
        let (_d, w) = warehouse();
        assert!(!w.has_schema("main", "s"));
        assert!(w.create_schema("main", "s").unwrap());
        assert!(!w.create_schema("main", "s").unwrap());
        assert!(w.has_schema("main", "s"));
    }
}
