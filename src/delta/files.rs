//! The files a version of ours brings or drops, shared by every writer here: Parquet data
//! files (written by delta-rs's `RecordBatchWriter`, so with the statistics readers skip files
//! by), change-data files (Delta's `cdc` action) and the `remove` of a file.

use super::batch::to_batch_with;
use super::table::failed;
use crate::engine::changefeed::ChangeType;
use crate::value::{DataType, Row, Schema};
use crate::{Error, Result};
use deltalake::arrow::array::{RecordBatch, StringArray};
use deltalake::arrow::datatypes::SchemaRef;
use deltalake::kernel::{Add, AddCDCFile, LogicalFileView, Remove};
use deltalake::parquet::arrow::ArrowWriter;
use deltalake::parquet::basic::Compression;
use deltalake::parquet::errors::ParquetError;
use deltalake::parquet::file::properties::WriterProperties;
use deltalake::writer::{DeltaWriter, RecordBatchWriter};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use tokio::runtime::Runtime;

/// Writes `batch` as Parquet under `url` (the table at `dir`); the `add` of each file made.
pub(super) fn write_parquet(
    runtime: &Runtime,
    dir: &Path,
    url: &str,
    arrow: SchemaRef,
    batch: RecordBatch,
) -> Result<Vec<Add>> {
    runtime
        .block_on(async {
            let mut writer = RecordBatchWriter::try_new(url, arrow, None, None)?;
            writer.write(batch).await?;
            writer.flush().await
        })
        .map_err(|e| failed(dir, e))
}

/// The columns of a table's change-data files: its own, then `_change_type`.
pub(super) fn feed_schema(schema: &Schema) -> Schema {
    let mut feed = schema.clone();
    feed.columns
        .extend(Schema::new([("_change_type".to_string(), DataType::String)]).columns);
    feed
}

/// Writes `changes` as one change-data file under `_change_data/` of the table at `dir`;
/// `feed` is [`feed_schema`] of the table's columns, `arrow` its Arrow form.
///
/// Written with parquet's own writer, synchronously, where data files go through delta-rs's
/// writer: a change-data file's `cdc` action carries no statistics, which is what delta-rs's
/// writer adds, and a plain call lets a version write it on a thread of its own beside its
/// data file. The file is compressed as delta-rs compresses (snappy); nothing names it until
/// the version's log entry does, so a crash mid-write leaves only an unreferenced file.
pub(super) fn write_feed(
    dir: &Path,
    feed: &Schema,
    arrow: &SchemaRef,
    changes: &[(ChangeType, Row)],
) -> Result<AddCDCFile> {
    let kinds = StringArray::from_iter_values(changes.iter().map(|(kind, _)| kind.as_str()));
    let own = &feed.columns[..feed.columns.len() - 1];
    let rows = changes.iter().map(|(_, row)| row.as_row_ref());
    let batch = to_batch_with(own, arrow, rows, vec![Arc::new(kinds)])?;
    let local = dir.join("_change_data");
    std::fs::create_dir_all(&local).map_err(|e| Error::write(&local, &e))?;
    let name = format!("cdc-{}.snappy.parquet", uuid::Uuid::new_v4());
    let path = local.join(&name);
    let file = std::fs::File::create(&path).map_err(|e| Error::write(&path, &e))?;
    let properties = WriterProperties::builder()
        .set_created_by(format!("scdflow {}", env!("CARGO_PKG_VERSION")))
        .set_compression(Compression::SNAPPY)
        .build();
    let size = (|| {
        let out = std::io::BufWriter::new(file);
        let mut writer = ArrowWriter::try_new(out, arrow.clone(), Some(properties))?;
        writer.write(&batch)?;
        let out = writer.into_inner()?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        Ok::<_, ParquetError>(file.metadata()?.len())
    })()
    .map_err(|e| Error::write(&path, &std::io::Error::other(e)))?;
    Ok(AddCDCFile {
        path: format!("_change_data/{name}"),
        size: size as i64,
        partition_values: HashMap::new(),
        data_change: false,
        tags: None,
    })
}

/// A live file's `add`, as the version holding it has it.
pub(super) fn as_add(file: &LogicalFileView) -> Add {
    Add {
        path: file.path().to_string(),
        partition_values: file.partition_values_map(),
        size: file.size(),
        modification_time: file.modification_time(),
        data_change: true,
        stats: file.stats(),
        tags: None,
        deletion_vector: file.deletion_vector_descriptor(),
        base_row_id: None,
        default_row_commit_version: None,
        clustering_provider: None,
    }
}

/// The `remove` of a file `add` brought, at `timestamp` (µs since the epoch).
pub(super) fn remove(add: &Add, timestamp: i64, data_change: bool) -> Remove {
    Remove {
        path: add.path.clone(),
        data_change,
        deletion_timestamp: Some(timestamp.div_euclid(1000)),
        extended_file_metadata: Some(true),
        partition_values: Some(add.partition_values.clone()),
        size: Some(add.size),
        tags: add.tags.clone(),
        deletion_vector: add.deletion_vector.clone(),
        base_row_id: add.base_row_id,
        default_row_commit_version: add.default_row_commit_version,
    }
}
