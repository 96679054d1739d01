//! Rows of a target set by hand: DML on a published target (`INSERT`, `UPDATE`, `DELETE` through
//! `scdflow sql`), taken into the state so that later events apply on top of the edit.
//!
//! An edit names a key and the rows it removes and adds; the state's rows of the key become
//! `rows − removed + added` ([`edit`]). The new rows must be a history the state could hold
//! ([`HistoryRules::check`]): SCD type 1, at most one row per key; SCD type 2, versions in
//! sequence order that never overlap — every `__START_AT` set, each `__END_AT` after its
//! `__START_AT` and not after the next version's start, only the last one open (`__END_AT`
//! NULL), and two versions that touch differing in a tracked column (else they are one
//! version). The SCD2 state then holds, for the key, the events those rows stand for: an upsert
//! at each version's start with its row's image, a delete at each end that no version starts at
//! ([`HistoryRules::events`]); under partial updates later events fold onto those whole
//! images. A SCD1 key keeps its winning sequence (a new key has none, so any later event wins);
//! a removed SCD1 row becomes a delete at that sequence. Under partial updates a SCD1 column
//! keeps its own author's sequence (`Fields::set` in `super::scd1`).
//!
//! Invariant: after [`edit`] the state's rows of the key are exactly the new rows (checked:
//! a state that derives other rows fails the edit), and the edit emits no update, since the
//! table already holds it.
//!
//! Limits: what the edited history forgot stays forgotten — a late event is applied to the
//! versions as edited, not to the events the pipeline saw before. Bitemporal and REPLACE USING
//! targets take no edits.

use super::Durable;
use crate::event::{Event, EventKind};
use crate::expr::describe;
use crate::plan::{ScdType, Target, TargetKind};
use crate::value::{Row, Schema, Seq, Value};
use crate::{Error, ErrorKind, Result};
use serde::{Deserialize, Serialize};

/// One key's edit: the rows removed and added (whole target rows).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyEdit {
    /// The key's values, in key order.
    pub key: Row,
    /// Rows that leave the table.
    pub removed: Vec<Row>,
    /// Rows that enter it.
    pub added: Vec<Row>,
}

/// A state whose keys' rows can be set by hand.
pub trait Editable: Durable {
    /// Makes `key`'s rows `rows`, already checked by `rules`; emits nothing. `now` is the
    /// latest commit time (a delete it stores starts ageing then). Fails, saying why, when the
    /// state cannot hold them.
    fn set_rows(
        &mut self,
        rules: &HistoryRules,
        key: &Row,
        rows: &[Row],
        now: i64,
    ) -> std::result::Result<(), String>;
}

/// What makes a target's rows a valid history, and which of its columns are the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryRules {
    /// SCD type 1 or 2.
    pub scd: ScdType,
    /// The table's columns.
    pub schema: Schema,
    /// Image columns (the rows' prefix before `__START_AT`).
    pub image_len: usize,
    /// Key columns, indices into the image.
    pub keys: Vec<usize>,
    /// SCD2: per image column, whether a change opens a new version.
    pub tracked: Vec<bool>,
}

/// [`HistoryRules`] as a published table records them (table property
/// [`HistoryRules::PROPERTY`]): column names, not positions.
#[derive(Serialize, Deserialize)]
struct Recorded {
    scd: u8,
    keys: Vec<String>,
    tracked: Vec<String>,
}

impl HistoryRules {
    /// The table property holding the rules of a published target.
    pub const PROPERTY: &'static str = "scdflow.history";

    /// The rules of `target`, or why it takes no edits.
    pub fn of(target: &Target) -> std::result::Result<HistoryRules, String> {
        let kind = match (&target.kind, target.scd) {
            (TargetKind::ReplaceUsing { .. }, _) => Some("a REPLACE USING target"),
            _ if target.replace_where.is_some() => Some("a REPLACE WHERE target"),
            _ if target.view_of.is_some() => Some("a materialized view"),
            (_, ScdType::Bitemporal) => Some("a bitemporal target"),
            _ => None,
        };
        if let Some(kind) = kind {
            return Err(format!("`{}` is {kind}, which takes no edits", target.name));
        }
        Ok(HistoryRules {
            scd: target.scd,
            schema: target.schema.clone(),
            image_len: target.image_len,
            keys: target.keys.clone(),
            tracked: target.tracked.clone(),
        })
    }

    /// The rules as the table property records them.
    pub fn recorded(&self) -> String {
        let name = |i: &usize| self.schema.columns[*i].name.clone();
        let tracked = (0..self.image_len).filter(|i| self.tracked.get(*i) == Some(&true));
        let recorded = Recorded {
            scd: if self.scd == ScdType::Type1 { 1 } else { 2 },
            keys: self.keys.iter().map(name).collect(),
            tracked: tracked.map(|i| name(&i)).collect(),
        };
        serde_json::to_string(&recorded).expect("names serialize")
    }

    /// The rules a table of `schema` records in `text`; `None` when the text does not fit the
    /// table (it was not written for these columns).
    pub fn parse(text: &str, schema: &Schema) -> Option<HistoryRules> {
        let recorded: Recorded = serde_json::from_str(text).ok()?;
        let scd = match recorded.scd {
            1 => ScdType::Type1,
            2 => ScdType::Type2,
            _ => return None,
        };
        let image_len = match scd {
            ScdType::Type2 => schema.columns.len().checked_sub(2)?,
            _ => schema.columns.len(),
        };
        let at = |name: &String| schema.index_of(name).filter(|i| *i < image_len);
        let keys = recorded.keys.iter().map(at).collect::<Option<Vec<_>>>()?;
        let mut tracked = vec![false; image_len];
        for name in &recorded.tracked {
            tracked[at(name)?] = true;
        }
        if keys.is_empty() {
            return None;
        }
        Some(HistoryRules {
            scd,
            schema: schema.clone(),
            image_len,
            keys,
            tracked,
        })
    }

    /// The key of a table row.
    pub fn key_of(&self, row: &Row) -> Row {
        row.project(&self.keys)
    }

    /// Fails, saying why, unless `rows` (all of one key) are a history the state could hold
    /// (see the module docs). `key` names the key in the message.
    pub fn check(&self, key: &Row, rows: &[Row]) -> std::result::Result<(), String> {
        if self.scd == ScdType::Type1 {
            if rows.len() > 1 {
                return Err(format!(
                    "{} would have {} rows; an SCD type 1 table holds one per key",
                    self.show_key(key),
                    rows.len()
                ));
            }
            return Ok(());
        }
        let versions = self.versions(rows);
        let who = self.show_key(key);
        for (i, (start, end, image)) in versions.iter().enumerate() {
            let Some(start) = start else {
                return Err(format!("{who}: a version has no __START_AT"));
            };
            let (from, to) = (describe(start), show(end));
            if end.as_ref().is_some_and(|end| end <= start) {
                return Err(format!(
                    "{who}: the version starting at {from} ends at {to}, not after it starts"
                ));
            }
            let Some((next_start, _, next_image)) = versions.get(i + 1) else {
                continue;
            };
            let next = show(next_start);
            let Some(end) = end else {
                return Err(format!(
                    "{who}: the version starting at {from} is open (__END_AT NULL) but a later \
                     one starts at {next}; only the latest version may be open"
                ));
            };
            if Some(end) > next_start.as_ref() {
                return Err(format!(
                    "{who}: the versions starting at {from} and {next} overlap (the first ends \
                     at {to})"
                ));
            }
            if Some(end) == next_start.as_ref() && self.tracked_eq(image, next_image) {
                return Err(format!(
                    "{who}: the versions starting at {from} and {next} touch and differ in no \
                     tracked column, so they would be one version"
                ));
            }
        }
        Ok(())
    }

    /// The events a checked SCD2 history of `key` stands for (see the module docs).
    pub fn events(&self, key: &Row, rows: &[Row]) -> Vec<Event> {
        let versions = self.versions(rows);
        let mut events = Vec::with_capacity(2 * versions.len());
        for (i, (start, end, image)) in versions.iter().enumerate() {
            let event = |seq: &Value, kind, image: Row| Event {
                seq: Seq::from(seq),
                kind,
                key: key.clone(),
                image,
                authored: None,
                system: None,
            };
            if let Some(start) = start {
                events.push(event(start, EventKind::Upsert, image.clone()));
            }
            let next_start = versions.get(i + 1).and_then(|(s, _, _)| s.as_ref());
            if let Some(end) = end.as_ref().filter(|end| Some(*end) != next_start) {
                events.push(event(end, EventKind::Delete, Row::new()));
            }
        }
        events
    }

    /// SCD2 rows as `(start, end, image)`, by start.
    fn versions(&self, rows: &[Row]) -> Vec<(Option<Value>, Option<Value>, Row)> {
        let n = self.image_len;
        let set = |v: Value| (v != Value::Null).then_some(v);
        let mut versions: Vec<_> = rows
            .iter()
            .map(|row| {
                let image = row.project(&(0..n).collect::<Vec<_>>());
                (set(row.value(n)), set(row.value(n + 1)), image)
            })
            .collect();
        versions.sort();
        versions
    }

    fn tracked_eq(&self, a: &Row, b: &Row) -> bool {
        (a.iter().zip(b.iter()))
            .zip(&self.tracked)
            .all(|((a, b), tracked)| !tracked || a == b)
    }

    /// `key (id = 7)`.
    pub fn show_key(&self, key: &Row) -> String {
        let parts: Vec<String> = (self.keys.iter().zip(key.iter()))
            .map(|(i, v)| {
                format!(
                    "{} = {}",
                    self.schema.columns[*i].name,
                    describe(&v.to_value())
                )
            })
            .collect();
        format!("key ({})", parts.join(", "))
    }
}

fn show(value: &Option<Value>) -> String {
    value.as_ref().map_or("NULL".to_string(), describe)
}

/// Applies `edit` to `state`: the key's rows become `rows − removed + added`, checked by
/// `rules`. Fails, changing nothing, when a removed row is not the key's or the new rows are no
/// valid history; `version` names the table version the edit came from.
///
/// ```
/// use scdflow::engine::{edit, CdcState, CommitStats, Durable, HistoryRules, KeyEdit, Scd2State};
/// use scdflow::event::{Event, EventKind};
/// use scdflow::plan::ScdType;
/// use scdflow::value::{DataType, Row, Schema, Seq, Value};
///
/// let schema = Schema::new([
///     ("id".to_string(), DataType::Int),
///     ("city".to_string(), DataType::String),
///     ("__START_AT".to_string(), DataType::Int),
///     ("__END_AT".to_string(), DataType::Int),
/// ]);
/// let rules = HistoryRules {
///     scd: ScdType::Type2,
///     schema,
///     image_len: 2,
///     keys: vec![0],
///     tracked: vec![true, true],
/// };
/// let row = |city: &str, start: i64, end: Option<i64>| {
///     let end = end.map_or(Value::Null, Value::Int);
///     Row::from([Value::Int(7), Value::Str(city.into()), Value::Int(start), end])
/// };
/// let upsert = |city: &str, seq: i64| Event {
///     seq: Seq::from(seq),
///     kind: EventKind::Upsert,
///     key: Row::from([Value::Int(7)]),
///     image: Row::from([Value::Int(7), Value::Str(city.into())]),
///     authored: None,
///     system: None,
/// };
/// let mut state = Scd2State::new(2, vec![true, true], false, None);
/// let (mut out, mut stats) = (Vec::new(), CommitStats::default());
/// state.apply(vec![upsert("Oaxaca", 1), upsert("Tijuana", 5)], 0, &mut out, &mut stats);
/// // By hand: the first version was Puebla.
/// let fix = KeyEdit {
///     key: Row::from([Value::Int(7)]),
///     removed: vec![row("Oaxaca", 1, Some(5))],
///     added: vec![row("Puebla", 1, Some(5))],
/// };
/// edit(&mut state, &rules, &fix, 0, 3)?;
/// // A late event splits the edited version, not the one the events made.
/// out.clear();
/// state.apply(vec![upsert("Leon", 3)], 0, &mut out, &mut stats);
/// let mut rows = Vec::new();
/// state.rows(&mut rows);
/// rows.sort();
/// let want = [row("Leon", 3, Some(5)), row("Puebla", 1, Some(3)), row("Tijuana", 5, None)];
/// assert_eq!(rows, want.map(|r| (r, 1)).to_vec());
/// # Ok::<(), scdflow::Error>(())
/// ```
pub fn edit(
    state: &mut dyn Editable,
    rules: &HistoryRules,
    edit: &KeyEdit,
    now: i64,
    version: u64,
) -> Result<()> {
    let failed = |why: String| {
        Error::new(
            ErrorKind::Validation,
            format!("table version {version} (an edit): {why}"),
        )
    };
    let mut rows = rows_of(state, &edit.key);
    for removed in &edit.removed {
        let Some(at) = rows.iter().position(|r| r == removed) else {
            return Err(failed(format!(
                "it removes a row of {} the pipeline's state does not hold ({removed:?}); the \
                 table and the state disagree, start over with --full-refresh",
                rules.show_key(&edit.key)
            )));
        };
        rows.swap_remove(at);
    }
    rows.extend(edit.added.iter().cloned());
    rules.check(&edit.key, &rows).map_err(failed)?;
    state
        .set_rows(rules, &edit.key, &rows, now)
        .map_err(failed)?;
    let mut after = rows_of(state, &edit.key);
    after.sort();
    rows.sort();
    if after != rows {
        return Err(Error::new(
            ErrorKind::Internal,
            format!(
                "table version {version}: the state of {} holds other rows than the edit made",
                rules.show_key(&edit.key)
            ),
        ));
    }
    Ok(())
}

/// The rows `state` holds for `key`, each as many times as it counts.
fn rows_of(state: &dyn Editable, key: &Row) -> Vec<Row> {
    let mut counted = Vec::new();
    state.key_rows(key, &mut counted);
    (counted.into_iter())
        .flat_map(|(row, n)| std::iter::repeat_n(row, n.max(0) as usize))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::DataType;

    /// SCD2 rules over `(id, name, city, __START_AT, __END_AT)`, `name` not tracked.
    fn rules() -> HistoryRules {
        let schema = Schema::new(
            [("id", DataType::Int), ("name", DataType::String)]
                .into_iter()
                .chain([("city", DataType::String)])
                .chain([("__START_AT", DataType::Int), ("__END_AT", DataType::Int)])
                .map(|(n, t)| (n.to_string(), t)),
        );
        HistoryRules {
            scd: ScdType::Type2,
            schema,
            image_len: 3,
            keys: vec![0],
            tracked: vec![true, false, true],
        }
    }

    fn row(name: &str, city: &str, start: Option<i64>, end: Option<i64>) -> Row {
        let int = |v: Option<i64>| v.map_or(Value::Null, Value::Int);
        Row::from([
            Value::Int(1),
            Value::Str(name.into()),
            Value::Str(city.into()),
            int(start),
            int(end),
        ])
    }

    #[test]
    fn histories_are_checked_version_by_version() {
        let rules = rules();
        let key = Row::from([Value::Int(1)]);
        let check = |rows: &[Row]| rules.check(&key, rows);
        let a = row("a", "X", Some(1), Some(5));
        assert_eq!(check(&[]), Ok(()));
        // A gap is a delete; versions touching differ in a tracked column.
        assert_eq!(check(&[row("a", "Y", Some(5), None), a.clone()]), Ok(()));
        assert_eq!(check(&[a.clone(), row("a", "X", Some(7), None)]), Ok(()));
        let refused = [
            (
                vec![row("a", "X", None, None)],
                "a version has no __START_AT",
            ),
            (
                vec![row("a", "X", Some(3), Some(3))],
                "ends at 3, not after",
            ),
            (
                vec![row("a", "X", Some(1), None), row("a", "Y", Some(4), None)],
                "starting at 1 is open (__END_AT NULL) but a later one starts at 4",
            ),
            (
                vec![a.clone(), row("a", "Y", Some(4), Some(9))],
                "versions starting at 1 and 4 overlap (the first ends at 5)",
            ),
            (
                vec![a.clone(), row("a", "Y", Some(1), Some(9))],
                "versions starting at 1 and 1 overlap",
            ),
            // Only the untracked `name` differs: one version, not two.
            (
                vec![a.clone(), row("b", "X", Some(5), None)],
                "touch and differ in no tracked column",
            ),
        ];
        for (rows, why) in refused {
            let error = check(&rows).unwrap_err();
            assert!(error.starts_with("key (id = 1): "), "{error}");
            assert!(error.contains(why), "{error}");
        }
        let one = HistoryRules {
            scd: ScdType::Type1,
            ..rules.clone()
        };
        let error = one.check(&key, &[a.clone(), a]).unwrap_err();
        assert!(error.contains("would have 2 rows"), "{error}");
    }

    #[test]
    fn a_history_stands_for_upserts_at_its_starts_and_deletes_at_its_gaps() {
        let rules = rules();
        let key = Row::from([Value::Int(1)]);
        let rows = [
            row("a", "Y", Some(9), Some(12)),
            row("a", "X", Some(1), Some(5)),
            row("a", "Z", Some(5), Some(7)),
        ];
        let events: Vec<(i64, EventKind)> = (rules.events(&key, &rows).iter())
            .map(|e| match *e.seq.to_value() {
                Value::Int(s) => (s, e.kind),
                _ => unreachable!("INT sequences"),
            })
            .collect();
        use EventKind::{Delete, Upsert};
        let want = [
            (1, Upsert),
            (5, Upsert),
            (7, Delete),
            (9, Upsert),
            (12, Delete),
        ];
        assert_eq!(events, want);
    }

    #[test]
    fn rules_are_recorded_by_column_name_and_read_back() {
        let rules = rules();
        let text = rules.recorded();
        assert_eq!(text, r#"{"scd":2,"keys":["id"],"tracked":["id","city"]}"#);
        assert_eq!(
            HistoryRules::parse(&text, &rules.schema),
            Some(rules.clone())
        );
        // Rules that do not fit the table's columns are none.
        let other = Schema::new([("k".to_string(), DataType::Int)]);
        assert_eq!(HistoryRules::parse(&text, &other), None);
        assert_eq!(HistoryRules::parse("not json", &rules.schema), None);
    }
}
