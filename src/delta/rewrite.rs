//! Rows of a table changed in place — `DELETE`, `UPDATE`, `TRUNCATE`, `MERGE` — by rewriting
//! the files that hold them (copy-on-write, as Delta writers do without deletion vectors), with
//! the rows a `MERGE` inserts in the same version.
//!
//! A version made here removes every file holding a row that is deleted or updated, and adds
//! one file with those files' remaining and updated rows (rows a file's deletion vector removes
//! are left out); files none of whose rows changed stay as they are. With the change data feed
//! on (`delta.enableChangeDataFeed`), the version also carries a change-data file: each deleted
//! row as `delete`, each updated one as its `update_preimage` and `update_postimage`. Without it, a reader of the feed would take the
//! version's removed and added files for their every row deleted and inserted.
//!
//! Invariant: nothing is written for a statement that changes no row, and a statement whose
//! `fate` fails on some row writes no version (files written before the failure stay unreferenced
//! until a vacuum). Limits: the cost is the size of the files touched, not of the change; tables
//! with `delta.appendOnly` are refused, as the protocol requires.

use super::batch::to_batch;
use super::commit::{commit, refused, writable};
use super::files::{as_add, feed_schema, remove, write_feed, write_parquet, Codec};
use super::table::{failed, read_parquet, Table};
use crate::engine::changefeed::ChangeType;
use crate::value::Row;
use crate::{Error, ErrorKind, Result};
use deltalake::kernel::Action;
use deltalake::protocol::{DeltaOperation, MergePredicate};

/// What a statement does to one row.
#[derive(Debug)]
pub enum Fate {
    /// The row stays.
    Keep,
    /// The row goes.
    Delete,
    /// The row is replaced by this one (same columns).
    Update(Row),
}

/// Which statement rewrites the table, as its version's `commitInfo` records it.
#[derive(Clone, Debug)]
pub enum Rewrite {
    /// `DELETE` with its predicate (none for `TRUNCATE TABLE`).
    Delete(Option<String>),
    /// `UPDATE` with its predicate.
    Update(Option<String>),
    /// `MERGE`: its `ON` condition and, per clause, its action (`update`, `delete`, `insert`)
    /// and condition.
    Merge {
        /// The `ON` condition.
        on: String,
        /// `WHEN MATCHED` clauses.
        matched: Vec<(String, Option<String>)>,
        /// `WHEN NOT MATCHED [BY TARGET]` clauses.
        not_matched: Vec<(String, Option<String>)>,
        /// `WHEN NOT MATCHED BY SOURCE` clauses.
        by_source: Vec<(String, Option<String>)>,
    },
}

/// What a rewrite did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rewritten {
    /// The version made, if any row changed.
    pub version: Option<u64>,
    /// Rows deleted.
    pub deleted: u64,
    /// Rows updated.
    pub updated: u64,
    /// Rows inserted.
    pub inserted: u64,
}

impl Table {
    /// Applies `fate` to every row of the current version and commits what it changes as one
    /// version (see the module docs), unless `check` refuses the changes (before anything is
    /// written).
    pub fn rewrite(
        &mut self,
        statement: Rewrite,
        fate: &mut dyn FnMut(&Row) -> Result<Fate>,
        check: &dyn Fn(&[(ChangeType, Row)]) -> Result<()>,
    ) -> Result<Rewritten> {
        self.rewrite_and_insert(statement, fate, &mut || Ok(Vec::new()), check)
    }

    /// [`Table::rewrite`], then the rows `inserts` gives once every row's fate is known
    /// (`MERGE`'s `WHEN NOT MATCHED` rows) go into the same version.
    pub fn rewrite_and_insert(
        &mut self,
        statement: Rewrite,
        fate: &mut dyn FnMut(&Row) -> Result<Fate>,
        inserts: &mut dyn FnMut() -> Result<Vec<Row>>,
        check: &dyn Fn(&[(ChangeType, Row)]) -> Result<()>,
    ) -> Result<Rewritten> {
        writable(&self.inner).map_err(|why| refused(&self.dir, &why))?;
        let properties = self.properties()?;
        let flag = |key: &str| {
            (properties.get(key)).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        };
        if flag("delta.appendOnly") {
            let message = format!(
                "Delta table {}: the table is append-only (delta.appendOnly = true); rows \
                 cannot be deleted or updated",
                self.dir.display()
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
        let snapshot = self.inner.snapshot().map_err(|e| failed(&self.dir, e))?;
        let adds: Vec<_> = snapshot.log_data().iter().map(|f| as_add(&f)).collect();
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        let mut done = Rewritten::default();
        let mut actions = Vec::new();
        let mut rewritten: Vec<Row> = Vec::new();
        let mut changes: Vec<(ChangeType, Row)> = Vec::new();
        for add in adds {
            let path = deltalake::Path::from(add.path.as_str());
            let store = self.inner.object_store();
            let mut rows = read_parquet(&self.runtime, &store, &self.dir, &path, &self.schema)?;
            if let Some(dv) = &add.deletion_vector {
                let where_ = self.dir.join(&add.path).display().to_string();
                let deleted = super::dv::read(&self.dir, dv, &where_)?;
                let mut at = 0u64;
                rows.retain(|_| {
                    at += 1;
                    !deleted.contains(at - 1)
                });
            }
            let mut kept = Vec::with_capacity(rows.len());
            let mut touched = false;
            for row in rows {
                match fate(&row)? {
                    Fate::Keep => kept.push(row),
                    Fate::Delete => {
                        touched = true;
                        done.deleted += 1;
                        changes.push((ChangeType::Delete, row));
                    }
                    Fate::Update(new) => {
                        touched = true;
                        done.updated += 1;
                        kept.push(new.clone());
                        changes.push((ChangeType::UpdatePreimage, row));
                        changes.push((ChangeType::UpdatePostimage, new));
                    }
                }
            }
            if touched {
                actions.push(Action::Remove(remove(&add, timestamp, true)));
                rewritten.extend(kept);
            }
        }
        let inserted = inserts()?;
        done.inserted = inserted.len() as u64;
        changes.extend(inserted.iter().map(|row| (ChangeType::Insert, row.clone())));
        rewritten.extend(inserted);
        if changes.is_empty() {
            return Ok(done);
        }
        check(&changes)?;
        let url = self.inner.table_url().clone();
        if !rewritten.is_empty() {
            let batch = to_batch(&self.schema, &self.arrow, &rewritten)?;
            let arrow = self.arrow.clone();
            let adds = write_parquet(
                &self.runtime,
                &self.dir,
                url.as_str(),
                arrow,
                batch,
                Codec::Snappy,
            )?;
            actions.extend(adds.into_iter().map(Action::Add));
        }
        if flag(super::FEED_PROPERTY) {
            let feed = feed_schema(&self.schema);
            let arrow = super::batch::arrow_schema(&feed)?;
            let cdc = write_feed(&self.dir, &feed, &arrow, &changes)?;
            actions.push(Action::Cdc(cdc));
        }
        let operation = match statement {
            Rewrite::Delete(predicate) => DeltaOperation::Delete { predicate },
            Rewrite::Update(predicate) => DeltaOperation::Update { predicate },
            Rewrite::Merge {
                on,
                matched,
                not_matched,
                by_source,
            } => {
                let clauses = |clauses: Vec<(String, Option<String>)>| {
                    let each = clauses
                        .into_iter()
                        .map(|(action_type, predicate)| MergePredicate {
                            action_type,
                            predicate,
                        });
                    each.collect()
                };
                DeltaOperation::Merge {
                    predicate: None,
                    merge_predicate: Some(on),
                    matched_predicates: clauses(matched),
                    not_matched_predicates: clauses(not_matched),
                    not_matched_by_source_predicates: clauses(by_source),
                }
            }
        };
        let Table {
            runtime,
            inner,
            dir,
            ..
        } = self;
        done.version = Some(runtime.block_on(commit(inner, actions, operation, false, dir))?);
        Ok(done)
    }
}
