//! Parquet files as a source's input (`read_files(..., format => 'parquet')`), read with the
//! `parquet` crate delta-rs already builds (its Arrow reader), converted as Delta data files
//! are ([`super::batch`]).
//!
//! A Parquet file is read whole: its footer, written last, is what makes it readable, so a file
//! is one commit and never a growing one (a writer must put it in place whole, by a rename).
//! Columns are matched by name, case-insensitively, and cast to the declared types; rows are
//! numbered from 1 in the file, as lines are in a text file.

use super::batch::{from_batch, our_schema};
use crate::value::{Row, Schema};
use crate::{Error, ErrorKind, Result};
use deltalake::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use deltalake::parquet::file::reader::ChunkReader;
use std::fs::File;
use std::path::Path;

/// The rows of the Parquet file at `path`, laid out as `schema`.
pub fn read_parquet_file(path: &Path, schema: &Schema) -> Result<Vec<Row>> {
    rows(open(path)?, schema, &path.display().to_string())
}

/// The rows `builder`'s Parquet data holds, laid out as `schema`; `where_` names it in errors.
pub(super) fn rows<T: ChunkReader + 'static>(
    builder: ParquetRecordBatchReaderBuilder<T>,
    schema: &Schema,
    where_: &str,
) -> Result<Vec<Row>> {
    let reader =
        (builder.build()).map_err(|e| Error::new(ErrorKind::Format, format!("{where_}: {e}")))?;
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| Error::new(ErrorKind::Format, format!("{where_}: {e}")))?;
        rows.extend(from_batch(schema, &batch, where_)?);
    }
    Ok(rows)
}

/// The columns of the Parquet file at `path`, in our types; an error names a column of a type
/// scdflow does not read.
pub fn parquet_file_schema(path: &Path) -> Result<Schema> {
    let builder = open(path)?;
    our_schema(builder.schema())
        .map_err(|why| Error::new(ErrorKind::Format, format!("{}: {why}", path.display())))
}

fn open(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>> {
    let file = File::open(path).map_err(|e| Error::read(path, &e))?;
    ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| {
        let message = format!("{}: not a readable Parquet file: {e}", path.display());
        Error::new(ErrorKind::Format, message)
    })
}
