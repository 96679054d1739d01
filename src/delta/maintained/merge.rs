//! What a merge reads, as Arrow: the live rows of the files a tier merges, decoded from their
//! Parquet pages straight into one record batch, deletion vectors applied with Arrow's filter
//! kernel, each row with the index hash its file kept since it was written or read
//! ([`Source::hashes`]).
//!
//! Why Arrow and not packed rows: a merge read its files into packed rows, hashed every row
//! again and encoded the rows back into a record batch to write — two conversions of every
//! value, and a heap block per row, for a write that needs neither. On a followed 10,000-event
//! SCD2 commit published to Delta, merges were about a quarter of the process's CPU, and they run
//! beside the next commits, which wait for the cores they take (measured figures: the
//! module docs of [`super::compaction`]).
//!
//! A file whose Parquet columns are not of the table's Arrow types (another writer's physical
//! types) is read through packed rows ([`crate::delta::batch::from_batch`]), as any read of the
//! table converts it.

use crate::delta::batch::{from_batch, to_batch};
use crate::delta::table::{failed, open_parquet};
use crate::value::Schema;
use crate::{Error, ErrorKind, Result};
use deltalake::arrow::array::{BooleanArray, RecordBatch};
use deltalake::arrow::buffer::BooleanBuffer;
use deltalake::arrow::compute::{concat_batches, filter_record_batch, is_not_null, not};
use deltalake::arrow::datatypes::SchemaRef;
use deltalake::arrow::error::ArrowError;
use deltalake::kernel::Add;
use deltalake::logstore::ObjectStoreRef;
use deltalake::Path as StorePath;
use roaring::RoaringTreemap;
use std::path::Path;
use tokio::runtime::Runtime;

/// Where a merge reads from: the table's store, its columns as ours and as Arrow's.
pub(super) struct Reader<'a> {
    pub runtime: &'a Runtime,
    pub store: &'a ObjectStoreRef,
    pub dir: &'a Path,
    pub schema: &'a Schema,
    pub arrow: &'a SchemaRef,
}

/// A file a merge takes: its `add`, the rows the table counts in it, the positions its deletion
/// vector removes, and its rows' hashes in file order (empty in a table that indexes no rows).
pub(super) struct Source<'a> {
    pub add: &'a Add,
    pub rows: u64,
    pub deleted: &'a RoaringTreemap,
    pub hashes: &'a [u128],
}

impl Reader<'_> {
    /// The live rows of `sources`, in order, as one batch of the table's Arrow schema, with
    /// their hashes (none when the sources carry none).
    pub(super) fn live(&self, sources: &[Source]) -> Result<(RecordBatch, Vec<u128>)> {
        let mut batches = Vec::with_capacity(sources.len());
        let mut hashes = Vec::new();
        for source in sources {
            let batch = self.file(source.add)?;
            let n = batch.num_rows();
            let indexed = !source.hashes.is_empty();
            if n as u64 != source.rows || (indexed && source.hashes.len() != n) {
                let message = format!(
                    "{}: holds {n} rows where the table counts {}",
                    self.dir.join(&source.add.path).display(),
                    source.rows
                );
                return Err(Error::new(ErrorKind::State, message));
            }
            if source.deleted.is_empty() {
                hashes.extend_from_slice(source.hashes);
                batches.push(batch);
                continue;
            }
            let mut live = vec![true; n];
            for at in source.deleted.iter().filter(|&at| at < n as u64) {
                live[at as usize] = false;
            }
            let mask = BooleanArray::new(BooleanBuffer::from(live), None);
            hashes.extend(kept(source.hashes, &mask));
            batches.push(filter_record_batch(&batch, &mask).map_err(|e| self.failed(e))?);
        }
        let batch = concat_batches(self.arrow, &batches).map_err(|e| self.failed(e))?;
        Ok((batch, hashes))
    }

    /// The rows of data file `add`, as the table's Arrow schema.
    fn file(&self, add: &Add) -> Result<RecordBatch> {
        let path = StorePath::from(add.path.as_str());
        let (builder, shown) = open_parquet(self.runtime, self.store, self.dir, &path)?;
        let format =
            |e: &dyn std::fmt::Display| Error::new(ErrorKind::Format, format!("{shown}: {e}"));
        let reader = builder.build().map_err(|e| format(&e))?;
        let batches =
            (reader.collect::<std::result::Result<Vec<_>, _>>()).map_err(|e| format(&e))?;
        let ours = |batch: &RecordBatch| {
            let (theirs, ours) = (batch.schema(), self.arrow.fields());
            theirs.fields().len() == ours.len()
                && (theirs.fields().iter().zip(ours)).all(|(t, o)| {
                    t.data_type() == o.data_type() && t.name().eq_ignore_ascii_case(o.name())
                })
        };
        if batches.iter().all(ours) {
            let batches = batches
                .into_iter()
                .map(|batch| RecordBatch::try_new(self.arrow.clone(), batch.columns().to_vec()));
            let batches =
                (batches.collect::<std::result::Result<Vec<_>, _>>()).map_err(|e| format(&e))?;
            return concat_batches(self.arrow, &batches).map_err(|e| format(&e));
        }
        let mut rows = Vec::new();
        for batch in &batches {
            rows.extend(from_batch(self.schema, batch, &shown)?);
        }
        to_batch(self.schema, self.arrow, &rows)
    }

    fn failed(&self, e: impl std::fmt::Display) -> Error {
        failed(self.dir, e)
    }
}

/// The merged rows of a history, parted by class.
type Parts = [(RecordBatch, Vec<u128>); 2];

/// A history's merged rows by class: the open ones (column `column` NULL), then the settled
/// ones, each with its hashes; and which rows are settled.
pub(super) fn by_class(
    batch: &RecordBatch,
    hashes: &[u128],
    column: usize,
) -> std::result::Result<(Parts, BooleanBuffer), ArrowError> {
    let settled = is_not_null(batch.column(column))?;
    let open = not(&settled)?;
    let part = |mask: &BooleanArray| -> std::result::Result<_, ArrowError> {
        Ok((filter_record_batch(batch, mask)?, kept(hashes, mask)))
    };
    Ok(([part(&open)?, part(&settled)?], settled.values().clone()))
}

/// The hashes of the rows `mask` keeps (none when there are no hashes).
fn kept(hashes: &[u128], mask: &BooleanArray) -> Vec<u128> {
    let pairs = hashes.iter().zip(mask.values().iter());
    pairs
        .filter(|(_, keep)| *keep)
        .map(|(hash, _)| *hash)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{DataType, Packer, Row, Value};
    use deltalake::arrow::array::{ArrayRef, Int32Array, Int64Array, StringArray};
    use deltalake::arrow::datatypes::{DataType as ArrowType, Field, Schema as ArrowSchema};
    use std::sync::Arc;

    fn schema() -> Schema {
        Schema::new([
            ("id".to_string(), DataType::BigInt),
            ("name".into(), DataType::String),
            ("end".into(), DataType::BigInt),
        ])
    }

    fn ids(batch: &RecordBatch) -> Vec<i64> {
        let ids = batch.column(0).as_any().downcast_ref::<Int64Array>();
        ids.expect("BIGINT ids").values().to_vec()
    }

    /// Writes `batch` as the Parquet file `name` in `dir`; its `add`.
    fn parquet(dir: &Path, name: &str, batch: &RecordBatch) -> Add {
        let file = std::fs::File::create(dir.join(name)).unwrap();
        let mut writer =
            deltalake::parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        writer.write(batch).unwrap();
        writer.close().unwrap();
        Add {
            path: name.to_string(),
            ..Default::default()
        }
    }

    /// Files of the table's types are taken as they are, another writer's (an INT id for a
    /// BIGINT column, names in other case) converted; each file's deleted rows and their hashes
    /// are left out, and a file that does not hold the rows the table counts is refused.
    #[test]
    fn live_rows_of_files_of_any_types_come_as_the_tables() {
        let dir = tempfile::tempdir().unwrap();
        let schema = schema();
        let arrow = crate::delta::batch::arrow_schema(&schema).unwrap();
        let ours: Vec<Row> = (0..4).map(|i| history(i, None)).collect();
        let ours = parquet(
            dir.path(),
            "ours.parquet",
            &to_batch(&schema, &arrow, &ours).unwrap(),
        );
        let fields = [
            ("ID", ArrowType::Int32),
            ("Name", ArrowType::Utf8),
            ("END", ArrowType::Int64),
        ];
        let theirs = Arc::new(ArrowSchema::new(
            (fields.iter())
                .map(|(n, t)| Field::new(*n, t.clone(), true))
                .collect::<Vec<_>>(),
        ));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![10, 11, 12])),
            Arc::new(StringArray::from(vec!["v10", "v11", "v12"])),
            Arc::new(Int64Array::from(vec![Some(5), None, Some(7)])),
        ];
        let batch = RecordBatch::try_new(theirs, columns).unwrap();
        let theirs = parquet(dir.path(), "theirs.parquet", &batch);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let store: ObjectStoreRef = Arc::new(
            deltalake::logstore::object_store::local::LocalFileSystem::new_with_prefix(dir.path())
                .unwrap(),
        );
        let reader = Reader {
            runtime: &runtime,
            store: &store,
            dir: dir.path(),
            schema: &schema,
            arrow: &arrow,
        };
        let (none, one, two) = (
            RoaringTreemap::new(),
            RoaringTreemap::from_iter([1u64]),
            RoaringTreemap::from_iter([0u64, 3]),
        );
        let sources = [
            Source {
                add: &ours,
                rows: 4,
                deleted: &two,
                hashes: &[1, 2, 3, 4],
            },
            Source {
                add: &theirs,
                rows: 3,
                deleted: &one,
                hashes: &[5, 6, 7],
            },
        ];
        let (batch, hashes) = reader.live(&sources).unwrap();
        assert_eq!(batch.schema(), arrow);
        assert_eq!(ids(&batch), [1, 2, 10, 12]);
        assert_eq!(hashes, [2, 3, 5, 7]);
        let ends = batch
            .column(2)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(
            ends.iter().collect::<Vec<_>>(),
            [None, None, Some(5), Some(7)]
        );
        let whole = [Source {
            add: &theirs,
            rows: 3,
            deleted: &none,
            hashes: &[],
        }];
        assert_eq!(ids(&reader.live(&whole).unwrap().0), [10, 11, 12]);
        let miscounted = [Source {
            add: &theirs,
            rows: 4,
            deleted: &none,
            hashes: &[],
        }];
        let e = reader.live(&miscounted).unwrap_err().to_string();
        assert!(
            e.contains("theirs.parquet: holds 3 rows where the table counts 4"),
            "{e}"
        );
    }

    fn history(id: i64, end: Option<i64>) -> Row {
        let mut p = Packer::new();
        p.push(&Value::Int(id))
            .push(&Value::Str(format!("v{id}")))
            .push(&end.map_or(Value::Null, Value::Int));
        p.finish()
    }

    /// A history's rows part by their end: open rows first, each part with its own hashes
    /// in order.
    #[test]
    fn merged_rows_part_by_class_with_their_hashes() {
        let schema = schema();
        let arrow = crate::delta::batch::arrow_schema(&schema).unwrap();
        let rows: Vec<Row> = (0..6)
            .map(|i| history(i, (i % 3 == 0).then_some(100 + i)))
            .collect();
        let batch = to_batch(&schema, &arrow, &rows).unwrap();
        let hashes: Vec<u128> = (0..6).map(|i| 1000 + i).collect();
        let ([(open, open_hashes), (settled, settled_hashes)], classes) =
            by_class(&batch, &hashes, 2).unwrap();
        let classes: Vec<bool> = classes.iter().collect();
        assert_eq!(classes, [true, false, false, true, false, false]);
        assert_eq!(ids(&open), [1, 2, 4, 5]);
        assert_eq!(open_hashes, [1001, 1002, 1004, 1005]);
        assert_eq!(ids(&settled), [0, 3]);
        assert_eq!(settled_hashes, [1000, 1003]);
        let names = settled.column(1).as_any().downcast_ref::<StringArray>();
        assert_eq!(names.unwrap().value(1), "v3");
    }
}
