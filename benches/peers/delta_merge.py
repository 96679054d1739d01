#!/usr/bin/env python3
"""delta-rs MERGE peer of the Delta publishing benchmark: the SCD2 MERGE a user hand-writes,
run by the Python `deltalake` package (delta-rs and its DataFusion engine) against a Delta table.

Starts from a copy of a given Delta table (`--start`: the SCD2 table scdflow published from the
first commits), then for each of the given commit files (`scdflow generate`'s CSV files, in
name order), in ONE `MERGE` (one Delta version):

  source = the commit's events without TRUNCATE rows, one per key (the greatest `seq`), twice:
           once with `merge_key = k` (to close the key's current version), and the non-DELETE
           ones once more with `merge_key = NULL` (to insert the new version);
  MERGE INTO t USING source s ON t.k = s.merge_key AND t.__END_AT IS NULL
    WHEN MATCHED AND s.seq > t.__START_AT THEN UPDATE SET __END_AT = s.seq
    WHEN NOT MATCHED AND s.merge_key IS NULL THEN INSERT (k, c..., __START_AT = s.seq, NULL)

This is the documented SCD2 MERGE pattern (a staged union, one atomic write). It does not
order late events or skip equal images — what AUTO CDC does — so its table is not scdflow's; it
measures what such a write costs. delta-rs writes MERGE copy-on-write: each file holding a
matched row is rewritten.

Measured per commit: the wall time of reading the commit file and the MERGE (reading is a
small share), and the bytes the table directory grew by (data, change-data and log files).
Percentiles are exact nearest-rank.

Install: python3 -m pip install deltalake polars pyarrow
Usage:   python3 benches/peers/delta_merge.py --start TABLE --work DIR FILE.csv...
The last stdout line is one JSON object:
  {"peer":"delta-rs merge","commits":C,"p50_us":..,"p99_us":..,"max_us":..,
   "bytes_per_commit":..,"table_rows":..}
"""

import argparse
import json
import os
import pathlib
import shutil
import sys
import time

try:
    import polars as pl
    import pyarrow  # noqa: F401 -- Polars' `to_arrow()` hands frames to deltalake through it
    from deltalake import DeltaTable, write_deltalake
except ImportError:
    print("delta_merge.py needs: python3 -m pip install deltalake polars pyarrow", file=sys.stderr)
    sys.exit(2)


def tree_bytes(path):
    return sum(f.stat().st_size for f in pathlib.Path(path).rglob("*") if f.is_file())


def nearest(sorted_values, q):
    i = max(1, min(len(sorted_values), -(-int(q * len(sorted_values) * 1000) // 1000)))
    return sorted_values[i - 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--start", required=True, help="the Delta table to start from (copied)")
    ap.add_argument("--work", required=True, help="a directory for the peer's table")
    ap.add_argument("files", nargs="+", help="commit files, applied in the order given")
    args = ap.parse_args()
    table = os.path.join(args.work, "merge_target")
    shutil.rmtree(table, ignore_errors=True)
    start = pl.read_delta(args.start)
    write_deltalake(table, start.to_arrow())
    columns = [c for c in start.columns if c not in ("__START_AT", "__END_AT")]
    image = [c for c in columns if c != "k"]
    print(f"command: python3 benches/peers/delta_merge.py --start {args.start} --work "
          f"{args.work} ({len(args.files)} commit files)")
    print(f"start: {start.height} rows copied from {args.start}")

    micros, grown = [], []
    for path in args.files:
        before = tree_bytes(table)
        began = time.perf_counter()
        events = pl.read_csv(path, schema_overrides={"k": pl.Int64, "seq": pl.Int64})
        latest = (events.filter(pl.col("op") != "TRUNCATE")
                  .sort("seq").group_by("k").last())
        close = latest.with_columns(pl.col("k").alias("merge_key"))
        insert = (latest.filter(pl.col("op") != "DELETE")
                  .with_columns(pl.lit(None, dtype=pl.Int64).alias("merge_key")))
        source = pl.concat([close, insert]).select(["merge_key", *columns, "seq"])
        values = {c: f"s.{c}" for c in columns}
        values.update({"__START_AT": "s.seq", "__END_AT": "NULL"})
        (DeltaTable(table)
         .merge(source.to_arrow(), "t.k = s.merge_key AND t.__END_AT IS NULL",
                source_alias="s", target_alias="t")
         .when_matched_update({"__END_AT": "s.seq"}, predicate="s.seq > t.__START_AT")
         .when_not_matched_insert(values, predicate="s.merge_key IS NULL")
         .execute())
        micros.append((time.perf_counter() - began) * 1e6)
        grown.append(tree_bytes(table) - before)
    micros.sort()
    rows = pl.read_delta(table).height
    print(f"delta-rs MERGE: {len(micros)} commits, p50 {nearest(micros, 0.5) / 1e3:.1f} ms, "
          f"p99 {nearest(micros, 0.99) / 1e3:.1f} ms, {sum(grown) / len(grown) / 1e6:.2f} MB "
          f"written per commit; {rows} rows")
    print(json.dumps({
        "peer": "delta-rs merge", "commits": len(micros),
        "p50_us": nearest(micros, 0.5), "p99_us": nearest(micros, 0.99), "max_us": micros[-1],
        "bytes_per_commit": sum(grown) / len(grown), "table_rows": rows,
    }))


if __name__ == "__main__":
    main()
