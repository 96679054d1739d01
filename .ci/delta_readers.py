#!/usr/bin/env python3
"""Checks scdflow's Delta tables with the readers users have: the Python `deltalake` package and
Polars (run by .ci/run with a virtual environment that has them).

1. `scdflow sql` creates the seed's sample data (dataflows/warehouse/sample_data.sql, verbatim);
   deltalake and polars read the table and see the seed's eight rows.
2. `scdflow sql` appends to, updates, deletes from, truncates and replaces a table with the
   change data feed on; deltalake's load_cdf reads each version's changes (inserts, pre- and
   post-images, deletes) and polars the rows left.
3. deltalake writes a table in two versions (a create and an append); `scdflow run` reads it by
   its qualified name as a stream, version by version, and its target holds both versions' rows;
   deltalake writes a table with the change data feed (appends, a delete, an overwrite), and
   scdflow's `table_changes` reads the changes deltalake's load_cdf reads; Polars writes two
   Parquet files, and `read_files(..., format => 'parquet')` reads them.
4. `scdflow run --warehouse` publishes SCD1, SCD2 and bitemporal targets of a generated
   workload (many commits: deletion vectors, merged files), in one plain run and (SCD1, SCD2)
   in durable runs (`--state`) as the files arrive (the last SCD2 run with changed table
   properties, which its next version carries): polars and deltalake's query engine read
   each table as the run without a warehouse writes it to files, and deltalake's load_cdf reads
   its change data feed as that run's `<target>.changes.csv`, version for commit; deltalake's
   history shows each version's flow progress (the event log) in its commitInfo; pyarrow reads
   each data file of a history as open rows only or ended rows only.
5. The generated pipelines' source streaming table (`events`), published by the same runs: polars
   reads every input row, deltalake's load_cdf each commit's rows as one version of inserts
   (its versions have no change-data files: readers take the files they add, never the files
   compaction merged).
6. `scdflow sql` erases one key of the durable SCD2 target (DML on a published target, files
   with deletion vectors): the readers see the table without it, load_cdf reads the deletes,
   and the next durable run keeps the erasure.
7. A target file whose rows a commit deletes but ten of: its deletion vector is written as a few
   runs (roaring run containers); polars, deltalake's query engine and load_cdf read it.

usage: python .ci/delta_readers.py path/to/scdflow
"""
import datetime
import re
import pathlib
import subprocess
import sys
import tempfile

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable, QueryBuilder, write_deltalake

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEED_ROWS = [
    (123, "Isabel", "Monterrey", "INSERT", 1),
    (123, "Isabel", "Chihuahua", "UPDATE", 5),
    (123, None, None, "DELETE", 6),
    (124, "Raul", "Oaxaca", "INSERT", 1),
    (125, "Mercedes", "Tijuana", "INSERT", 2),
    (125, "Mercedes", "Mexicali", "UPDATE", 5),
    (125, "Mercedes", "Guadalajara", "UPDATE", 6),
    (126, "Lily", "Cancun", "INSERT", 2),
]
COLUMNS = ["userId", "name", "city", "operation", "sequenceNum"]


def run(*args, cwd):
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, args))} failed:\n{done.stderr}")
    return done.stdout


def sorted_rows(records):
    # NULL first, as SQL orders it; Python cannot compare None with text.
    return sorted((tuple(r[c] for c in COLUMNS) for r in records), key=lambda row: tuple(
        (v is not None, v) for v in row))


def main():
    scdflow = pathlib.Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "w").mkdir()
        sample = ROOT / "dataflows/warehouse/sample_data.sql"
        run(scdflow, "sql", "--warehouse", "w", "-f", sample, cwd=tmp)
        table = tmp / "w/main/cdc_tutorial/users_cdf"

        dt = DeltaTable(str(table))
        got = sorted_rows(dt.to_pyarrow_table().to_pylist())
        assert got == sorted_rows(dict(zip(COLUMNS, r)) for r in SEED_ROWS), f"deltalake read {got}"
        schema = {f.name: f.type for f in dt.schema().fields}
        assert str(schema["userId"]) == str(schema["sequenceNum"]) == 'PrimitiveType("integer")', schema
        got = sorted_rows(pl.read_delta(str(table)).to_dicts())
        assert got == sorted_rows(dict(zip(COLUMNS, r)) for r in SEED_ROWS), f"polars read {got}"
        print(f"deltalake {dt.version()} and polars read {table.name}: {len(got)} rows")

        # A table with the change data feed: scdflow's appends are what its readers see.
        run(scdflow, "sql", "--warehouse", "w",
            "CREATE TABLE main.cdc_tutorial.feed (id BIGINT, city STRING) "
            "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true'); "
            "INSERT INTO main.cdc_tutorial.feed VALUES (1, 'Oaxaca'), (2, 'Tijuana'); "
            "INSERT INTO main.cdc_tutorial.feed VALUES (3, 'Puebla'); "
            "UPDATE main.cdc_tutorial.feed SET city = 'Cancun' WHERE id = 2; "
            "DELETE FROM main.cdc_tutorial.feed WHERE id = 1; "
            "TRUNCATE TABLE main.cdc_tutorial.feed; "
            "INSERT INTO main.cdc_tutorial.feed VALUES (4, 'Merida')", cwd=tmp)
        path = str(tmp / "w/main/cdc_tutorial/feed")
        feed = DeltaTable(path)
        assert feed.protocol().min_writer_version >= 4, feed.protocol()
        changes = pa.table(feed.load_cdf(starting_version=0).read_all()).to_pylist()
        got = sorted((r["_commit_version"], r["id"], r["city"], r["_change_type"]) for r in changes)
        want = [
            (1, 1, "Oaxaca", "insert"), (1, 2, "Tijuana", "insert"), (2, 3, "Puebla", "insert"),
            (3, 2, "Cancun", "update_postimage"), (3, 2, "Tijuana", "update_preimage"),
            (4, 1, "Oaxaca", "delete"),
            (5, 2, "Cancun", "delete"), (5, 3, "Puebla", "delete"),
            (6, 4, "Merida", "insert"),
        ]
        assert got == want, got
        assert pl.read_delta(path).rows() == [(4, "Merida")], pl.read_delta(path)
        print(f"deltalake read the change data feed of INSERT, UPDATE, DELETE and TRUNCATE: "
              f"{len(want)} changes")
        # CREATE OR REPLACE of that table (writer 4, which delta-rs's own create refuses).
        run(scdflow, "sql", "--warehouse", "w",
            "CREATE OR REPLACE TABLE main.cdc_tutorial.feed "
            "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true') "
            "AS SELECT * FROM VALUES (5, 'Leon') AS v(id, city)", cwd=tmp)
        assert pl.read_delta(path).rows() == [(5, "Leon")], pl.read_delta(path)
        replaced = pa.table(DeltaTable(path).load_cdf(starting_version=7).read_all()).to_pylist()
        got = sorted((r["id"], r["city"], r["_change_type"]) for r in replaced)
        assert got == [(4, "Merida", "delete"), (5, "Leon", "insert")], got
        print("deltalake read the table CREATE OR REPLACE rewrote, and its change data feed")

        # A table deltalake writes, read by a pipeline as a stream of its versions.
        events = tmp / "w/main/cdc_tutorial/py_events"
        first = pa.table({
            "userId": pa.array([1, 2], pa.int64()),
            "city": ["Oaxaca", "Tijuana"],
            "seq": pa.array([1, 1], pa.int64()),
        })
        second = pa.table({
            "userId": pa.array([1], pa.int64()),
            "city": ["Puebla"],
            "seq": pa.array([2], pa.int64()),
        })
        write_deltalake(str(events), first)
        write_deltalake(str(events), second, mode="append")
        pipeline = tmp / "p.sql"
        pipeline.write_text(
            "CREATE OR REFRESH STREAMING TABLE cities;\n"
            "CREATE FLOW f AS AUTO CDC INTO cities FROM STREAM(main.cdc_tutorial.py_events)\n"
            "KEYS (userId) SEQUENCE BY seq STORED AS SCD TYPE 1;\n"
        )
        run(scdflow, "run", "p.sql", "--warehouse", "w", "--schema", "cdc_tutorial", cwd=tmp)
        table = pl.read_delta(str(tmp / "w/main/cdc_tutorial/cities")).sort("userId")
        assert table.rows() == [(1, "Puebla", 2), (2, "Tijuana", 1)], table
        print("scdflow read a table deltalake wrote, version by version")

        # A change data feed deltalake writes (appends, a DELETE with its change-data file, an
        # overwrite removing files without one), read back by scdflow's table_changes as
        # deltalake's load_cdf reads it.
        py_feed = str(tmp / "w/main/cdc_tutorial/py_feed")
        cdf = {"delta.enableChangeDataFeed": "true"}
        rows = lambda ids, cities: pa.table({"id": pa.array(ids, pa.int64()), "city": cities})
        write_deltalake(py_feed, rows([1, 2], ["Oaxaca", "Tijuana"]), configuration=cdf)
        write_deltalake(py_feed, rows([3], ["Puebla"]), mode="append")
        DeltaTable(py_feed).delete("id = 2")
        write_deltalake(py_feed, rows([4], ["Merida"]), mode="overwrite")
        theirs = pa.table(DeltaTable(py_feed).load_cdf(starting_version=0).read_all()).to_pylist()
        theirs = sorted((str(r["id"]), r["city"], r["_change_type"], str(r["_commit_version"]))
                        for r in theirs)
        ours = run(scdflow, "sql", "--warehouse", "w", "--format", "csv",
                   "SELECT id, city, _change_type, _commit_version "
                   "FROM table_changes('main.cdc_tutorial.py_feed', 0)", cwd=tmp)
        ours = sorted(tuple(line.split(",")) for line in ours.splitlines()[1:])
        assert ours == theirs, f"scdflow {ours}, deltalake {theirs}"
        print(f"scdflow's table_changes read the change data feed deltalake wrote as load_cdf "
              f"does: {len(ours)} changes")

        # Parquet files Polars writes, read by a pipeline with read_files(..., 'parquet').
        (tmp / "pq").mkdir()
        pl.DataFrame({"userId": [1, 2], "city": ["Oaxaca", "Tijuana"], "seq": [1, 1]}) \
            .write_parquet(tmp / "pq/part-1.parquet")
        pl.DataFrame({"userId": [1], "city": ["Puebla"], "seq": [2]}) \
            .write_parquet(tmp / "pq/part-2.parquet")
        (tmp / "pq.sql").write_text(
            "CREATE OR REFRESH STREAMING TABLE pq_events AS SELECT * FROM STREAM\n"
            "read_files('pq', format => 'parquet');\n"
            "CREATE OR REFRESH STREAMING TABLE pq_cities;\n"
            "CREATE FLOW g AS AUTO CDC INTO pq_cities FROM STREAM(pq_events)\n"
            "KEYS (userId) SEQUENCE BY seq STORED AS SCD TYPE 1;\n"
        )
        run(scdflow, "run", "pq.sql", "--out", "pq_out", cwd=tmp)
        got = (tmp / "pq_out/pq_cities.csv").read_text()
        assert got == "userId,city,seq\n1,Puebla,2\n2,Tijuana,1\n", got
        print("scdflow read Parquet files polars wrote")

        published(scdflow, tmp)
        replace_where(scdflow, tmp)
        mostly_deleted(scdflow, tmp)


def replace_where(scdflow, tmp):
    # A REPLACE WHERE target over a table deltalake writes: each durable run replaces the
    # condition's slice (equal rows kept apart), the rest stays when the source loses it, and
    # polars, deltalake and load_cdf read what the rules say.
    run(scdflow, "sql", "--warehouse", "w", "CREATE SCHEMA main.sales", cwd=tmp)
    orders = str(tmp / "w/main/sales/orders")
    day = lambda d: datetime.date(2026, 1, d)
    table = lambda rows: pa.table({
        "id": pa.array([r[0] for r in rows], pa.int32()),
        "day": pa.array([day(r[1]) for r in rows], pa.date32()),
        "amount": pa.array([r[2] for r in rows], pa.int32()),
    })
    write_deltalake(orders, table([(1, 1, 10), (2, 2, 20), (3, 3, 30), (3, 3, 30)]))
    pipeline = tmp / "recent.sql"
    for since, rows in [
        # The slice from the 2nd; the 1st is never the flow's.
        (2, [(2, 2, 20), (3, 3, 30), (3, 3, 30)]),
        # One copy of order 3 goes and order 4 arrives; from the 3rd on, so the 2nd stays.
        (3, [(2, 2, 20), (3, 3, 30), (4, 4, 40)]),
    ]:
        pipeline.write_text(
            "CREATE STREAMING TABLE recent;\n"
            "CREATE FLOW r AS INSERT INTO recent BY NAME\n"
            f"REPLACE WHERE day >= DATE '2026-01-0{since}'\n"
            "SELECT * FROM main.sales.orders;\n")
        run(scdflow, "run", "recent.sql", "--warehouse", "w", "--schema", "sales",
            "--state", "state-recent", "--out", "out-recent", cwd=tmp)
        got = pl.read_delta(str(tmp / "w/main/sales/recent")).sort(["id", "day", "amount"])
        want = pl.from_arrow(table(rows)).sort(["id", "day", "amount"])
        assert got.equals(want), f"polars read {got}, not {want}"
        if since == 2:
            write_deltalake(orders, table([(3, 3, 30), (4, 4, 40)]), mode="overwrite")
    target = DeltaTable(str(tmp / "w/main/sales/recent"))
    feed = pl.from_arrow(pa.table(target.load_cdf(starting_version=target.version()).read_all()))
    changes = sorted(zip(feed["id"], feed["_change_type"]))
    assert changes == [(3, "delete"), (4, "insert")], changes
    print("sales.recent: REPLACE WHERE over a table deltalake wrote; polars read each update's "
          "table and load_cdf its changes")


def mostly_deleted(scdflow, tmp):
    # A target file whose rows a commit deletes but ten of: its deletion vector is a few runs
    # (run containers), which polars, deltalake's query engine and load_cdf read.
    (tmp / "m/events").mkdir(parents=True)
    upserts = "".join(f"{k},v{k},UPSERT,1\n" for k in range(5000))
    deletes = "".join(f"{k},,DELETE,2\n" for k in range(4990))
    (tmp / "m/events/001.csv").write_text("k,c0,op,seq\n" + upserts)
    (tmp / "m/events/002.csv").write_text("k,c0,op,seq\n" + deletes)
    (tmp / "m/m.sql").write_text(
        "CREATE OR REFRESH STREAMING TABLE events AS SELECT * FROM STREAM read_files(\n"
        "'events', format => 'csv', header => true,\n"
        "schema => 'k BIGINT, c0 STRING, op STRING, seq BIGINT');\n"
        "CREATE OR REFRESH STREAMING TABLE kept;\n"
        "CREATE FLOW f AS AUTO CDC INTO kept FROM STREAM(events) KEYS (k)\n"
        "APPLY AS DELETE WHEN op = 'DELETE' SEQUENCE BY seq COLUMNS * EXCEPT (op, seq)\n"
        "STORED AS SCD TYPE 1;\n")
    run(scdflow, "sql", "--warehouse", "w", "CREATE SCHEMA main.mostly", cwd=tmp)
    run(scdflow, "run", "m/m.sql", "--warehouse", "w", "--schema", "mostly", "--out", "m/out",
        cwd=tmp)
    path = tmp / "w/main/mostly/kept"
    vectors = list(path.glob("deletion_vector_*.bin"))
    assert len(vectors) == 1 and vectors[0].stat().st_size < 100, vectors
    want = list(range(4990, 5000))
    assert pl.read_delta(str(path)).sort("k")["k"].to_list() == want
    table = DeltaTable(str(path))
    got = QueryBuilder().register("t", table).execute("SELECT k FROM t ORDER BY k").read_all()
    assert got.column("k").to_pylist() == want, got
    feed = table.load_cdf(starting_version=2).read_all()
    assert sorted(feed.column("k").to_pylist()) == list(range(4990)), feed.num_rows
    print("mostly.kept: a deletion vector of runs; polars, deltalake and load_cdf read it")


def published(scdflow, tmp):
    run(scdflow, "generate", "--out", "g", "--events", "20000", "--keys", "2000",
        "--displacement", "300", "--commits", "40", "--seed", "5", cwd=tmp)
    run(scdflow, "sql", "--warehouse", "w", "CREATE SCHEMA main.default", cwd=tmp)
    # The two pipelines publish a streaming table of the same name: durable, each its own schema.
    schemas = {"scd1": "durable1", "scd2": "durable"}
    for schema in schemas.values():
        run(scdflow, "sql", "--warehouse", "w", f"CREATE SCHEMA main.{schema}", cwd=tmp)
    # Bitemporal and SCD2 targets keep their settled rows in files apart from their open ones.
    for flow in ["bitemporal", "scd1", "scd2"]:
        run(scdflow, "run", f"g/{flow}.sql", "--out", "files", cwd=tmp)
        run(scdflow, "run", f"g/{flow}.sql", "--warehouse", "w", "--out", "out", cwd=tmp)
        check(tmp, flow, "default")
    streaming_table(tmp)
    # Durable runs as the files arrive, a third of them at a time.
    events = sorted((tmp / "g/events").iterdir())
    (tmp / "d/events").mkdir(parents=True)
    for flow in ["scd1", "scd2"]:
        (tmp / "d" / f"{flow}.sql").write_text((tmp / "g" / f"{flow}.sql").read_text())
    steps = []
    for part in range(3):
        for f in events[part * len(events) // 3:(part + 1) * len(events) // 3]:
            (tmp / "d/events" / f.name).write_bytes(f.read_bytes())
        if part == 2:
            # Properties changed between durable runs come with the next commit's version.
            pipeline = tmp / "d/scd2.sql"
            pipeline.write_text(pipeline.read_text().replace(
                "CREATE OR REFRESH STREAMING TABLE scd2;",
                "CREATE OR REFRESH STREAMING TABLE scd2 "
                "TBLPROPERTIES ('delta.checkpointInterval' = '5');"))
        for flow in ["scd1", "scd2"]:
            out = run(scdflow, "run", f"d/{flow}.sql", "--warehouse", "w", "--schema",
                      schemas[flow], "--state", f"state-{flow}", "--out", f"out-{flow}", cwd=tmp)
        commit = int(re.search(r"state: (\d+) commits", out).group(1))
        steps.append((commit, pl.read_delta(str(tmp / "w/main/durable/scd2"))))
    for flow in ["scd1", "scd2"]:
        check(tmp, flow, schemas[flow])
    configuration = DeltaTable(str(tmp / "w/main/durable/scd2")).metadata().configuration
    assert configuration.get("delta.checkpointInterval") == "5", configuration
    print("durable.scd2: the properties a later run changed are the table's")
    erase(scdflow, tmp)
    rewind(scdflow, tmp, steps)
    copy_from_feed(scdflow, tmp)


def rewind(scdflow, tmp, steps):
    # scdflow rewind of the durable SCD2 target to the oldest step's commit the state retains
    # (each base and delta keeps the manifest that committed it), undoing what came after, the
    # erasure included: the readers see the table as it was then, deltalake's history a
    # RESTORE, load_cdf the undo; the next run goes on.
    state = tmp / "state-scd2"
    retained = sorted(int(d.name.split("-")[1]) for d in state.iterdir()
                      if d.is_dir() and (d / "MANIFEST").exists())
    commit, then = next(s for s in steps if s[0] in retained)
    path = str(tmp / "w/main/durable/scd2")
    version = DeltaTable(path).version()
    run(scdflow, "rewind", "d/scd2.sql", "--warehouse", "w", "--schema", "durable",
        "--state", "state-scd2", "--out", "out-scd2", "--to", str(commit), cwd=tmp)
    columns = then.columns
    assert pl.read_delta(path).sort(columns).equals(then.sort(columns)), "polars read the rewind otherwise"
    assert DeltaTable(path).history(1)[0]["operation"] == "RESTORE", DeltaTable(path).history(1)
    undo = pl.from_arrow(pa.table(DeltaTable(path).load_cdf(starting_version=version + 1).read_all()))
    kinds = set(undo["_change_type"])
    assert kinds <= {"insert", "delete"} and undo.height > 0, undo
    run(scdflow, "run", "d/scd2.sql", "--warehouse", "w", "--schema", "durable",
        "--state", "state-scd2", "--out", "out-scd2", cwd=tmp)
    # The input after the commit is read again: the table is the last step's, without the
    # erasure (the rewind undid it).
    final = steps[-1][1]
    assert pl.read_delta(path).sort(columns).equals(final.sort(columns)), "the run after the rewind"
    print(f"durable.scd2: rewound to commit {commit} (retained: {retained}); polars read its "
          f"{then.height} rows, load_cdf the RESTORE's {undo.height} changes, and the next run "
          "went on")


def copy_from_feed(scdflow, tmp):
    # A pipeline reading its own SCD2 target's change data feed in the same commit: the copy
    # it publishes is, read by polars, the SCD2 table.
    run(scdflow, "sql", "--warehouse", "w", "CREATE SCHEMA main.feeds", cwd=tmp)
    copy = (ROOT / "tests/integration/target_feeds.rs").read_text()
    copy = copy.split('const COPY: &str = "', 1)[1].split('";', 1)[0]
    (tmp / "g/copy.sql").write_text((tmp / "g/scd2.sql").read_text() + copy)
    run(scdflow, "run", "g/copy.sql", "--warehouse", "w", "--schema", "feeds", "--out", "out-copy",
        cwd=tmp)
    scd2 = pl.read_delta(str(tmp / "w/main/feeds/scd2"))
    copied = pl.read_delta(str(tmp / "w/main/feeds/copy"))
    copied = copied.rename({"started": "__START_AT", "ended": "__END_AT"})
    assert copied.sort(scd2.columns).equals(scd2.sort(scd2.columns)), "the copy differs"
    print(f"feeds.copy: polars read the copy of scd2 made from its feed in the same pipeline, "
          f"{copied.height} rows")


def erase(scdflow, tmp):
    # DML on a published target: a GDPR erasure of one key's history through scdflow sql,
    # rewriting files that have deletion vectors; the readers see the table without the key,
    # load_cdf the erasure as its deletes, and the next durable run goes on from it.
    path = str(tmp / "w/main/durable/scd2")
    before = pl.read_delta(path)
    key = before["k"][0]
    version = DeltaTable(path).version()
    run(scdflow, "sql", "--warehouse", "w", f"DELETE FROM main.durable.scd2 WHERE k = {key}",
        cwd=tmp)
    want = before.filter(pl.col("k") != key).sort(before.columns)
    assert pl.read_delta(path).sort(before.columns).equals(want), "polars read the erasure otherwise"
    engine = pl.from_arrow(pa.table(
        QueryBuilder().register("t", DeltaTable(path)).execute("SELECT * FROM t").read_all()))
    assert engine.sort(before.columns).equals(want), "deltalake read the erasure otherwise"
    erased = pl.from_arrow(pa.table(
        DeltaTable(path).load_cdf(starting_version=version + 1).read_all()))
    gone = before.height - want.height
    assert gone > 0 and erased.height == gone, erased
    assert set(erased["_change_type"]) == {"delete"}, erased
    run(scdflow, "run", "d/scd2.sql", "--warehouse", "w", "--schema", "durable",
        "--state", "state-scd2", "--out", "out-scd2", cwd=tmp)
    assert pl.read_delta(path).sort(before.columns).equals(want), "the next run undid the erasure"
    print(f"durable.scd2: DELETE of key {key} erased its {gone} versions; polars, deltalake and "
          "load_cdf read it, and the next durable run kept it")


def streaming_table(tmp):
    # The generated pipelines' source streaming table, which the plain SCD2 run published last.
    path = str(tmp / "w/main/default/events")
    got = pl.read_delta(path)
    files = sorted((tmp / "g/events").iterdir())
    read = [pl.read_csv(f, schema=got.schema) for f in files]
    want = pl.concat(read)
    assert got.sort(got.columns).equals(want.sort(got.columns)), "polars read events otherwise"
    dt = DeltaTable(path)
    feed = pl.from_arrow(pa.table(dt.load_cdf(starting_version=0).read_all()))
    assert set(feed["_change_type"]) == {"insert"}, set(feed["_change_type"])
    per = feed.group_by("_commit_version").len().sort("_commit_version")
    assert per["_commit_version"].to_list() == list(range(1, len(files) + 1)), per
    assert per["len"].to_list() == [f.height for f in read], per
    print(f"default.events: polars read the {got.height} input rows of {len(files)} commits, "
          f"load_cdf each commit's as inserts ({len(dt.file_uris())} files after compaction)")


def check(tmp, flow, schema):
    path = str(tmp / "w/main" / schema / flow)
    dt = DeltaTable(path)
    assert "deletionVectors" in (dt.protocol().reader_features or []), dt.protocol()
    got = pl.read_delta(path)
    columns = got.columns
    want = pl.read_csv(tmp / f"files/{flow}.csv", schema=got.schema)
    assert got.sort(columns).equals(want.sort(columns)), f"polars read {flow} otherwise"
    engine = pl.from_arrow(pa.table(
        QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all()))
    assert engine.sort(columns).equals(want.sort(columns)), f"deltalake read {flow} otherwise"
    feed = pl.from_arrow(pa.table(dt.load_cdf(starting_version=1).read_all()))
    key = columns + ["_change_type", "_commit_version"]
    feed = feed.select(key).with_columns(pl.all().cast(pl.Utf8)).sort(key)
    changes = pl.read_csv(tmp / f"files/{flow}.changes.csv", infer_schema_length=0)
    assert feed.equals(changes.select(key).sort(key)), f"{flow}: the change data feed differs"
    # A history's data files each hold open rows only or settled (ended) rows only.
    end = "__SYSTEM_END_AT" if "__SYSTEM_END_AT" in columns else "__END_AT"
    if end in columns:
        classes = set()
        for uri in dt.file_uris():
            ends = pq.read_table(uri, columns=[end]).column(end)
            assert ends.null_count in (0, len(ends)), f"{flow}: {uri} mixes open and ended rows"
            classes.add(ends.null_count == 0)
        assert classes == {False, True}, f"{flow}: files of one class only"
    # Data files are zstd, change-data files snappy: the readers above read both.
    codecs = {pq.ParquetFile(uri).metadata.row_group(0).column(0).compression
              for uri in dt.file_uris()}
    assert codecs == {"ZSTD"}, f"{flow}: data files compressed {codecs}"
    feeds = list(pathlib.Path(path, "_change_data").glob("*.parquet"))
    codecs = {pq.ParquetFile(f).metadata.row_group(0).column(0).compression for f in feeds}
    assert codecs == {"SNAPPY"}, f"{flow}: change-data files compressed {codecs}"
    # The event log is in the versions' commitInfo, which deltalake's history shows.
    progress = [h for h in dt.history() if "flowProgress" in h]
    assert len(progress) == dt.version(), f"{flow}: {len(progress)} versions with flowProgress"
    assert progress[0]["flowProgress"][0]["metrics"]["commit_version"] >= 1, progress[0]
    print(f"{schema}.{flow}: polars and deltalake read {got.height} rows in {dt.version()} "
          f"versions, load_cdf {feed.height} changes, as the files of a run without a "
          "warehouse")


if __name__ == "__main__":
    main()
