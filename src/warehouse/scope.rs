//! What the names of a query resolve to: the warehouse's tables, the query's own common table
//! expressions, and the table-valued functions `list_files(path)`, `last_snapshot_version()`
//! and `current_snapshot_version()`.
//!
//! The same evaluator serves `scdflow sql` and the queries a pipeline runs between commits (a
//! snapshot flow's `WITH VERSION`); the scope is what differs. A *dry* scope reads every table
//! and file listing as empty: evaluating a query in it types every expression and resolves
//! every name without reading data, which is how a pipeline checks its queries when it is
//! planned.

use super::select::Relation;
use super::Warehouse;
use crate::value::{DataType, Schema};
use crate::{Error, ErrorKind, Result};
use std::path::{Path, PathBuf};

/// The snapshot-version functions, which a scope defines only where SQL allows them (SPEC 2.4).
const SNAPSHOT_FUNCTIONS: [(&str, &str); 2] = [
    ("last_snapshot_version", "WITH VERSION (...)"),
    ("current_snapshot_version", "FROM SNAPSHOT (...)"),
];

/// What a query's names resolve to.
#[derive(Clone, Debug)]
pub struct Scope<'a> {
    warehouse: Option<&'a Warehouse>,
    base: PathBuf,
    functions: Vec<(&'static str, Relation)>,
    dry: bool,
}

impl<'a> Scope<'a> {
    /// Tables are `warehouse`'s (none without one); relative `list_files` paths are joined to
    /// `base` and `/Volumes/...` ones resolve inside the warehouse.
    pub fn new(warehouse: Option<&'a Warehouse>, base: &Path) -> Self {
        Scope {
            warehouse,
            base: base.to_path_buf(),
            functions: Vec::new(),
            dry: false,
        }
    }

    /// The same scope, reading every table and listing as empty (plan-time checks).
    pub fn dry(mut self) -> Self {
        self.dry = true;
        self
    }

    /// The same scope with `last_snapshot_version()` returning `relation`.
    pub fn with_last_snapshot_version(self, relation: Relation) -> Self {
        self.with_function(SNAPSHOT_FUNCTIONS[0].0, relation)
    }

    /// The same scope with `current_snapshot_version()` returning `relation`.
    pub fn with_current_snapshot_version(self, relation: Relation) -> Self {
        self.with_function(SNAPSHOT_FUNCTIONS[1].0, relation)
    }

    fn with_function(mut self, name: &'static str, relation: Relation) -> Self {
        self.functions.retain(|(n, _)| *n != name);
        self.functions.push((name, relation));
        self
    }

    /// The same scope over `warehouse` (the one a view's query resolves its names in).
    pub(crate) fn over<'b>(&self, warehouse: &'b Warehouse) -> Scope<'b> {
        Scope {
            warehouse: Some(warehouse),
            base: self.base.clone(),
            functions: self.functions.clone(),
            dry: self.dry,
        }
    }

    /// Whether tables read as empty.
    pub(crate) fn is_dry(&self) -> bool {
        self.dry
    }

    /// The warehouse, or an error saying that `what` needs one.
    pub(crate) fn warehouse(&self, what: &str) -> Result<&'a Warehouse> {
        self.warehouse.ok_or_else(|| {
            let message = format!("{what} is a table of a warehouse: give --warehouse DIR");
            Error::new(ErrorKind::Validation, message)
        })
    }

    /// Where a path written in SQL points ([`Warehouse::volume_path`] for volumes).
    pub(crate) fn path(&self, written: &str) -> Result<PathBuf> {
        let invalid = |message: String| Error::new(ErrorKind::Validation, message);
        match self.warehouse.and_then(|w| w.volume_path(written)) {
            Some(Ok(path)) => Ok(path),
            Some(Err(why)) => Err(invalid(why)),
            None if written.starts_with("/Volumes/") => Err(invalid(format!(
                "`{written}` is in a volume of a warehouse: give --warehouse DIR"
            ))),
            None => Ok(self.base.join(written)),
        }
    }

    /// The relation of a snapshot-version function, `None` when `name` is not one; an error when
    /// it is one this scope does not define (SQL's `UNRESOLVABLE_TABLE_VALUED_FUNCTION`).
    pub(crate) fn snapshot_function(&self, name: &str) -> Option<Result<Relation>> {
        let (known, place) = SNAPSHOT_FUNCTIONS
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))?;
        let defined = self.functions.iter().find(|(n, _)| n == known);
        Some(match defined {
            Some((_, relation)) => Ok(relation.clone()),
            None => {
                let message = format!("{known}() can only be used inside {place}");
                Err(Error::new(ErrorKind::Validation, message))
            }
        })
    }
}

/// A one-column relation holding `value`, or no row when it is `None`: what the snapshot
/// version functions return.
pub fn version_relation(
    column: &str,
    ty: DataType,
    value: Option<crate::value::Value>,
) -> Relation {
    let schema = Schema::new([(column.to_string(), ty)]);
    let rows = value
        .map(|v| {
            let mut packer = crate::value::Packer::new();
            packer.push(&v);
            packer.finish()
        })
        .into_iter()
        .collect();
    Relation { schema, rows }
}
