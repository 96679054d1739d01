//! Delta tables written and read back through delta-rs, on the local file system.

use super::{Log, Table, VersionRows};
use crate::engine::changefeed::ChangeType;
use crate::value::{DataType, Packer, Row, Schema, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::future::IntoFuture;
use std::path::Path;

fn schema() -> Schema {
    Schema::new([
        ("id".to_string(), DataType::BigInt),
        ("name".into(), DataType::String),
    ])
}

fn row(id: i64, name: &str) -> Row {
    let mut p = Packer::new();
    p.push(&Value::Int(id)).push(&Value::Str(name.into()));
    p.finish()
}

fn cdf() -> BTreeMap<String, String> {
    BTreeMap::from([("delta.enableChangeDataFeed".to_string(), "true".to_string())])
}

#[test]
fn appends_that_race_for_one_version_both_land() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    Table::create(&path, &schema(), &cdf(), &[row(1, "a")], false).unwrap();
    let mut first = Table::open(&path).unwrap();
    let mut second = Table::open(&path).unwrap();
    assert_eq!(first.append(&[row(2, "b")]).unwrap(), 1);
    // `second` still holds version 0: its put of version 1 loses and it appends on top.
    assert_eq!(second.append(&[row(3, "c")]).unwrap(), 2);
    let mut rows = Table::open(&path).unwrap().rows().unwrap();
    rows.sort();
    assert_eq!(rows, [row(1, "a"), row(2, "b"), row(3, "c")]);
}

#[test]
fn each_version_is_read_as_the_rows_it_adds_or_as_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    Table::create(&path, &schema(), &BTreeMap::new(), &[], false).unwrap();
    let mut table = Table::open(&path).unwrap();
    table.append(&[row(1, "a"), row(2, "b")]).unwrap();
    table.append(&[row(3, "c")]).unwrap();
    Table::create(&path, &schema(), &BTreeMap::new(), &[row(9, "z")], true).unwrap();
    let log = Log::open(&path).unwrap();
    assert_eq!(log.latest_version().unwrap(), 3);
    // Version 0 only created the table: no data.
    assert_eq!(log.data_versions(0).unwrap(), [1, 2, 3]);
    assert_eq!(log.data_versions(2).unwrap(), [2, 3]);
    match log.version_rows(1, &schema()).unwrap() {
        VersionRows::Appended(rows) => assert_eq!(rows, [row(1, "a"), row(2, "b")]),
        other => panic!("{other:?}"),
    }
    match log.version_rows(3, &schema()).unwrap() {
        VersionRows::Changed(operation) => {
            assert_eq!(operation.as_deref(), Some("CREATE OR REPLACE TABLE"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_table_whose_rules_scdflow_cannot_keep_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    std::fs::create_dir(&path).unwrap();
    // An invariant, as Spark writes one: scdflow does not evaluate it, so it must not append.
    let invariant = serde_json::json!({"expression": {"expression": "id > 0"}}).to_string();
    let metadata = std::collections::HashMap::from([(
        "delta.invariants".to_string(),
        serde_json::Value::String(invariant),
    )]);
    let runtime = super::table::runtime(&path).unwrap();
    runtime
        .block_on(
            deltalake::operations::create::CreateBuilder::new()
                .with_location(
                    deltalake::ensure_table_uri(path.to_string_lossy())
                        .unwrap()
                        .as_str(),
                )
                .with_column(
                    "id",
                    deltalake::kernel::DataType::LONG,
                    true,
                    Some(metadata),
                )
                .with_column("name", deltalake::kernel::DataType::STRING, true, None)
                .into_future(),
        )
        .unwrap();
    let mut table = Table::open(&path).unwrap();
    let e = table.append(&[row(-1, "a")]).unwrap_err();
    assert!(
        e.message().contains("column `id` has delta.invariants"),
        "{}",
        e.message()
    );
    assert_eq!(Log::open(&path).unwrap().latest_version().unwrap(), 0);
}

#[test]
fn a_directory_without_a_log_is_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let e = Table::open(dir.path()).err().unwrap();
    assert!(
        e.message().contains("is not a Delta table"),
        "{}",
        e.message()
    );
}

/// A maintained table holds, after every commit, exactly the rows its change feed leaves — by
/// its own reading (deletion vectors applied) and after reopening (index rebuilt from the
/// files) — and each commit is one version carrying its `txn`. Most commits are followed by
/// merges ahead of the next (as a durable step's are), so later commits remove rows from files
/// no version holds yet; reopening drops the merges still ahead.
#[test]
fn a_maintained_table_holds_what_its_feed_leaves() {
    use super::MaintainedTable;
    use crate::engine::changefeed::ChangeType;
    use rand::SeedableRng;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let props = BTreeMap::from([("scdflow.target".to_string(), "t".to_string())]);
    let mut table = MaintainedTable::create(&path, &schema(), &props, "app").unwrap();
    assert_eq!((table.version(), table.last_commit().unwrap()), (0, None));
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(7);
    // The model: key -> its row's version number.
    let mut model: BTreeMap<i64, u32> = BTreeMap::new();
    let mut compacted = 0;
    for commit in 1..=60u64 {
        let changes = random_changes(&mut rng, &mut model);
        let written = table
            .commit(commit, 1_000_000 * commit as i64, &changes, &[])
            .unwrap();
        assert_eq!(written.version, commit);
        compacted += written.compacted_rows;
        if commit % 3 != 0 {
            table.merge_ahead().unwrap();
        }
        if commit % 20 == 0 {
            table = MaintainedTable::open(&path, &schema(), "app").unwrap();
        }
        let expected = holds_the_model(&path, &model, commit);
        assert_eq!(table.rows(), expected.len() as u64);
    }
    assert!(compacted > 0, "60 commits merge files");
    assert!(
        table.files() < 2 * super::FANOUT as usize * 3,
        "{}",
        table.files()
    );
    assert_eq!(table.last_commit().unwrap(), Some(60));
    assert_wide_where_deleted(&path);
    // A removal the table cannot place writes nothing.
    let e = table
        .commit(61, 61_000_000, &[(ChangeType::Delete, row(999, "x"))], &[])
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("removes a row the table does not hold"),
        "{e}"
    );
    assert_eq!(Log::open(&path).unwrap().latest_version().unwrap(), 60);
}

/// Asserts that every `add` in the log of the table at `path` whose file has a deletion vector
/// says its statistics are wide (`tightBounds: false`) and counts the file's physical rows, and
/// that there are such adds.
fn assert_wide_where_deleted(path: &Path) {
    let mut with_vectors = 0;
    for entry in std::fs::read_dir(path.join("_delta_log")).unwrap() {
        let file = entry.unwrap().path();
        if file.extension().is_none_or(|e| e != "json") {
            continue;
        }
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let action: serde_json::Value = serde_json::from_str(line).unwrap();
            let Some(add) = action.get("add") else {
                continue;
            };
            let stats: serde_json::Value =
                serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
            if add.get("deletionVector").is_some_and(|dv| !dv.is_null()) {
                with_vectors += 1;
                assert_eq!(stats["tightBounds"], false, "{}: {add}", file.display());
                assert!(stats["numRecords"].as_u64().unwrap() > 0, "{add}");
            } else {
                assert!(stats.get("tightBounds").is_none(), "{add}");
            }
        }
    }
    assert!(with_vectors > 0, "the commits delete rows from files");
}

/// Asserts that the table at `path` holds exactly the rows of `model` after `commit`; returns them.
fn holds_the_model(path: &Path, model: &BTreeMap<i64, u32>, commit: u64) -> Vec<Row> {
    let mut rows = Table::open(path).unwrap().rows().unwrap();
    rows.sort();
    let expected: Vec<Row> = (model.iter())
        .map(|(k, v)| row(*k, &format!("v{v}")))
        .collect();
    assert_eq!(rows, expected, "after commit {commit}");
    expected
}

/// A commit's random changes to keys 0..50 of `model` (key -> its row's version number), which
/// it updates.
fn random_changes(
    rng: &mut impl rand::Rng,
    model: &mut BTreeMap<i64, u32>,
) -> Vec<(crate::engine::changefeed::ChangeType, Row)> {
    use crate::engine::changefeed::ChangeType;
    use rand::RngExt;
    let mut changes = Vec::new();
    for _ in 0..rng.random_range(0..40) {
        let key = rng.random_range(0..50i64);
        match (model.get(&key).copied(), rng.random_range(0..4)) {
            (None, _) => {
                model.insert(key, 0);
                changes.push((ChangeType::Insert, row(key, "v0")));
            }
            (Some(v), 0) => {
                model.remove(&key);
                changes.push((ChangeType::Delete, row(key, &format!("v{v}"))));
            }
            (Some(v), _) => {
                model.insert(key, v + 1);
                changes.push((ChangeType::UpdatePreimage, row(key, &format!("v{v}"))));
                changes.push((
                    ChangeType::UpdatePostimage,
                    row(key, &format!("v{}", v + 1)),
                ));
            }
        }
    }
    changes
}

/// A history (`Kept::History`): settled rows (`end` set) live in files apart from open ones,
/// so the removals of open rows, which most commits make, never grow a settled file's deletion
/// vector; a settled row is still removed where a commit takes it back (as a late event does).
/// The table holds what its feed leaves after every commit, reopened or not.
#[test]
fn a_maintained_history_keeps_settled_rows_apart() {
    maintain_a_history(0);
}

/// A table written before histories kept their classes apart (its first 20 commits, as
/// `Kept::Changes`: files mixing open and settled rows) goes on as a history: it holds what
/// its feed leaves, its settled files hold only settled rows, and merges part the mixed files.
#[test]
fn a_history_written_mixed_goes_on_apart() {
    maintain_a_history(20);
}

/// A history's columns: id, name (its version), end (NULL while open).
pub(super) fn history_schema() -> Schema {
    Schema::new([
        ("id".to_string(), DataType::BigInt),
        ("name".into(), DataType::String),
        ("end".into(), DataType::BigInt),
    ])
}

/// Version `v` of key `id`'s row, settled at `end` (open without).
pub(super) fn history(id: i64, v: u32, end: Option<u64>) -> Row {
    let mut p = Packer::new();
    p.push(&Value::Int(id))
        .push(&Value::Str(format!("v{v}")))
        .push(&end.map_or(Value::Null, |e| Value::Int(e as i64)));
    p.finish()
}

/// Random changes to a history of 40 keys, as an SCD2 target's feed makes them: inserts of new
/// keys, updates that close a key's open row (and open the next, or not), deletes of settled
/// rows; and the rows they leave.
pub(super) struct HistoryFeed {
    rng: rand::rngs::ChaCha8Rng,
    /// Key -> its open row's version.
    open: BTreeMap<i64, u32>,
    /// Every settled row.
    settled: Vec<Row>,
    /// Settled rows deleted so far.
    pub settled_removed: u64,
}

impl HistoryFeed {
    pub(super) fn new(seed: u64) -> HistoryFeed {
        use rand::SeedableRng;
        HistoryFeed {
            rng: rand::rngs::ChaCha8Rng::seed_from_u64(seed),
            open: BTreeMap::new(),
            settled: Vec::new(),
            settled_removed: 0,
        }
    }

    /// Commit `commit`'s changes (0 to 29 of them), in feed order.
    pub(super) fn commit(&mut self, commit: u64) -> Vec<(ChangeType, Row)> {
        use rand::RngExt;
        let (rng, open, settled) = (&mut self.rng, &mut self.open, &mut self.settled);
        let mut changes = Vec::new();
        for _ in 0..rng.random_range(0..30) {
            let key = rng.random_range(0..40i64);
            match (open.get(&key).copied(), rng.random_range(0..8)) {
                (None, _) => {
                    open.insert(key, 0);
                    changes.push((ChangeType::Insert, history(key, 0, None)));
                }
                (Some(_), 0) if !settled.is_empty() => {
                    let gone = settled.swap_remove(rng.random_range(0..settled.len()));
                    changes.push((ChangeType::Delete, gone));
                    self.settled_removed += 1;
                }
                (Some(v), pick) => {
                    changes.push((ChangeType::UpdatePreimage, history(key, v, None)));
                    let closed = history(key, v, Some(commit));
                    changes.push((ChangeType::UpdatePostimage, closed.clone()));
                    settled.push(closed);
                    if pick == 1 {
                        open.remove(&key);
                    } else {
                        open.insert(key, v + 1);
                        changes.push((ChangeType::Insert, history(key, v + 1, None)));
                    }
                }
            }
        }
        changes
    }

    /// The rows the changes so far leave, sorted.
    pub(super) fn rows(&self) -> Vec<Row> {
        let open = self.open.iter().map(|(k, v)| history(*k, *v, None));
        let mut rows: Vec<Row> = open.chain(self.settled.iter().cloned()).collect();
        rows.sort();
        rows
    }
}

/// Commits random changes to a history for 80 commits, the first `mixed` of them as
/// `Kept::Changes`; see the two tests above.
fn maintain_a_history(mixed: u64) {
    use super::{Kept, MaintainedTable};
    let schema = history_schema();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let kept = |commit: u64| match commit < mixed {
        true => Kept::Changes,
        false => Kept::History(2),
    };
    let mut table =
        MaintainedTable::create_as(&path, &schema, &BTreeMap::new(), "app", kept(0)).unwrap();
    let mut feed = HistoryFeed::new(3 + mixed);
    let mut compacted = 0;
    for commit in 1..=80u64 {
        let changes = feed.commit(commit);
        compacted += (table.commit(commit, 1_000_000 * commit as i64, &changes, &[]))
            .unwrap()
            .compacted_rows;
        if commit % 20 == 0 {
            table = MaintainedTable::open_as(&path, &schema, "app", kept(commit)).unwrap();
        }
        let mut rows = Table::open(&path).unwrap().rows().unwrap();
        rows.sort();
        assert_eq!(rows, feed.rows(), "after commit {commit}");
        let mut mixing = 0;
        for (is_settled, rows) in table.live_files().unwrap() {
            let ends: BTreeSet<bool> = rows.iter().map(|r| r.get(2).unwrap().is_null()).collect();
            if is_settled || mixed == 0 {
                assert_eq!(ends, BTreeSet::from([!is_settled]), "after commit {commit}");
            }
            mixing += usize::from(ends.len() == 2);
        }
        // Files written mixed are there when the history starts, and merged apart by the end.
        assert!(commit != mixed || mixing > 0, "no mixed file to part");
        assert!(commit < 80 || mixing == 0, "{mixing} files still mixed");
    }
    let settled_removed = feed.settled_removed;
    assert!(
        compacted > 0 && settled_removed > 0,
        "{compacted} {settled_removed}"
    );
    let files = table.live_files().unwrap();
    let classes: BTreeSet<bool> = files.iter().map(|f| f.0).collect();
    assert_eq!(classes, BTreeSet::from([false, true]));
    // Settled files merge too, at their own fanout: one holds more rows than a commit writes,
    // and they stay fewer than two full tiers.
    let settled: Vec<usize> = (files.iter().filter(|f| f.0)).map(|f| f.1.len()).collect();
    assert!(settled.iter().any(|rows| *rows > 30), "{settled:?}");
    assert!(
        settled.len() < 2 * super::COLD_FANOUT as usize,
        "{settled:?}"
    );
}

/// Upkeep on the schedule the table's properties set: a checkpoint every 4 versions, and every
/// 5 a vacuum that (retention 0) leaves only the files the current version holds — and the
/// table reads the same after each, reopened or not.
#[test]
fn a_maintained_table_checkpoints_and_vacuums_on_its_schedule() {
    use super::MaintainedTable;
    use rand::SeedableRng;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let props = BTreeMap::from([
        ("delta.checkpointInterval".to_string(), "4".to_string()),
        (super::VACUUM_PROPERTY.to_string(), "5".to_string()),
        (
            "delta.deletedFileRetentionDuration".to_string(),
            "interval 0 seconds".to_string(),
        ),
    ]);
    let mut table = MaintainedTable::create(&path, &schema(), &props, "app").unwrap();
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(11);
    let mut model: BTreeMap<i64, u32> = BTreeMap::new();
    // Every data, deletion-vector and change-data file ever in the directory.
    let files = |path: &Path| -> BTreeSet<String> {
        let mut all = BTreeSet::new();
        for sub in ["", "_change_data"] {
            for entry in std::fs::read_dir(path.join(sub)).into_iter().flatten() {
                let entry = entry.unwrap();
                if entry.file_type().unwrap().is_file() {
                    all.insert(format!("{sub}/{}", entry.file_name().to_string_lossy()));
                }
            }
        }
        all
    };
    let mut written_ever = BTreeSet::new();
    for commit in 1..=40u64 {
        let changes = random_changes(&mut rng, &mut model);
        table
            .commit(commit, 1_000_000 * commit as i64, &changes, &[])
            .unwrap();
        written_ever.extend(files(&path));
        if commit % 8 == 0 {
            table = MaintainedTable::open(&path, &schema(), "app").unwrap();
        }
        holds_the_model(&path, &model, commit);
        let checkpoint = path.join(format!("_delta_log/{commit:020}.checkpoint.parquet"));
        assert_eq!(checkpoint.is_file(), commit % 4 == 0, "commit {commit}");
    }
    // Version 40 was vacuumed: what is left is what it holds (data files and their vectors).
    let left = files(&path);
    assert!(
        left.len() < written_ever.len() / 2,
        "{} of {}",
        left.len(),
        written_ever.len()
    );
    assert!(
        left.iter().all(|f| !f.starts_with("_change_data/")),
        "{left:?}"
    );
    let live = table.files();
    let data = left.iter().filter(|f| f.ends_with(".parquet")).count();
    assert_eq!(data, live, "{left:?}");
    assert_eq!(table.last_commit().unwrap(), Some(40));
}

/// Table properties for a vacuum after every version with a retention of 0: any file no
/// version holds is deleted at once, unless the vacuum is told it is fresh.
fn vacuumed_at_every_version() -> BTreeMap<String, String> {
    BTreeMap::from([
        (super::VACUUM_PROPERTY.to_string(), "1".to_string()),
        (
            "delta.deletedFileRetentionDuration".to_string(),
            "interval 0 seconds".to_string(),
        ),
    ])
}

/// Commit `commit` of `changes` as a durable step makes it: its version prepared, merges ahead
/// of the next written, then the version published through the table's `log` and its upkeep
/// run, told when the step began; returns the rows merged into the version.
fn step_durably(
    table: &mut super::MaintainedTable,
    log: &super::TableLog,
    commit: u64,
    changes: &[(crate::engine::changefeed::ChangeType, Row)],
) -> u64 {
    let step = std::time::SystemTime::now();
    let (prepared, written) = table
        .prepare(
            commit,
            1_000_000 * commit as i64,
            changes,
            &Default::default(),
        )
        .unwrap();
    table.merge_ahead().unwrap();
    log.publish(&prepared).unwrap();
    log.upkeep(prepared.version, step).unwrap();
    written.compacted_rows
}

/// A durable step's order: each version prepared, then merges ahead of the next written, then
/// the version published through the table's log and its upkeep run (a vacuum at every
/// version, retention 0) — told when the step began. The vacuum keeps the files merged ahead
/// (no version holds them yet), so every next version finds them; after the last, with nothing
/// ahead, it leaves only what the table holds.
#[test]
fn a_vacuum_keeps_the_files_merged_ahead_of_the_next_version() {
    use super::MaintainedTable;
    use rand::SeedableRng;
    use std::time::SystemTime;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let props = vacuumed_at_every_version();
    let mut table = MaintainedTable::create(&path, &schema(), &props, "app").unwrap();
    let log = table.log().unwrap();
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(5);
    let mut model: BTreeMap<i64, u32> = BTreeMap::new();
    let mut compacted = 0;
    for commit in 1..=40u64 {
        let changes = random_changes(&mut rng, &mut model);
        compacted += step_durably(&mut table, &log, commit, &changes);
        holds_the_model(&path, &model, commit);
    }
    assert!(compacted > 0, "40 commits merge files");
    drop(table);
    log.upkeep(40, SystemTime::now()).unwrap();
    let table = MaintainedTable::open(&path, &schema(), "app").unwrap();
    let data = (std::fs::read_dir(&path).unwrap())
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".parquet")
        })
        .count();
    assert_eq!(data, table.files());
}

/// A merge ahead that began before a step and is not in a version yet when that step's
/// vacuum runs (retention 0, told when the step began, after the merge wrote its file): the
/// vacuum keeps its file, so the next version, which takes the merge in, reads back whole.
#[test]
fn a_vacuum_keeps_the_files_of_a_merge_that_began_before_its_step() {
    use crate::engine::changefeed::ChangeType;
    use std::time::{Duration, SystemTime};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let props = vacuumed_at_every_version();
    let mut table = super::MaintainedTable::create(&path, &schema(), &props, "app").unwrap();
    let log = table.log().unwrap();
    let mut model = BTreeMap::new();
    // Eight files of ten rows: one full tier, whose merge starts once the eighth is prepared.
    for commit in 1..=super::FANOUT {
        let changes: Vec<_> = (0..10)
            .map(|i| {
                let key = (commit * 10 + i) as i64;
                model.insert(key, 0);
                (ChangeType::Insert, row(key, "v0"))
            })
            .collect();
        step_durably(&mut table, &log, commit, &changes);
    }
    let waited = std::time::Instant::now();
    while table.merging() {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "the merge never ended"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    log.upkeep(super::FANOUT, SystemTime::now()).unwrap();
    let commit = super::FANOUT + 1;
    model.insert(0, 0);
    let written = step_durably(
        &mut table,
        &log,
        commit,
        &[(ChangeType::Insert, row(0, "v0"))],
    );
    assert_eq!(
        written,
        10 * super::FANOUT,
        "the merge went into version {commit}"
    );
    holds_the_model(&path, &model, commit);
}

/// A table of appends merges its full tiers on a thread of their own, beside its next
/// versions: each merge goes into the first version prepared after it is done, so the table
/// holds every appended row after every commit (by its own reading and another reader's, and
/// after reopening, which drops a merge still running), and the files stay few. Each commit is
/// a durable step's (a vacuum at every version, retention 0, told when the step began), and
/// merges finish between steps: the vacuum keeps the merged files.
#[test]
fn a_table_of_appends_merges_beside_its_versions() {
    use super::{Kept, MaintainedTable, COLD_FANOUT};
    use crate::engine::changefeed::ChangeType;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let open = |path: &Path| MaintainedTable::open_as(path, &schema(), "app", Kept::Appends);
    let props = vacuumed_at_every_version();
    let mut table =
        MaintainedTable::create_as(&path, &schema(), &props, "app", Kept::Appends).unwrap();
    let log = table.log().unwrap();
    let mut expected = Vec::new();
    let (mut compacted, mut next) = (0, 0);
    for commit in 1..=150u64 {
        let changes: Vec<_> = (0..3)
            .map(|_| {
                next += 1;
                (ChangeType::Insert, row(next, "x"))
            })
            .collect();
        expected.extend(changes.iter().map(|(_, r)| r.clone()));
        compacted += step_durably(&mut table, &log, commit, &changes);
        std::thread::sleep(std::time::Duration::from_millis(5));
        if commit % 50 == 0 {
            table = open(&path).unwrap();
        }
        let mut rows = Table::open(&path).unwrap().rows().unwrap();
        rows.sort();
        expected.sort();
        assert_eq!(rows, expected, "after commit {commit}");
        assert_eq!(table.rows(), expected.len() as u64);
    }
    assert!(compacted > 0, "150 commits merge files");
    assert!(
        table.files() < 3 * COLD_FANOUT as usize,
        "{} files",
        table.files()
    );
    let reopened = open(&path).unwrap();
    assert_eq!(reopened.rows(), 450);
}
