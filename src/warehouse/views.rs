//! Views of the warehouse: `CREATE [OR REPLACE] VIEW [IF NOT EXISTS] v [(columns)] AS query`
//! stores the query's text; reading `v` runs it ([`super::select`]), so a view always shows
//! its tables as they are now.
//!
//! Layout: a view is the directory a table of its name would have, holding `_view.json`
//! (`{"query": "...", "columns": [...], "catalog": "...", "schema": "..."}`, replaced
//! atomically; the query's short names resolve in that catalog and schema, as when it was
//! created), so a table and a view never
//! share a name, and dropping either removes its directory. The query is checked when the
//! view is created by running it over empty tables (names, types), as Unity Catalog resolves
//! a view's references then. A view reading itself through other views is caught when read
//! ([`MAX_NESTING`]).

use super::{TableName, Warehouse};
use crate::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How deeply views may read views: deeper is taken for a cycle.
pub(crate) const MAX_NESTING: usize = 32;

const FILE: &str = "_view.json";

/// A stored view.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct View {
    /// The query, as SQL text.
    pub(crate) query: String,
    /// The column names given with the view's name (`v (a, b)`), empty when none.
    #[serde(default)]
    pub(crate) columns: Vec<String>,
    /// The catalog and schema the query's shorter names were resolved in when the view was
    /// created; it resolves them there whoever reads it.
    pub(crate) catalog: String,
    pub(crate) schema: String,
}

impl Warehouse {
    /// The view `name`, if there is one.
    pub(crate) fn view(&self, name: &TableName) -> Result<Option<View>> {
        let file = self.view_file(name);
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::read(&file, &e)),
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            let message = format!("view {name}: its definition does not parse: {e}");
            Error::new(ErrorKind::Format, message).in_file(&file)
        })
    }

    /// Stores `view` as `name`, replacing the view of that name if any.
    pub(crate) fn put_view(&self, name: &TableName, view: &View) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(view)
            .map_err(|e| Error::new(ErrorKind::Internal, format!("view {name}: {e}")))?;
        crate::io::replace_file(&self.view_file(name), &bytes)
    }

    /// Removes the view `name`; whether there was one.
    pub(crate) fn drop_view(&self, name: &TableName) -> Result<bool> {
        if self.view(name)?.is_none() {
            return Ok(false);
        }
        let dir = self.table_dir(name);
        std::fs::remove_dir_all(&dir).map_err(|e| Error::write(&dir, &e))?;
        Ok(true)
    }

    fn view_file(&self, name: &TableName) -> PathBuf {
        self.table_dir(name).join(FILE)
    }
}
