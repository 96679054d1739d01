//! Rows ↔ Arrow record batches, the form Parquet files are written and read in.
//!
//! Our types map to Arrow's as Delta Lake's do to Parquet: INT → Int32, BIGINT → Int64, DOUBLE →
//! Float64, BOOLEAN, STRING → Utf8, DATE → Date32, TIMESTAMP → Timestamp(µs, "UTC"), STRUCT →
//! Struct, ARRAY → List. Every column is nullable.
//!
//! Reading accepts what other writers use for the same logical type (LargeUtf8 and Utf8View,
//! narrower integers, Float32, timestamps of any unit or time zone, LargeList): each column is
//! cast to the canonical Arrow type first, so one decoder per type remains. A value the cast
//! cannot carry (an integer over 32 bits into INT) is an error naming the column.

use crate::value::{Column, DataType, Datum, Packer, Row, RowRef, Schema, F64};
use crate::{Error, ErrorKind, Result};
use deltalake::arrow::array::{
    Array, ArrayRef, BooleanArray, BooleanBuilder, Date32Array, Date32Builder, Float64Array,
    Float64Builder, Int32Array, Int32Builder, Int64Array, Int64Builder, ListArray, RecordBatch,
    StringArray, StringBuilder, StructArray, TimestampMicrosecondArray,
    TimestampMicrosecondBuilder,
};
use deltalake::arrow::buffer::{NullBuffer, OffsetBuffer};
use deltalake::arrow::compute::cast;
use deltalake::arrow::datatypes::{
    DataType as ArrowType, Field, Fields, Schema as ArrowSchema, SchemaRef, TimeUnit,
};
use std::sync::Arc;

/// The Arrow type a column of type `ty` is written as; `None` for the type of a bare NULL,
/// which no table column can have.
pub fn arrow_type(ty: &DataType) -> Option<ArrowType> {
    Some(match ty {
        DataType::Int => ArrowType::Int32,
        DataType::BigInt => ArrowType::Int64,
        DataType::Double => ArrowType::Float64,
        DataType::Boolean => ArrowType::Boolean,
        DataType::String => ArrowType::Utf8,
        DataType::Date => ArrowType::Date32,
        DataType::Timestamp => ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        DataType::Struct(fields) => ArrowType::Struct(struct_fields(fields)?),
        DataType::Array(element) => {
            ArrowType::List(Arc::new(Field::new("element", arrow_type(element)?, true)))
        }
        DataType::Null => return None,
    })
}

fn struct_fields(fields: &[(String, DataType)]) -> Option<Fields> {
    fields
        .iter()
        .map(|(name, ty)| Some(Field::new(name, arrow_type(ty)?, true)))
        .collect::<Option<Vec<_>>>()
        .map(Fields::from)
}

/// The Arrow schema of `schema`, or an error naming a column of the bare NULL type.
pub fn arrow_schema(schema: &Schema) -> Result<SchemaRef> {
    let fields = (schema.columns.iter())
        .map(|c| {
            let ty = arrow_type(&c.ty).ok_or_else(|| untyped(c))?;
            Ok(Field::new(&c.name, ty, true))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(ArrowSchema::new(fields)))
}

fn untyped(column: &Column) -> Error {
    let message = format!(
        "column `{}` has no type (every value is NULL): CAST it to the type it should have",
        column.name
    );
    Error::new(ErrorKind::Validation, message)
}

/// Our type for an Arrow type another writer used, or `None` when we have none for it.
pub fn our_type(ty: &ArrowType) -> Option<DataType> {
    Some(match ty {
        ArrowType::Int8 | ArrowType::Int16 | ArrowType::Int32 => DataType::Int,
        ArrowType::Int64 => DataType::BigInt,
        ArrowType::Float32 | ArrowType::Float64 => DataType::Double,
        ArrowType::Boolean => DataType::Boolean,
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => DataType::String,
        ArrowType::Date32 | ArrowType::Date64 => DataType::Date,
        ArrowType::Timestamp(_, _) => DataType::Timestamp,
        ArrowType::Struct(fields) => DataType::Struct(
            fields
                .iter()
                .map(|f| Some((f.name().clone(), our_type(f.data_type())?)))
                .collect::<Option<Vec<_>>>()?,
        ),
        ArrowType::List(f) | ArrowType::LargeList(f) | ArrowType::ListView(f) => {
            DataType::Array(Box::new(our_type(f.data_type())?))
        }
        _ => return None,
    })
}

/// Our schema for an Arrow schema; the error names the first column of a type we lack.
pub fn our_schema(schema: &ArrowSchema) -> Result<Schema, String> {
    let columns = (schema.fields().iter())
        .map(|f| match our_type(f.data_type()) {
            Some(ty) => Ok((f.name().clone(), ty)),
            None => Err(format!(
                "column `{}` has type {}, which scdflow does not read",
                f.name(),
                f.data_type()
            )),
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Schema::new(columns))
}

/// `rows` (each laid out as `schema`) as one record batch of `arrow` (from [`arrow_schema`]).
pub fn to_batch(schema: &Schema, arrow: &SchemaRef, rows: &[Row]) -> Result<RecordBatch> {
    to_batch_with(
        &schema.columns,
        arrow,
        rows.iter().map(Row::as_row_ref),
        Vec::new(),
    )
}

/// The rows `rows` yields (each laid out as `columns`) as one record batch of `arrow`, with
/// `extra` as its last columns. Each row is decoded once, in order: a packed row reaches its
/// `i`th value only through the ones before it.
pub fn to_batch_with<'r>(
    columns: &[Column],
    arrow: &SchemaRef,
    rows: impl Iterator<Item = RowRef<'r>>,
    extra: Vec<ArrayRef>,
) -> Result<RecordBatch> {
    let rows_hint = rows.size_hint().0;
    let mut builders: Vec<Builder<'r>> = (columns.iter())
        .map(|c| Builder::new(&c.ty, rows_hint))
        .collect();
    for row in rows {
        let mut values = row.iter();
        for builder in &mut builders {
            builder.push(values.next().unwrap_or(Datum::Null));
        }
    }
    let arrays = (columns.iter().zip(builders))
        .map(|(c, builder)| builder.finish(&c.ty))
        .chain(extra)
        .collect();
    RecordBatch::try_new(arrow.clone(), arrays).map_err(internal)
}

/// A column's values as they are read from the rows: straight into Arrow's builder for a
/// scalar type, so no vector of a batch's datums is made in between; nested types go through
/// [`to_array`]. A 26,000-row batch of five columns (a 10,000-event SCD2 commit's changes) went
/// through 3 MB of datums: made between writes of its change-data file, as a commit makes it,
/// it took 1.9-2.1 ms with them and 1.0-1.1 without, and the file's writing 3.0-3.2 ms after it
/// and 2.6-2.8 (a test of its own, eight rounds each, two runs).
enum Builder<'r> {
    Int(Int32Builder),
    BigInt(Int64Builder),
    Double(Float64Builder),
    Boolean(BooleanBuilder),
    String(StringBuilder),
    Date(Date32Builder),
    Timestamp(TimestampMicrosecondBuilder),
    Datums(Vec<Datum<'r>>),
}

impl<'r> Builder<'r> {
    fn new(ty: &DataType, rows: usize) -> Builder<'r> {
        match ty {
            DataType::Int => Builder::Int(Int32Builder::with_capacity(rows)),
            DataType::BigInt => Builder::BigInt(Int64Builder::with_capacity(rows)),
            DataType::Double => Builder::Double(Float64Builder::with_capacity(rows)),
            DataType::Boolean => Builder::Boolean(BooleanBuilder::with_capacity(rows)),
            // Bytes guessed at 8 a value; the builder grows past that.
            DataType::String => Builder::String(StringBuilder::with_capacity(rows, 8 * rows)),
            DataType::Date => Builder::Date(Date32Builder::with_capacity(rows)),
            DataType::Timestamp => {
                Builder::Timestamp(TimestampMicrosecondBuilder::with_capacity(rows))
            }
            _ => Builder::Datums(Vec::with_capacity(rows)),
        }
    }

    /// Appends `d`; a value of another type than the column's is NULL.
    fn push(&mut self, d: Datum<'r>) {
        match (self, d) {
            (Builder::Int(b), Datum::Int(v)) => b.append_option(i32::try_from(v).ok()),
            (Builder::BigInt(b), Datum::Int(v)) => b.append_value(v),
            (Builder::Double(b), Datum::Double(v)) => b.append_value(v.0),
            (Builder::Boolean(b), Datum::Bool(v)) => b.append_value(v),
            (Builder::String(b), Datum::Str(v)) => b.append_value(v),
            (Builder::Date(b), Datum::Date(v)) => b.append_value(v),
            (Builder::Timestamp(b), Datum::Timestamp(v)) => b.append_value(v),
            (Builder::Datums(datums), d) => datums.push(d),
            (Builder::Int(b), _) => b.append_null(),
            (Builder::BigInt(b), _) => b.append_null(),
            (Builder::Double(b), _) => b.append_null(),
            (Builder::Boolean(b), _) => b.append_null(),
            (Builder::String(b), _) => b.append_null(),
            (Builder::Date(b), _) => b.append_null(),
            (Builder::Timestamp(b), _) => b.append_null(),
        }
    }

    fn finish(self, ty: &DataType) -> ArrayRef {
        match self {
            Builder::Int(mut b) => Arc::new(b.finish()),
            Builder::BigInt(mut b) => Arc::new(b.finish()),
            Builder::Double(mut b) => Arc::new(b.finish()),
            Builder::Boolean(mut b) => Arc::new(b.finish()),
            Builder::String(mut b) => Arc::new(b.finish()),
            Builder::Date(mut b) => Arc::new(b.finish()),
            Builder::Timestamp(mut b) => Arc::new(b.finish().with_timezone("UTC")),
            Builder::Datums(datums) => to_array(ty, &datums),
        }
    }
}

fn internal(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Internal, format!("arrow: {e}"))
}

/// One column's values as an Arrow array of [`arrow_type`]`(ty)`.
fn to_array(ty: &DataType, datums: &[Datum<'_>]) -> ArrayRef {
    let datums = datums.iter().copied();
    match ty {
        DataType::Int => Arc::new(
            datums
                .map(|d| match d {
                    Datum::Int(v) => i32::try_from(v).ok(),
                    _ => None,
                })
                .collect::<Int32Array>(),
        ),
        DataType::BigInt => Arc::new(
            datums
                .map(|d| match d {
                    Datum::Int(v) => Some(v),
                    _ => None,
                })
                .collect::<Int64Array>(),
        ),
        DataType::Double => Arc::new(
            datums
                .map(|d| match d {
                    Datum::Double(v) => Some(v.0),
                    _ => None,
                })
                .collect::<Float64Array>(),
        ),
        DataType::Boolean => Arc::new(
            datums
                .map(|d| match d {
                    Datum::Bool(v) => Some(v),
                    _ => None,
                })
                .collect::<BooleanArray>(),
        ),
        DataType::String => Arc::new(
            datums
                .map(|d| match d {
                    Datum::Str(v) => Some(v),
                    _ => None,
                })
                .collect::<StringArray>(),
        ),
        DataType::Date => Arc::new(
            datums
                .map(|d| match d {
                    Datum::Date(v) => Some(v),
                    _ => None,
                })
                .collect::<Date32Array>(),
        ),
        DataType::Timestamp => Arc::new(
            datums
                .map(|d| match d {
                    Datum::Timestamp(v) => Some(v),
                    _ => None,
                })
                .collect::<TimestampMicrosecondArray>()
                .with_timezone("UTC"),
        ),
        DataType::Struct(fields) => {
            let rows: Vec<Option<RowRef>> = datums
                .map(|d| match d {
                    Datum::Struct(r) => Some(r),
                    _ => None,
                })
                .collect();
            let nulls = NullBuffer::from_iter(rows.iter().map(Option::is_some));
            let children = (fields.iter().enumerate())
                .map(|(i, (_, t))| {
                    let field: Vec<Datum> = (rows.iter())
                        .map(|r| r.and_then(|r| r.get(i)).unwrap_or(Datum::Null))
                        .collect();
                    to_array(t, &field)
                })
                .collect();
            let fields = struct_fields(fields).expect("a STRUCT column has typed fields");
            Arc::new(StructArray::new(fields, children, Some(nulls)))
        }
        DataType::Array(element) => {
            let lists: Vec<Option<RowRef>> = datums
                .map(|d| match d {
                    Datum::Array(r) => Some(r),
                    _ => None,
                })
                .collect();
            let nulls = NullBuffer::from_iter(lists.iter().map(Option::is_some));
            let offsets =
                OffsetBuffer::from_lengths(lists.iter().map(|l| l.map_or(0, |l| l.len())));
            let elements: Vec<Datum> = lists.iter().flatten().flat_map(|l| l.iter()).collect();
            let values = to_array(element, &elements);
            let field = Arc::new(Field::new(
                "element",
                arrow_type(element).expect("an ARRAY column has a typed element"),
                true,
            ));
            Arc::new(ListArray::new(field, offsets, values, Some(nulls)))
        }
        DataType::Null => Arc::new(deltalake::arrow::array::NullArray::new(datums.count())),
    }
}

/// The rows of `batch`, laid out as `schema`: columns are found by name (case-insensitively)
/// and cast to the canonical Arrow type of their column. `where_` names the file in errors.
pub fn from_batch(schema: &Schema, batch: &RecordBatch, where_: &str) -> Result<Vec<Row>> {
    let batch_schema = batch.schema();
    let mut columns = Vec::with_capacity(schema.columns.len());
    for c in &schema.columns {
        let Some((i, _)) = (batch_schema.fields().iter().enumerate())
            .find(|(_, f)| f.name().eq_ignore_ascii_case(&c.name))
        else {
            let message = format!("{where_}: no column `{}`", c.name);
            return Err(Error::new(ErrorKind::Format, message));
        };
        let target = arrow_type(&c.ty).ok_or_else(|| untyped(c))?;
        let cast = cast(batch.column(i), &target).map_err(|e| {
            let message = format!(
                "{where_}: column `{}` cannot be read as {}: {e}",
                c.name, c.ty
            );
            Error::new(ErrorKind::Format, message)
        })?;
        columns.push(cast);
    }
    let mut packer = Packer::new();
    let mut rows = Vec::with_capacity(batch.num_rows());
    for r in 0..batch.num_rows() {
        for (c, array) in schema.columns.iter().zip(&columns) {
            push_value(&mut packer, &c.ty, array.as_ref(), r);
        }
        rows.push(packer.finish());
    }
    Ok(rows)
}

/// Pushes element `i` of `array` (of [`arrow_type`]`(ty)`) onto `packer`.
fn push_value(packer: &mut Packer, ty: &DataType, array: &dyn Array, i: usize) {
    if array.is_null(i) {
        packer.push_datum(Datum::Null);
        return;
    }
    let any = array.as_any();
    let datum = match ty {
        DataType::Int => Datum::Int(i64::from(downcast::<Int32Array>(any).value(i))),
        DataType::BigInt => Datum::Int(downcast::<Int64Array>(any).value(i)),
        DataType::Double => Datum::Double(F64(downcast::<Float64Array>(any).value(i))),
        DataType::Boolean => Datum::Bool(downcast::<BooleanArray>(any).value(i)),
        DataType::String => Datum::Str(downcast::<StringArray>(any).value(i)),
        DataType::Date => Datum::Date(downcast::<Date32Array>(any).value(i)),
        DataType::Timestamp => {
            Datum::Timestamp(downcast::<TimestampMicrosecondArray>(any).value(i))
        }
        DataType::Struct(fields) => {
            let array = downcast::<StructArray>(any);
            let mut inner = Packer::new();
            for (f, (_, t)) in fields.iter().enumerate() {
                push_value(&mut inner, t, array.column(f).as_ref(), i);
            }
            let row = inner.finish();
            packer.push_datum(Datum::Struct(row.as_row_ref()));
            return;
        }
        DataType::Array(element) => {
            let list = downcast::<ListArray>(any).value(i);
            let mut inner = Packer::new();
            for e in 0..list.len() {
                push_value(&mut inner, element, list.as_ref(), e);
            }
            let row = inner.finish();
            packer.push_datum(Datum::Array(row.as_row_ref()));
            return;
        }
        DataType::Null => Datum::Null,
    };
    packer.push_datum(datum);
}

/// The cast in [`from_batch`] made every column its canonical type.
fn downcast<T: 'static>(any: &dyn std::any::Any) -> &T {
    any.downcast_ref::<T>()
        .expect("a column cast to its canonical Arrow type")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use proptest::prelude::*;

    fn typed_value(ty: &DataType) -> BoxedStrategy<Value> {
        let some = match ty {
            DataType::Int => any::<i32>().prop_map(|v| Value::Int(v.into())).boxed(),
            DataType::BigInt => any::<i64>().prop_map(Value::Int).boxed(),
            DataType::Double => any::<f64>().prop_map(|v| Value::Double(F64(v))).boxed(),
            DataType::Boolean => any::<bool>().prop_map(Value::Bool).boxed(),
            DataType::String => ".{0,8}".prop_map(Value::Str).boxed(),
            DataType::Date => any::<i32>().prop_map(Value::Date).boxed(),
            DataType::Timestamp => any::<i64>().prop_map(Value::Timestamp).boxed(),
            DataType::Struct(fields) => fields
                .iter()
                .map(|(_, t)| typed_value(t))
                .collect::<Vec<_>>()
                .prop_map(Value::Struct)
                .boxed(),
            DataType::Array(e) => prop::collection::vec(typed_value(e), 0..3)
                .prop_map(Value::Array)
                .boxed(),
            DataType::Null => Just(Value::Null).boxed(),
        };
        prop_oneof![1 => Just(Value::Null), 4 => some].boxed()
    }

    fn schema() -> Schema {
        let point = DataType::Struct(vec![
            ("x".into(), DataType::Int),
            ("tags".into(), DataType::Array(Box::new(DataType::String))),
        ]);
        Schema::new([
            ("i".to_string(), DataType::Int),
            ("l".into(), DataType::BigInt),
            ("d".into(), DataType::Double),
            ("b".into(), DataType::Boolean),
            ("s".into(), DataType::String),
            ("day".into(), DataType::Date),
            ("ts".into(), DataType::Timestamp),
            ("p".into(), point.clone()),
            ("ps".into(), DataType::Array(Box::new(point))),
        ])
    }

    proptest! {
        #[test]
        fn rows_survive_a_record_batch(rows in prop::collection::vec(
            schema().columns.iter().map(|c| typed_value(&c.ty)).collect::<Vec<_>>(), 0..20)
        ) {
            let schema = schema();
            let packed: Vec<Row> = rows.iter().map(|r| {
                let mut p = Packer::new();
                r.iter().for_each(|v| { p.push(v); });
                p.finish()
            }).collect();
            let arrow = arrow_schema(&schema).unwrap();
            let batch = to_batch(&schema, &arrow, &packed).unwrap();
            prop_assert_eq!(from_batch(&schema, &batch, "test").unwrap(), packed);
            prop_assert_eq!(our_schema(&arrow).unwrap(), schema);
        }
    }

    #[test]
    fn other_writers_types_are_cast_and_missing_columns_named() {
        let batch = RecordBatch::try_from_iter([
            (
                "ID",
                Arc::new(deltalake::arrow::array::Int16Array::from(vec![1, 2])) as ArrayRef,
            ),
            (
                "name",
                Arc::new(deltalake::arrow::array::LargeStringArray::from(vec![
                    Some("a"),
                    None,
                ])),
            ),
        ])
        .unwrap();
        let schema = Schema::new([
            ("id".to_string(), DataType::BigInt),
            ("name".into(), DataType::String),
        ]);
        let rows = from_batch(&schema, &batch, "f.parquet").unwrap();
        assert_eq!(rows[0].to_values(), [Value::Int(1), Value::Str("a".into())]);
        assert_eq!(rows[1].to_values(), [Value::Int(2), Value::Null]);
        let wider = Schema::new([("city".to_string(), DataType::String)]);
        let e = from_batch(&wider, &batch, "f.parquet").unwrap_err();
        assert_eq!(e.message(), "f.parquet: no column `city`");
    }
}
