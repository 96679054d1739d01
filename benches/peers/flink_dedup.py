#!/usr/bin/env python3
"""Apache Flink peer of the reorder-latency benchmark: SCD1 as Flink SQL writes it.

Reads the files `scdflow generate --out DIR` writes (`DIR/events/commit_NNNNNN.csv`, or `.jsonl`)
as one bounded filesystem source and runs, in streaming mode, the deduplication Flink documents
for "keep the latest row per key":

    SELECT k, c0, .. FROM (
      SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY seq DESC) AS rn
      FROM events WHERE op <> 'TRUNCATE')
    WHERE rn = 1 AND op = 'UPSERT'

into a blackhole sink with primary key k (an upsert table). Per key the greatest-sequence event
wins and a DELETE winner leaves no row: SPEC 3.2's SCD1 for the generator's events, whose
sequences are unique. Truncates (D5) and partial updates (D6) have no counterpart in this query:
the script refuses such inputs (exit 2) rather than measure different semantics.

Measured: throughput only. Flink's job net runtime (JobExecutionResult.getNetRuntime: from the
job's submission to the cluster until it finished, so task deployment is included, JVM and
client start-up are not) over all events. Flink has no per-commit latency to report here: its
source reads the files as one stream, and its sinks do not say when a commit's rows are out.
--preload is accepted for the bench's contract and ignored (every file is part of the run).

Install: python3 -m pip install apache-flink   (about 850 MB with its bundled jars; Java 11+ on
         PATH or in JAVA_HOME)
Usage:   python3 benches/peers/flink_dedup.py --events-dir DIR [--scd 1] [--parallelism P]
             [--json] [--out FILE.csv] [--preload N]
--out FILE.csv also collects the final table (sorted by k) into FILE.csv, as `scdflow run`
writes scd1.csv for these files (for checking, not timed).
With --json the last stdout line is one JSON object:
  {"peer":"flink","scd":1,"events":N,"commits":C,"seconds":S,"parallelism":P}
"""

import argparse
import csv
import json
import os
import sys


def fail(message):
    print(f"flink_dedup: {message}", file=sys.stderr)
    sys.exit(2)


def commit_files(events_dir):
    names = sorted(n for n in os.listdir(events_dir) if n.endswith((".csv", ".jsonl")))
    if not names:
        fail(f"{events_dir}: no commit files (commit_NNNNNN.csv or .jsonl)")
    kinds = {os.path.splitext(n)[1] for n in names}
    if len(kinds) > 1:
        fail(f"{events_dir}: both CSV and JSONL files; give one format")
    return [os.path.join(events_dir, n) for n in names], kinds.pop()


def scan(files, ext):
    """The payload columns and the number of events; refuses truncates and partial updates."""
    payload, events = None, 0
    for path in files:
        with open(path, newline="") as f:
            if ext == ".csv":
                rows = csv.DictReader(f)
            else:
                rows = (json.loads(line) for line in f if line.strip())
            for line, row in enumerate(rows, start=2 if ext == ".csv" else 1):
                if payload is None:
                    payload = [c for c in row if c.startswith("c") and c[1:].isdigit()]
                events += 1
                op = row.get("op")
                if op == "TRUNCATE":
                    fail(f"{path}:{line}: a TRUNCATE; the deduplication query has no truncates")
                if op == "UPSERT" and row.get("cols") not in (None, "", ",".join(payload)):
                    fail(f"{path}:{line}: a partial update (cols {row.get('cols')!r}); "
                         "the deduplication query has no field-level updates")
    return payload or [], events


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events-dir", required=True)
    p.add_argument("--scd", type=int, default=1)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--json", action="store_true")
    p.add_argument("--out")
    p.add_argument("--preload", type=int, default=0)
    a = p.parse_args()
    if a.scd != 1:
        fail("only SCD1 (--scd 1): Flink SQL has no SCD2 counterpart here")
    try:
        from pyflink.table import EnvironmentSettings, TableEnvironment
    except ImportError:
        fail("cannot import pyflink: python3 -m pip install apache-flink")
    files, ext = commit_files(a.events_dir)
    payload, events = scan(files, ext)

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", str(a.parallelism))
    columns = ", ".join(["k BIGINT"] + [f"{c} STRING" for c in payload]
                        + ["op STRING", "seq BIGINT", "st BIGINT", "cols STRING"])
    fmt = ("'format' = 'csv', 'csv.ignore-parse-errors' = 'true'" if ext == ".csv"
           else "'format' = 'json'")
    # The CSV header line is the one row that fails to parse (k is not a number); the scan
    # above has checked every other line.
    env.execute_sql(f"CREATE TABLE events ({columns}) WITH ('connector' = 'filesystem', "
                    f"'path' = '{os.path.abspath(a.events_dir)}', {fmt})")
    image = ", ".join(["k"] + payload)
    latest = (f"SELECT {image} FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY seq "
              f"DESC) AS rn FROM events WHERE op <> 'TRUNCATE') WHERE rn = 1 AND op = 'UPSERT'")
    sink_columns = ", ".join(["k BIGINT"] + [f"{c} STRING" for c in payload])
    env.execute_sql(f"CREATE TABLE sink ({sink_columns}, PRIMARY KEY (k) NOT ENFORCED) "
                    "WITH ('connector' = 'blackhole')")
    job = env.execute_sql(f"INSERT INTO sink {latest}").get_job_client()
    seconds = job.get_job_execution_result().result().get_net_runtime() / 1000.0

    if a.out:
        batch = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
        batch.execute_sql(f"CREATE TABLE events ({columns}) WITH ('connector' = 'filesystem', "
                          f"'path' = '{os.path.abspath(a.events_dir)}', {fmt})")
        with batch.execute_sql(latest).collect() as results:
            rows = sorted((tuple(r) for r in results), key=lambda r: r[0])
        with open(a.out, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["k"] + payload)
            w.writerows(rows)

    print(f"flink: {events} events in {len(files)} files, SCD1 deduplication at parallelism "
          f"{a.parallelism}: {seconds:.3f} s net runtime, {events / max(seconds, 1e-9):.0f} events/s")
    if a.json:
        print(json.dumps({"peer": "flink", "scd": 1, "events": events, "commits": len(files),
                          "seconds": seconds, "parallelism": a.parallelism}))


if __name__ == "__main__":
    main()
