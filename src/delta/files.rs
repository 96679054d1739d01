//! The files a version of ours brings or drops, shared by every writer here: Parquet data
//! files (written by delta-rs's `RecordBatchWriter`, so with the statistics readers skip files
//! by), change-data files (Delta's `cdc` action) and the `remove` of a file.
//!
//! Every Parquet file here is written with [`properties`]. A maintained table's data files
//! are zstd at level 1 (arrow-rs's default; [`Codec::Zstd`]), as Iceberg and Paimon write
//! every file and as an LSM store compresses its lower levels harder (RocksDB's
//! `bottommost_compression`): data files are most of a table's bytes and are read again by
//! every reader of the table, and every reader of Delta tables reads zstd pages. Its
//! change-data files, and the files `scdflow sql` writes, are snappy ([`Codec::Snappy`]), as
//! delta-rs and Spark write. On the 1M-event SCD2 workload (`cargo bench --bench
//! delta_publish`, 10,000-event commits) a commit wrote 1.38 MB with every file snappy; 1.16
//! MB with merged files zstd (merges wrote 351 KB a commit where they wrote 518), the latency
//! unmoved; 1.05 MB with a version's new rows zstd too (298 KB of them snappy, 193 zstd), at a
//! p50 1–2 ms higher (52.5–56.0 ms against 52.3–54.4, three alternating runs each; an
//! earlier session's runs found 3–4 ms, 49.6–51.9 against 46.2–49.1). The change-data file
//! stays snappy: zstd there costs the commit's path again, and a commit's bytes are measured
//! against that file (its change rows), so the measured ratio would rise (to 3.7×, measured
//! then) though fewer bytes were written.
//!
//! Integer columns (and dates, times and timestamps) are `DELTA_BINARY_PACKED`, as
//! Parquet's v2 writers (Spark's, DuckDB's) write them: keys, sequences and times lie close to
//! their neighbours, so their differences pack into a few bits where a plain value takes eight
//! bytes before compression. Over 100 1,000-event SCD2 commits on a 900,000-row history the
//! bytes a commit wrote fell by a fifth (199 to 161 KB; its change-data file 57 to 45 KB).
//! Readers: Spark since 3.3 (every reader of a table with deletion vectors), delta-rs, Polars,
//! DuckDB, pyarrow. Other columns get a dictionary only where their values repeat. Parquet's
//! Java writer drops a dictionary that does not make the data smaller; arrow-rs's keeps
//! building it up to its page-size limit (1 MB), so a column of distinct values (keys,
//! sequences, free text) is interned whole for nothing: that interning was 57% of the time a
//! 10,000-event SCD2 commit spent writing its data files, and its pages are larger than plain
//! ones.

use super::batch::to_batch_with;
use super::table::failed;
use crate::engine::changefeed::ChangeType;
use crate::value::{DataType, Row, Schema};
use crate::{Error, Result};
use deltalake::arrow::array::{Array, AsArray, RecordBatch, StringArray};
use deltalake::arrow::datatypes::{DataType as ArrowType, SchemaRef};
use deltalake::kernel::{Add, AddCDCFile, LogicalFileView, Remove};
use deltalake::parquet::arrow::ArrowWriter;
use deltalake::parquet::basic::{Compression, Encoding, ZstdLevel};
use deltalake::parquet::errors::ParquetError;
use deltalake::parquet::file::properties::WriterProperties;
use deltalake::parquet::schema::types::ColumnPath;
use deltalake::writer::{DeltaWriter, RecordBatchWriter};
use std::collections::{HashMap, HashSet};
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
    codec: Codec,
) -> Result<Vec<Add>> {
    runtime
        .block_on(async {
            let properties = properties(&batch, codec);
            let mut writer = RecordBatchWriter::try_new(url, arrow, None, None)?
                .with_writer_properties(properties);
            writer.write(batch).await?;
            writer.flush().await
        })
        .map_err(|e| failed(dir, e))
}

/// How a file's pages are compressed (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Codec {
    /// A change-data file, or a data file of `scdflow sql`.
    Snappy,
    /// A maintained table's data file.
    Zstd,
}

/// How to write `batch` as Parquet (see the module docs): compressed by `codec`; integers,
/// dates, times and timestamps delta-packed; a dictionary for each other column whose values
/// repeat ([`repeats`]; and for the types not sampled: booleans, nested values).
pub(super) fn properties(batch: &RecordBatch, codec: Codec) -> WriterProperties {
    let compression = match codec {
        Codec::Snappy => Compression::SNAPPY,
        Codec::Zstd => Compression::ZSTD(ZstdLevel::default()),
    };
    let mut builder = WriterProperties::builder()
        .set_created_by(format!("scdflow {}", env!("CARGO_PKG_VERSION")))
        .set_compression(compression);
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        let path = ColumnPath::new(vec![field.name().clone()]);
        if delta_packed(field.data_type()) {
            builder = builder
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
        } else if !repeats(column.as_ref()) {
            builder = builder.set_column_dictionary_enabled(path, false);
        }
    }
    builder.build()
}

/// Whether a column of `data_type` is written `DELTA_BINARY_PACKED`: its values are stored as
/// integers in Parquet.
fn delta_packed(data_type: &ArrowType) -> bool {
    use ArrowType::{Date32, Date64, Time32, Time64, Timestamp};
    data_type.is_integer()
        || matches!(
            data_type,
            Date32 | Date64 | Timestamp(..) | Time32(_) | Time64(_)
        )
}

/// Positions sampled per column to choose its encoding: a column of more rows is sampled at
/// an even stride. Reading the first 65,536 positions hashed every value of a 30,000-row
/// change-data batch: 2% of a followed 10,000-event SCD2 step's CPU over its four Parquet
/// files, 0.5% sampled.
const DICTIONARY_SAMPLE: usize = 1 << 12;

/// The share of distinct values under which a dictionary pays: its entries plus an index of
/// `log2(distinct)` bits per value against the plain values.
const DICTIONARY_BELOW: f64 = 0.75;

/// Whether `column`'s values repeat enough for a dictionary: fewer than [`DICTIONARY_BELOW`]
/// of its `n` non-null values distinct, counted, or estimated from a sample.
///
/// A sample shows more of its values distinct than the column has (a value repeated across
/// the column is seldom drawn twice), so it is not compared with the threshold itself. A
/// share `s` of a column whose `D` distinct values each appear `n / D` times shows `D (1 -
/// (1 - s)^(n / D))` of them on average, which grows with `D`: the column has fewer than `T`
/// distinct values about when the sample shows fewer than `T (1 - (1 - s)^(n / T))` (`T`
/// itself when the sample is the column). A column of distinct values shows every value it
/// draws, so it never gets a dictionary; near the threshold either encoding is about as large.
fn repeats(column: &dyn Array) -> bool {
    let step = column.len().div_ceil(DICTIONARY_SAMPLE).max(1);
    let sampled = match column.data_type() {
        ArrowType::Utf8 => {
            let strings = column.as_string::<i32>();
            distinct(column, step, |i| strings.value(i).as_bytes())
        }
        ArrowType::LargeUtf8 => {
            let strings = column.as_string::<i64>();
            distinct(column, step, |i| strings.value(i).as_bytes())
        }
        primitive => match primitive.primitive_width() {
            Some(width) => {
                let data = column.to_data();
                let values = &data.buffers()[0].as_slice()[data.offset() * width..];
                distinct(column, step, |i| &values[i * width..(i + 1) * width])
            }
            None => return true,
        },
    };
    let Some((distinct, drawn)) = sampled else {
        return true;
    };
    let n = (column.len() - column.null_count()) as f64;
    let (threshold, share) = (DICTIONARY_BELOW * n, (drawn as f64 / n).min(1.0));
    (distinct as f64) < threshold * (1.0 - (1.0 - share).powf(n / threshold))
}

/// Distinct values among `column`'s non-null ones at every `step`-th position, and how many
/// those are (`None` when all are null).
fn distinct<'a>(
    column: &dyn Array,
    step: usize,
    value: impl Fn(usize) -> &'a [u8],
) -> Option<(usize, usize)> {
    let capacity = column.len().div_ceil(step);
    let mut seen: HashSet<&[u8], foldhash::fast::FixedState> =
        HashSet::with_capacity_and_hasher(capacity, foldhash::fast::FixedState::with_seed(0));
    let mut values = 0;
    for i in (0..column.len())
        .step_by(step)
        .filter(|&i| column.is_valid(i))
    {
        seen.insert(value(i));
        values += 1;
    }
    (values > 0).then_some((seen.len(), values))
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
    write_feed_batch(dir, arrow, feed_batch(feed, arrow, changes)?)
}

/// `changes` as the record batch of a change-data file ([`write_feed`]).
pub(super) fn feed_batch(
    feed: &Schema,
    arrow: &SchemaRef,
    changes: &[(ChangeType, Row)],
) -> Result<RecordBatch> {
    let kinds = StringArray::from_iter_values(changes.iter().map(|(kind, _)| kind.as_str()));
    let own = &feed.columns[..feed.columns.len() - 1];
    let rows = changes.iter().map(|(_, row)| row.as_row_ref());
    to_batch_with(own, arrow, rows, vec![Arc::new(kinds)])
}

/// Writes `batch` (made by [`feed_batch`]) as a change-data file, as [`write_feed`] does.
pub(super) fn write_feed_batch(
    dir: &Path,
    arrow: &SchemaRef,
    batch: RecordBatch,
) -> Result<AddCDCFile> {
    let local = dir.join("_change_data");
    std::fs::create_dir_all(&local).map_err(|e| Error::write(&local, &e))?;
    let name = format!("cdc-{}.snappy.parquet", uuid::Uuid::new_v4());
    let path = local.join(&name);
    let file = std::fs::File::create(&path).map_err(|e| Error::write(&path, &e))?;
    let properties = properties(&batch, Codec::Snappy);
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

/// Marks the statistics of `add` (a file of the table at `dir` that now has a deletion vector)
/// wide, `tightBounds: false`: its minima, maxima and null counts were taken over rows some of
/// which are deleted now, and the protocol reads statistics without the flag as tight, exact
/// over the file's valid rows, which a reader may answer `MIN`, `MAX` or a null count from
/// (Spark's DV writes mark them so too). `numRecords` stays the file's physical rows, as the
/// protocol asks of a file with a deletion vector. Statistics marked already are kept as they
/// are; a file without statistics has none to mark.
pub(super) fn widen(add: &mut Add, dir: &Path) -> Result<()> {
    let Some(stats) = add.stats.as_deref() else {
        return Ok(());
    };
    let mut parsed: serde_json::Map<String, serde_json::Value> = serde_json::from_str(stats)
        .map_err(|e| {
            failed(
                dir,
                format!("the statistics of {} do not parse: {e}", add.path),
            )
        })?;
    if parsed.get(TIGHT_BOUNDS) == Some(&serde_json::Value::Bool(false)) {
        return Ok(());
    }
    parsed.insert(TIGHT_BOUNDS.to_string(), false.into());
    add.stats = Some(serde_json::Value::Object(parsed).to_string());
    Ok(())
}

/// The per-file statistic that says whether the others are exact (see [`widen`]).
const TIGHT_BOUNDS: &str = "tightBounds";

#[cfg(test)]
mod tests {
    use super::*;
    use deltalake::arrow::array::{ArrayRef, BooleanArray, Int64Array};
    use deltalake::arrow::datatypes::{Field, Schema as ArrowSchema};

    #[test]
    fn integers_are_delta_packed_and_other_columns_interned_where_values_repeat() {
        let n = 1000;
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("key", Arc::new(Int64Array::from_iter_values(0..n))),
            (
                "status",
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| ["a", "b"][i as usize % 2]),
                )),
            ),
            (
                "name",
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| format!("v{i}")),
                )),
            ),
            // One row in three holds a value, each distinct; nulls are not values.
            (
                "some",
                Arc::new(Int64Array::from_iter(
                    (0..n).map(|i| (i % 3 == 0).then_some(i)),
                )),
            ),
            (
                "half",
                Arc::new(Int64Array::from_iter_values((0..n).map(|i| i / 2))),
            ),
            (
                "nothing",
                Arc::new(Int64Array::from(vec![None::<i64>; n as usize])),
            ),
            (
                "flag",
                Arc::new(BooleanArray::from_iter((0..n).map(|i| Some(i % 2 == 0)))),
            ),
        ];
        let schema = ArrowSchema::new(
            (columns.iter())
                .map(|(name, c)| Field::new(*name, c.data_type().clone(), true))
                .collect::<Vec<_>>(),
        );
        let batch = RecordBatch::try_new(
            Arc::new(schema),
            columns.iter().map(|c| c.1.clone()).collect(),
        )
        .unwrap();
        let properties = properties(&batch, Codec::Snappy);
        let path = |name: &str| ColumnPath::new(vec![name.to_string()]);
        let dictionary = |name: &str| properties.dictionary_enabled(&path(name));
        assert!(!dictionary("name"));
        assert!(dictionary("status") && dictionary("flag"));
        // Integers are delta-packed whatever their values, never interned.
        for int in ["key", "some", "half", "nothing"] {
            assert!(!dictionary(int), "{int}");
            assert_eq!(
                properties.encoding(&path(int)),
                Some(Encoding::DELTA_BINARY_PACKED)
            );
        }
        assert_eq!(properties.encoding(&path("name")), None);
        assert_eq!(
            properties.compression(&ColumnPath::new(vec!["key".into()])),
            Compression::SNAPPY
        );
        let merged = super::properties(&batch, Codec::Zstd);
        assert_eq!(
            merged.compression(&ColumnPath::new(vec!["name".into()])),
            Compression::ZSTD(ZstdLevel::default())
        );
        assert_eq!(
            merged.encoding(&path("key")),
            properties.encoding(&path("key"))
        );
    }

    #[test]
    fn a_column_larger_than_the_sample_is_judged_by_its_own_repeats() {
        use rand::seq::SliceRandom;
        use rand::SeedableRng;
        let n = 15 * DICTIONARY_SAMPLE;
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(&mut rand::rngs::ChaCha8Rng::seed_from_u64(7));
        // Each value three times: a third of the values distinct, yet most of a sample's.
        let thrice = StringArray::from_iter_values(order.iter().map(|i| format!("v{}", i / 3)));
        let (sampled, drawn) = distinct(&thrice, 15, |i| thrice.value(i).as_bytes()).unwrap();
        assert!(
            sampled as f64 > DICTIONARY_BELOW * drawn as f64,
            "{sampled} of {drawn}"
        );
        assert!(repeats(&thrice));
        let unique = StringArray::from_iter_values(order.iter().map(|i| format!("v{i}")));
        assert!(!repeats(&unique));
        // Half distinct (each value twice) still pays; so do runs of a value, in order.
        let twice = StringArray::from_iter_values(order.iter().map(|i| format!("v{}", i / 2)));
        assert!(repeats(&twice));
        let runs = StringArray::from_iter_values((0..n).map(|i| format!("v{}", i / 20)));
        assert!(repeats(&runs));
    }
}
