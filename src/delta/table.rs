//! One Delta table: create, open, append, read the current rows or one version's new rows.
//!
//! Invariant: a [`Table`] always holds a loaded snapshot (its `version`), and every write
//! commits on top of that snapshot and then moves to the version it made; a writer that lost a
//! race is refused by delta-rs's conflict check, never merged silently into a version another
//! writer made.

use super::batch::{arrow_schema, our_schema, to_batch};
use super::commit::commit;
use super::files;
use crate::value::{Row, Schema};
use crate::{Error, ErrorKind, Result};
use deltalake::arrow::datatypes::{Schema as ArrowSchema, SchemaRef};
use deltalake::kernel::engine::arrow_conversion::{TryFromArrow, TryIntoArrow};
use deltalake::kernel::{Action, StructField, StructType};
use deltalake::logstore::object_store::ObjectStoreExt;
use deltalake::logstore::ObjectStoreRef;
use deltalake::operations::create::CreateBuilder;
use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use deltalake::parquet::file::reader::ChunkReader;
use deltalake::protocol::{DeltaOperation, SaveMode};
use deltalake::writer::{DeltaWriter, RecordBatchWriter};
use deltalake::{DeltaTable, DeltaTableError, Path as StorePath};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tokio::runtime::Runtime;

/// An open Delta table.
pub struct Table {
    pub(super) runtime: Runtime,
    pub(super) inner: DeltaTable,
    pub(super) dir: PathBuf,
    pub(super) schema: Schema,
    pub(super) arrow: SchemaRef,
}

impl Table {
    /// Whether `dir` holds a Delta table (a `_delta_log` directory).
    pub fn exists(dir: &Path) -> bool {
        dir.join("_delta_log").is_dir()
    }

    /// Creates a table of `schema` at `dir` holding `rows` in its first version (0), with the
    /// given table properties. `replace` replaces an existing table's schema and rows in a new
    /// version (`CREATE OR REPLACE`: delta-rs removes the old files in the same commit, or
    /// [`Table::replace`] for a protocol it refuses); otherwise an existing table is an error.
    pub fn create(
        dir: &Path,
        schema: &Schema,
        properties: &BTreeMap<String, String>,
        rows: &[Row],
        replace: bool,
    ) -> Result<Table> {
        // Spark's rule: any property of the user's own, but no unknown `delta.` one.
        if let Some(key) = (properties.keys())
            .find(|k| k.starts_with("delta.") && k.parse::<deltalake::TableProperty>().is_err())
        {
            let message = format!(
                "Delta table {}: unknown table property `{key}`",
                dir.display()
            );
            return Err(Error::new(ErrorKind::Validation, message));
        }
        if replace && Table::exists(dir) {
            let mut table = Table::open(dir)?;
            if table.needs_own_replace()? {
                table.replace(schema, properties, rows)?;
                return Ok(table);
            }
        }
        let runtime = runtime(dir)?;
        let arrow = arrow_schema(schema)?;
        let columns = delta_columns(&arrow, dir)?;
        std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, &e))?;
        let url = deltalake::ensure_table_uri(dir.to_string_lossy()).map_err(|e| failed(dir, e))?;
        let inner = runtime
            .block_on(async {
                let mut actions = Vec::new();
                if !rows.is_empty() {
                    let batch = to_batch(schema, &arrow, rows).map_err(to_delta)?;
                    let mut writer =
                        RecordBatchWriter::try_new(url.as_str(), arrow.clone(), None, None)?
                            .with_writer_properties(files::properties(
                                &batch,
                                files::Codec::Snappy,
                            ));
                    writer.write(batch).await?;
                    actions.extend(writer.flush().await?.into_iter().map(Action::Add));
                }
                let mode = if replace {
                    SaveMode::Overwrite
                } else {
                    SaveMode::ErrorIfExists
                };
                CreateBuilder::new()
                    .with_location(url.as_str())
                    .with_columns(columns)
                    .with_configuration(
                        properties.iter().map(|(k, v)| (k.clone(), Some(v.clone()))),
                    )
                    .with_raise_if_key_not_exists(false)
                    .with_actions(actions)
                    .with_save_mode(mode)
                    .await
            })
            .map_err(|e| failed(dir, e))?;
        Ok(Table {
            runtime,
            inner,
            dir: dir.to_path_buf(),
            schema: schema.clone(),
            arrow,
        })
    }

    /// Opens the table at `dir` at its latest version.
    pub fn open(dir: &Path) -> Result<Table> {
        Self::open_version(dir, None)
    }

    /// Opens the table at `dir` as it was at `version` (time travel), or at its latest.
    pub fn open_version(dir: &Path, version: Option<u64>) -> Result<Table> {
        let (runtime, url) = existing(dir)?;
        let inner = match version {
            None => runtime.block_on(deltalake::open_table(url)),
            Some(v) => runtime.block_on(deltalake::open_table_with_version(url, v)),
        }
        .map_err(|e| failed(dir, e))?;
        let arrow = readable_schema(&inner, dir)?;
        let schema = our_schema(&arrow).map_err(|e| unreadable(dir, e))?;
        Ok(Table {
            runtime,
            inner,
            dir: dir.to_path_buf(),
            schema,
            arrow: std::sync::Arc::new(arrow),
        })
    }

    /// The version the table was opened at or last committed.
    pub fn version(&self) -> u64 {
        self.inner.version().unwrap_or(0)
    }

    /// The table's columns.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The table's properties (`TBLPROPERTIES`), by name.
    pub fn properties(&self) -> Result<BTreeMap<String, String>> {
        let snapshot = self.inner.snapshot().map_err(|e| failed(&self.dir, e))?;
        let configuration = snapshot.metadata().configuration();
        Ok(configuration.clone().into_iter().collect())
    }

    /// What `SHOW TBLPROPERTIES` lists, as Delta's own shows it: the table's properties, its
    /// protocol versions (`delta.minReaderVersion`, `delta.minWriterVersion`) and each table
    /// feature it uses (`delta.feature.<name>` = `supported`).
    pub fn shown_properties(&self) -> Result<BTreeMap<String, String>> {
        let snapshot = self.inner.snapshot().map_err(|e| failed(&self.dir, e))?;
        let protocol = snapshot.protocol();
        let mut shown = self.properties()?;
        shown.insert(
            "delta.minReaderVersion".into(),
            protocol.min_reader_version().to_string(),
        );
        shown.insert(
            "delta.minWriterVersion".into(),
            protocol.min_writer_version().to_string(),
        );
        let reader = protocol.reader_features().unwrap_or_default().iter();
        for feature in reader.chain(protocol.writer_features().unwrap_or_default()) {
            shown.insert(format!("delta.feature.{feature}"), "supported".into());
        }
        Ok(shown)
    }

    /// A data file of this version that is not on disk (a vacuum deleted it), if any.
    pub fn missing_file(&self) -> Result<Option<PathBuf>> {
        let snapshot = self.inner.snapshot().map_err(|e| failed(&self.dir, e))?;
        Ok((snapshot.log_data().iter())
            .map(|f| self.dir.join(f.object_store_path().as_ref()))
            .find(|path| !path.exists()))
    }

    /// Every row of the current version, file by file, without the rows deletion vectors
    /// remove.
    pub fn rows(&self) -> Result<Vec<Row>> {
        let snapshot = self.inner.snapshot().map_err(|e| failed(&self.dir, e))?;
        let files: Vec<_> = (snapshot.log_data().iter())
            .map(|f| (f.object_store_path(), f.deletion_vector_descriptor()))
            .collect();
        let mut rows = Vec::new();
        for (file, deleted) in files {
            let store = self.inner.object_store();
            let all = read_parquet(&self.runtime, &store, &self.dir, &file, &self.schema)?;
            match deleted {
                None => rows.extend(all),
                Some(dv) => {
                    let where_ = self.dir.join(file.as_ref()).display().to_string();
                    let deleted = super::dv::read(&self.dir, &dv, &where_)?;
                    rows.extend(
                        (all.into_iter().enumerate())
                            .filter(|(i, _)| !deleted.contains(*i as u64))
                            .map(|(_, row)| row),
                    );
                }
            }
        }
        Ok(rows)
    }

    /// Appends `rows` as one new version (a `WRITE` in append mode); returns it.
    pub fn append(&mut self, rows: &[Row]) -> Result<u64> {
        let batch = to_batch(&self.schema, &self.arrow, rows)?;
        let Table {
            runtime,
            inner,
            dir,
            ..
        } = self;
        runtime.block_on(async {
            let properties = files::properties(&batch, files::Codec::Snappy);
            let mut writer = (RecordBatchWriter::for_table(inner).map_err(|e| failed(dir, e))?)
                .with_writer_properties(properties);
            writer.write(batch).await.map_err(|e| failed(dir, e))?;
            let adds = writer.flush().await.map_err(|e| failed(dir, e))?;
            let operation = DeltaOperation::Write {
                mode: SaveMode::Append,
                partition_by: None,
                predicate: None,
            };
            let actions = adds.into_iter().map(Action::Add).collect();
            commit(inner, actions, operation, true, dir).await
        })
    }
}

/// The rows of the Parquet file at `file` in `store` (the table at `dir`), as `schema`.
pub(super) fn read_parquet(
    runtime: &Runtime,
    store: &ObjectStoreRef,
    dir: &Path,
    file: &StorePath,
    schema: &Schema,
) -> Result<Vec<Row>> {
    let (builder, where_) = open_parquet(runtime, store, dir, file)?;
    super::parquet_file::rows(builder, schema, &where_)
}

/// The Parquet file at `file` in `store` (the table at `dir`), read whole and opened; and its
/// path as errors show it.
pub(super) fn open_parquet(
    runtime: &Runtime,
    store: &ObjectStoreRef,
    dir: &Path,
    file: &StorePath,
) -> Result<(
    ParquetRecordBatchReaderBuilder<impl ChunkReader + 'static>,
    String,
)> {
    let where_ = dir.join(file.as_ref()).display().to_string();
    let bytes = runtime
        .block_on(async { store.get(file).await?.bytes().await })
        .map_err(|e| Error::new(ErrorKind::Io, format!("{where_}: {e}")))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| Error::new(ErrorKind::Format, format!("{where_}: {e}")))?;
    Ok((builder, where_))
}

/// A runtime for the calls on the existing table at `dir`, and the table's URL; an error when
/// `dir` holds no Delta table.
pub(super) fn existing(dir: &Path) -> Result<(Runtime, url::Url)> {
    if !Table::exists(dir) {
        let message = format!(
            "{} is not a Delta table (it has no _delta_log)",
            dir.display()
        );
        return Err(Error::new(ErrorKind::Io, message));
    }
    let url = deltalake::ensure_table_uri(dir.to_string_lossy()).map_err(|e| failed(dir, e))?;
    Ok((runtime(dir)?, url))
}

/// A runtime for one table's calls: current-thread, since each call is awaited to completion.
pub(super) fn runtime(dir: &Path) -> Result<Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("{}: tokio runtime: {e}", dir.display()),
            )
        })
}

/// Delta's columns for an Arrow schema of ours.
pub(super) fn delta_columns(arrow: &ArrowSchema, dir: &Path) -> Result<Vec<StructField>> {
    let delta = StructType::try_from_arrow(arrow).map_err(|e| failed(dir, e))?;
    Ok(delta.fields().cloned().collect())
}

/// The Arrow schema of a table we can read, or why we cannot.
fn readable_schema(table: &DeltaTable, dir: &Path) -> Result<ArrowSchema> {
    let snapshot = table.snapshot().map_err(|e| failed(dir, e))?;
    let protocol = snapshot.protocol();
    let metadata = snapshot.metadata();
    let unsupported = (protocol.reader_features().unwrap_or_default().iter())
        .map(|f| f.to_string())
        .find(|f| f == "columnMapping");
    if let Some(feature) = unsupported {
        return Err(unreadable(
            dir,
            format!("the table uses the Delta reader feature `{feature}`"),
        ));
    }
    let mapping = metadata.configuration().get("delta.columnMapping.mode");
    if mapping.is_some_and(|m| m != "none") {
        return Err(unreadable(dir, "the table uses column mapping".to_string()));
    }
    if !metadata.partition_columns().is_empty() {
        let message = format!(
            "the table is partitioned by {}",
            metadata.partition_columns().join(", ")
        );
        return Err(unreadable(dir, message));
    }
    let schema = snapshot.schema();
    schema
        .as_ref()
        .try_into_arrow()
        .map_err(|e: deltalake::arrow::error::ArrowError| unreadable(dir, e.to_string()))
}

pub(super) fn failed(dir: &Path, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Io, format!("Delta table {}: {e}", dir.display()))
}

fn unreadable(dir: &Path, why: String) -> Error {
    let message = format!(
        "Delta table {}: scdflow cannot read it: {why}",
        dir.display()
    );
    Error::new(ErrorKind::Format, message)
}

fn to_delta(e: Error) -> DeltaTableError {
    DeltaTableError::Generic(e.message().to_string())
}
