//! The `sql_equivalent` of every seed vector with flow_kind auto_cdc and SCD type 1 or 2
//! (spec/seed_vectors.json: T1/T1_split/T2 share one text, T3/T3_split, T4/T4_split, T11),
//! wrapped with source and target declarations built from their `source_schema`.

use super::{parse_ok, USERS};
use crate::plan::{PartialUpdates, ScdType, SourceInput, DEFAULT_TOMBSTONE_GC_SECONDS};
use crate::value::{DataType, Schema};
use std::path::Path;

const T1_T2: &str = r#"CREATE FLOW apply_cdc AS AUTO CDC INTO users_current
FROM STREAM(users_cdf)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
APPLY AS TRUNCATE WHEN operation = "TRUNCATE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 1;"#;

const T3: &str = r#"CREATE FLOW apply_cdc AS AUTO CDC INTO users_history
FROM STREAM(users_cdf)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 2;"#;

const T4: &str = r#"CREATE FLOW apply_cdc AS AUTO CDC INTO users_history
FROM STREAM(users_cdf)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 2
TRACK HISTORY ON * EXCEPT (city);"#;

const T11: &str = r#"CREATE FLOW cdc_target AS AUTO CDC INTO cdc_target
FROM STREAM(cdc_events)
KEYS (id)
APPLY AS DELETE WHEN op = 'DELETE'
SEQUENCE BY version
COLUMNS * EXCEPT (op)
STORED AS SCD TYPE 1;"#;

fn users_schema() -> Schema {
    Schema::new([
        ("userId".to_string(), DataType::Int),
        ("name".to_string(), DataType::String),
        ("city".to_string(), DataType::String),
    ])
}

#[test]
fn t1_t2_scd1_with_delete_and_truncate() {
    let p = parse_ok(&format!(
        "{USERS}CREATE STREAMING TABLE users_current;\n{T1_T2}"
    ));
    assert_eq!(p.tables.len(), 1);
    let SourceInput::Files { path, declared, .. } = &p.tables[0].input else {
        panic!("read_files input expected");
    };
    assert_eq!(path, Path::new("/p/data/users.csv"));
    assert!(declared);
    let target = &p.targets[0];
    assert_eq!(target.name, "users_current");
    assert_eq!(target.schema, users_schema());
    assert_eq!(
        (target.image_len, target.keys.clone(), target.scd),
        (3, vec![0], ScdType::Type1)
    );
    assert_eq!(target.sequence_type, DataType::Int);
    assert_eq!(target.tombstone_gc_seconds, DEFAULT_TOMBSTONE_GC_SECONDS);
    assert!(!target.partial);
    let flow = &p.flows[0];
    assert_eq!(
        (flow.name.as_str(), flow.target, flow.source, flow.line),
        ("apply_cdc", 0, 0, 3)
    );
    assert_eq!(
        (flow.keys.clone(), flow.columns.clone()),
        (vec![0], vec![0, 1, 2])
    );
    assert_eq!(flow.sequence.column_index(), Some(4));
    assert_eq!(flow.partial, PartialUpdates::Off);
    assert!(!flow.once);
    let delete = flow.delete_when.as_ref().expect("delete predicate");
    let row = |op: &str| {
        use crate::value::Value;
        vec![
            Value::Int(1),
            Value::Null,
            Value::Null,
            Value::Str(op.into()),
            Value::Int(1),
        ]
    };
    assert_eq!(delete.eval_predicate_values(&row("DELETE")), Ok(true));
    assert_eq!(delete.eval_predicate_values(&row("INSERT")), Ok(false));
    let truncate = flow.truncate_when.as_ref().expect("truncate predicate");
    assert_eq!(truncate.eval_predicate_values(&row("TRUNCATE")), Ok(true));
}

#[test]
fn t3_scd2_adds_interval_columns_of_the_sequence_type() {
    let p = parse_ok(&format!(
        "{USERS}CREATE STREAMING TABLE users_history;\n{T3}"
    ));
    let target = &p.targets[0];
    let mut expected = users_schema();
    expected.columns.extend(
        Schema::new([
            ("__START_AT".to_string(), DataType::Int),
            ("__END_AT".to_string(), DataType::Int),
        ])
        .columns,
    );
    assert_eq!(target.schema, expected);
    assert_eq!((target.image_len, target.scd), (3, ScdType::Type2));
    assert_eq!(target.tracked, vec![true, true, true]);
    assert!(p.flows[0].truncate_when.is_none());
}

#[test]
fn t4_track_history_except_city() {
    let p = parse_ok(&format!(
        "{USERS}CREATE STREAMING TABLE users_history;\n{T4}"
    ));
    assert_eq!(p.targets[0].tracked, vec![true, true, false]);
    assert!(p.warnings.is_empty());
}

#[test]
fn t11_bigint_sequence_kept_in_the_image() {
    let source =
        "CREATE STREAMING TABLE cdc_events AS SELECT * FROM STREAM read_files('events.json', \
schema => 'id INT, name STRING, version BIGINT, op STRING');\nCREATE STREAMING TABLE cdc_target;\n";
    let p = parse_ok(&format!("{source}{T11}"));
    let SourceInput::Files { format, .. } = &p.tables[0].input else {
        panic!("read_files input expected");
    };
    assert_eq!(*format, crate::plan::Format::Json);
    let target = &p.targets[0];
    assert_eq!(
        target.schema.to_string(),
        "id INT, name STRING, version BIGINT"
    );
    assert_eq!(target.sequence_type, DataType::BigInt);
    assert_eq!(p.flows[0].columns, vec![0, 1, 2]);
}
