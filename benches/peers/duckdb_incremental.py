#!/usr/bin/env python3
"""DuckDB peer of the reorder-latency benchmark: incremental SCD1/SCD2 the way a batch user does it.

Reads the files `scdflow generate --out DIR` writes (`DIR/events/commit_NNNNNN.csv`, or `.jsonl`,
one file per commit, in name order) and, for every commit, in ONE transaction:

  1. appends the commit's rows to an `events` table (SCD2: without truncate rows, as the
     generated `scd2.sql` filters them with `WHERE op <> 'TRUNCATE'`);
  2. recomputes the target rows of the keys the commit touches with window functions over the
     whole retained history of those keys, DELETEs the touched keys' rows from the target and
     INSERTs the recomputed ones. A commit holding a TRUNCATE touches every key (SCD1).

Semantics (SPEC 3.2, 3.3, section 8):
  SCD1: per key, the greatest-sequence UPSERT/DELETE wins; ties (D1, D2): DELETE beats UPSERT,
        then the greatest image (column by column, NULL lowest). The key has a row iff the
        winner is an UPSERT with seq > t*, t* the greatest TRUNCATE sequence (D5: truncate wins
        equality, and keeps acting on later-arriving older events).
  SCD2: one event per (key, seq) by the same tie rule; in sequence order, an UPSERT whose image
        differs from the open version's (or with no open version) starts a version at its seq;
        an equal image continues it; a DELETE closes it. __END_AT is the seq of the next
        version start or delete of the key, NULL for the current version.
Partial updates (`generate --partial F`, F > 0) are not supported: the script stops (exit 2).

The database is in memory unless --db FILE names a new database file: the fastest setting for
DuckDB here (a file database adds checkpoints to some commits: at a 1M-event history with
10,000-event commits, SCD2 commits then took up to about 1 s instead of about 0.4 s).

Measured per commit: the wall time of the transaction (BEGIN .. COMMIT: append + recompute),
i.e. from handing the batch to the database until the target reflects it. Parsing the commit
file into a temporary staging table happens before BEGIN and is not counted (scdflow's
benchmark also hands events over already parsed); its total is printed separately.
Percentiles are exact nearest-rank over the per-commit list.

Install: python3 -m pip install --user duckdb
Usage:   python3 benches/peers/duckdb_incremental.py --events-dir DIR [--scd 1|2] [--threads N]
             [--json] [--out FILE.csv] [--tail N] [--latencies FILE.csv] [--preload N] [--db FILE]
             [--final]
With --final it computes only the final target of all the files, reading them in one query
(what `scdflow run` over the same files produces as its table), and prints the wall time (read,
compute, and --out's write) and the process's peak RSS.
With --json the last stdout line is one JSON object:
  {"peer":"duckdb","scd":1,"events":N,"commits":C,"seconds":S,"p50_us":..,"p90_us":..,
   "p99_us":..,"p999_us":..,"max_us":..}
where `events` counts the rows of the timed commit files, `commits` those files (all but the
--preload ones) and `seconds` the sum of their transaction times. --preload N applies the first
N files as one untimed bulk load (append all, compute the whole target once), so that a long
history does not take hours of timed commits to build.
"""

import argparse
import json
import os
import re
import shlex
import sys
import time

FIXED = ("k", "op", "seq", "st", "cols")
TYPES = {"k": "BIGINT", "seq": "BIGINT", "st": "BIGINT"}


def fail(message):
    print(f"duckdb_incremental: {message}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="DuckDB incremental SCD1/SCD2 over the files of `scdflow generate`."
    )
    p.add_argument("--events-dir", required=True, metavar="DIR",
                   help="the `scdflow generate --out` directory (or its events/ subdirectory)")
    p.add_argument("--scd", type=int, choices=(1, 2), default=1, help="SCD type (default 1)")
    p.add_argument("--threads", type=int, default=2, help="DuckDB threads (default 2)")
    p.add_argument("--json", action="store_true",
                   help="print the summary as one JSON object on the last stdout line")
    p.add_argument("--out", metavar="FILE.csv",
                   help="write the final target as CSV, sorted by key then __START_AT, "
                        "in scdflow's CSV format")
    p.add_argument("--tail", type=int, default=10, metavar="N",
                   help="also print percentiles over the last N commits (default 10; 0 = no)")
    p.add_argument("--latencies", metavar="FILE.csv",
                   help="write one line per commit: commit, rows, history, touched, us")
    p.add_argument("--preload", type=int, default=0, metavar="N",
                   help="apply the first N commit files as one untimed bulk load (history), "
                        "then time the remaining commits (default 0)")
    p.add_argument("--final", action="store_true",
                   help="compute only the final target of all files, in one query over all of "
                        "them (the batch job `scdflow run` competes with); prints its wall time "
                        "and the process's peak RSS")
    p.add_argument("--db", default=":memory:", metavar="FILE",
                   help="DuckDB database file, which must not exist yet "
                        "(default :memory:, an in-memory database)")
    return p.parse_args(argv)


def commit_files(events_dir):
    d = events_dir
    if os.path.isdir(os.path.join(d, "events")):
        d = os.path.join(d, "events")
    if not os.path.isdir(d):
        fail(f"{events_dir}: not a directory")
    names = sorted(n for n in os.listdir(d) if n.endswith((".csv", ".jsonl")))
    if not names:
        fail(f"{d}: no commit files (.csv or .jsonl)")
    exts = {os.path.splitext(n)[1] for n in names}
    if len(exts) != 1:
        fail(f"{d}: mixed .csv and .jsonl files")
    return d, [os.path.join(d, n) for n in names], exts.pop()


def columns_of(first_file, ext):
    """Column names in file order: from the CSV header, or the first JSON object's keys."""
    with open(first_file, encoding="utf-8") as f:
        line = f.readline().rstrip("\r\n")
    if ext == ".csv":
        names = [c.strip('"') for c in line.split(",")]
    else:
        if not line:
            fail(f"{first_file}: empty first commit; cannot learn the schema")
        names = list(json.loads(line).keys())
    missing = [c for c in FIXED if c not in names]
    if missing:
        fail(f"{first_file}: not a `scdflow generate` file: missing column(s) {missing}")
    return names


def workload_line(gen_dir):
    """The `-- Generated by scdflow generate: ...` comment of the generated pipelines."""
    path = os.path.join(gen_dir, "scd1.sql")
    try:
        with open(path, encoding="utf-8") as f:
            first = f.readline().strip()
        m = re.match(r"-- Generated by `scdflow generate`: (.*)\.$", first)
        return m.group(1) if m else None
    except OSError:
        return None


def q(name):
    return '"' + name.replace('"', '""') + '"'


def sql_str(s):
    return "'" + s.replace("'", "''") + "'"


def percentile(sorted_values, per_mille):
    """Nearest rank: the smallest value with at least per_mille/1000 of the values <= it."""
    n = len(sorted_values)
    rank = max(1, (per_mille * n + 999) // 1000)
    return sorted_values[rank - 1]


def summary(latencies_us):
    s = sorted(latencies_us)
    return {
        "p50_us": percentile(s, 500),
        "p90_us": percentile(s, 900),
        "p99_us": percentile(s, 990),
        "p999_us": percentile(s, 999),
        "max_us": s[-1],
    }


def csv_cell(v):
    """scdflow's CSV cell: NULL is an empty unquoted field; quote when empty or when the text
    holds , " CR or LF, or starts or ends with a space or tab (src/io/write.rs)."""
    if v is None:
        return ""
    t = str(v)
    if (t == "" or any(c in t for c in ',"\r\n') or t[0] in " \t" or t[-1] in " \t"):
        return '"' + t.replace('"', '""') + '"'
    return t


class Peer:
    def __init__(self, con, columns, payload, scd, ext):
        self.con = con
        self.columns = columns
        self.payload = payload
        self.scd = scd
        self.ext = ext
        self.target_cols = ["k"] + payload + (["__START_AT", "__END_AT"] if scd == 2 else [])
        cols_ddl = ", ".join(f"{q(c)} {TYPES.get(c, 'VARCHAR')}" for c in columns)
        con.execute(f"CREATE TABLE events ({cols_ddl})")
        tgt = ", ".join(f"{q(c)} {TYPES.get(c, 'BIGINT' if c.startswith('__') else 'VARCHAR')}"
                        for c in self.target_cols)
        con.execute(f"CREATE TABLE target ({tgt})")
        # D2 tie order: DELETE first, then the greatest image (NULL lowest).
        self.image_desc = ", ".join(f"{q(c)} DESC NULLS LAST" for c in payload)
        self.payload_list = ", ".join(q(c) for c in payload)
        self.cols_struct = "{" + ", ".join(f"{sql_str(c)}: {sql_str(TYPES.get(c, 'VARCHAR'))}"
                                           for c in columns) + "}"

    def reader(self, files):
        """The table function reading `files` (an SQL string or list of strings) as the
        generator wrote them."""
        if self.ext == ".csv":
            return (f"read_csv({files}, header = true, auto_detect = false, "
                    f"delim = ',', quote = '\"', escape = '\"', nullstr = '', "
                    f"allow_quoted_nulls = false, columns = {self.cols_struct})")
        return (f"read_json({files}, format = 'newline_delimited', "
                f"columns = {self.cols_struct})")

    def stage(self, path):
        """Parses one commit file into TEMP TABLE batch (not timed). Returns (rows, truncates)."""
        reader = self.reader(sql_str(path))
        sel = ", ".join(q(c) for c in self.columns)
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE batch AS SELECT {sel} FROM {reader}")
        rows, truncates, partial = self.con.execute(
            "SELECT count(*), count(*) FILTER (op = 'TRUNCATE'), "
            "count(*) FILTER (op IS DISTINCT FROM 'TRUNCATE' AND op IS DISTINCT FROM 'DELETE' "
            f"AND cols IS DISTINCT FROM {sql_str(','.join(self.payload))}) FROM batch"
        ).fetchone()
        if partial:
            fail(f"{path}: {partial} partial upsert(s) (cols is not every payload column); "
                 "only `--partial 0` workloads are supported")
        return rows, truncates

    def scd1_rows(self, keys_filter):
        """SCD1 rows of the keys selected by keys_filter (a WHERE fragment over `k`)."""
        return f"""
            WITH tstar AS (SELECT max(seq) AS t FROM events WHERE op = 'TRUNCATE'),
            winners AS (
                SELECT k, {self.payload_list}, seq, coalesce(op = 'DELETE', false) AS is_del
                FROM events
                WHERE op IS DISTINCT FROM 'TRUNCATE' {keys_filter}
                QUALIFY row_number() OVER (
                    PARTITION BY k ORDER BY seq DESC, is_del DESC, {self.image_desc}) = 1
            )
            SELECT k, {self.payload_list}
            FROM winners, tstar
            WHERE NOT is_del AND (tstar.t IS NULL OR seq > tstar.t)"""

    def scd2_rows(self, keys_filter):
        changed = " OR ".join(f"lag({q(c)}) OVER w IS DISTINCT FROM {q(c)}" for c in self.payload)
        return f"""
            WITH ev AS (
                SELECT k, {self.payload_list}, seq, coalesce(op = 'DELETE', false) AS is_del
                FROM events
                WHERE true {keys_filter}
                QUALIFY row_number() OVER (
                    PARTITION BY k, seq ORDER BY is_del DESC, {self.image_desc}) = 1
            ),
            marked AS (
                SELECT *, NOT is_del AND (lag(seq) OVER w IS NULL OR lag(is_del) OVER w
                                          OR {changed}) AS starts
                FROM ev
                WINDOW w AS (PARTITION BY k ORDER BY seq)
            ),
            bounds AS (
                SELECT *, lead(seq) OVER (PARTITION BY k ORDER BY seq) AS end_at
                FROM marked
                WHERE starts OR is_del
            )
            SELECT k, {self.payload_list}, seq AS __START_AT, end_at AS __END_AT
            FROM bounds
            WHERE starts"""

    def apply(self, truncates):
        """One transaction: append the staged batch, recompute the touched keys (the keys of the
        batch, in TEMP TABLE touched). Returns None when every key was recomputed (a truncate),
        else True."""
        con = self.con
        con.execute("BEGIN TRANSACTION")
        where = "" if self.scd == 1 else " WHERE op <> 'TRUNCATE'"
        con.execute(f"INSERT INTO events SELECT * FROM batch{where}")
        rows = self.scd1_rows if self.scd == 1 else self.scd2_rows
        if self.scd == 1 and truncates:
            # A truncate touches every key.
            con.execute("DELETE FROM target")
            con.execute(f"INSERT INTO target {rows('')}")
            touched = None
        else:
            con.execute("CREATE OR REPLACE TEMP TABLE touched AS "
                        "SELECT DISTINCT k FROM batch WHERE k IS NOT NULL")
            keys = " AND k IN (SELECT k FROM touched)"
            con.execute("DELETE FROM target WHERE k IN (SELECT k FROM touched)")
            con.execute(f"INSERT INTO target {rows(keys)}")
            touched = True
        con.execute("COMMIT")
        return touched

    def bulk_load(self, paths):
        """Untimed: appends every file of `paths` and computes the whole target from scratch."""
        cols = ", ".join(q(c) for c in self.columns)
        for path in paths:
            self.stage(path)
            where = "" if self.scd == 1 else " WHERE op <> 'TRUNCATE'"
            self.con.execute(f"INSERT INTO events SELECT {cols} FROM batch{where}")
        rows = self.scd1_rows if self.scd == 1 else self.scd2_rows
        self.con.execute("DELETE FROM target")
        self.con.execute(f"INSERT INTO target {rows('')}")

    def load_all(self, paths):
        """Reads every file in one query and computes the whole target from scratch."""
        reader = self.reader("[" + ", ".join(sql_str(p) for p in paths) + "]")
        cols = ", ".join(q(c) for c in self.columns)
        where = "" if self.scd == 1 else " WHERE op <> 'TRUNCATE'"
        self.con.execute(f"INSERT INTO events SELECT {cols} FROM {reader}{where}")
        rows = self.scd1_rows if self.scd == 1 else self.scd2_rows
        self.con.execute(f"INSERT INTO target {rows('')}")

    def dump(self, path):
        order = "k, __START_AT" if self.scd == 2 else "k"
        cur = self.con.execute(f"SELECT * FROM target ORDER BY {order}")
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(",".join(csv_cell(c) for c in self.target_cols) + "\n")
            while True:
                chunk = cur.fetchmany(100_000)
                if not chunk:
                    break
                f.write("".join(",".join(csv_cell(v) for v in row) + "\n" for row in chunk))


def main(argv):
    args = parse_args(argv)
    try:
        import duckdb
    except ImportError:
        fail("the Python package `duckdb` is missing; install it with "
             "`python3 -m pip install --user duckdb`")
    if args.threads < 1:
        fail("--threads must be at least 1")
    if args.db != ":memory:" and os.path.exists(args.db):
        fail(f"{args.db}: exists; give a new file (the tables are created from scratch)")
    return run(args, duckdb, argv)


def run(args, duckdb, argv):
    events_dir, files, ext = commit_files(args.events_dir)
    gen_dir = os.path.dirname(os.path.abspath(events_dir))
    columns = columns_of(files[0], ext)
    payload = [c for c in columns if c not in FIXED]

    con = duckdb.connect(args.db)
    con.execute(f"SET threads = {int(args.threads)}")
    peer = Peer(con, columns, payload, args.scd, ext)

    if args.final:
        import resource
        t0 = time.perf_counter_ns()
        peer.load_all(files)
        if args.out:
            peer.dump(args.out)
        wall = (time.perf_counter_ns() - t0) / 1e9
        target_rows = con.execute("SELECT count(*) FROM target").fetchone()[0]
        events = con.execute("SELECT count(*) FROM events").fetchone()[0]
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"command: {shlex.join(['python3', sys.argv[0]] + list(argv))}")
        print(f"duckdb {duckdb.__version__}, threads {args.threads}: SCD{args.scd} of {events} "
              f"events in {len(files)} files, {target_rows} rows, {wall:.3f} s, "
              f"peak RSS {peak_mb:.0f} MiB")
        if args.json:
            print(json.dumps({"peer": "duckdb", "scd": args.scd, "events": events,
                              "rows": target_rows, "seconds": round(wall, 6),
                              "peak_rss_mib": round(peak_mb, 1)}, separators=(",", ":")))
        return 0
    if not 0 <= args.preload < len(files):
        fail(f"--preload must be in 0..{len(files) - 1} ({len(files)} commit files)")
    preload_ns = 0
    if args.preload:
        t0 = time.perf_counter_ns()
        peer.bulk_load(files[:args.preload])
        preload_ns = time.perf_counter_ns() - t0
    preloaded = con.execute("SELECT count(*) FROM events").fetchone()[0]

    latencies_us, per_commit = [], []
    rows_total = 0
    stage_ns = 0
    wall0 = time.perf_counter_ns()
    for i, path in enumerate(files[args.preload:], args.preload + 1):
        t0 = time.perf_counter_ns()
        rows, truncates = peer.stage(path)
        t1 = time.perf_counter_ns()
        touched = peer.apply(truncates)
        t2 = time.perf_counter_ns()
        stage_ns += t1 - t0
        rows_total += rows
        us = (t2 - t1) // 1000
        latencies_us.append(us)
        if args.latencies:
            n_touched = ("all" if touched is None
                         else con.execute("SELECT count(*) FROM touched").fetchone()[0])
            history = con.execute("SELECT count(*) FROM events").fetchone()[0]
            per_commit.append((i, rows, history, n_touched, us))
    wall_ns = time.perf_counter_ns() - wall0

    seconds = sum(latencies_us) / 1e6
    stats = summary(latencies_us)
    keys = con.execute("SELECT count(DISTINCT k) FROM events").fetchone()[0]
    target_rows = con.execute("SELECT count(*) FROM target").fetchone()[0]
    if args.out:
        peer.dump(args.out)
    if args.latencies:
        with open(args.latencies, "w", encoding="utf-8") as f:
            f.write("commit,rows,history_events,touched_keys,us\n")
            for r in per_commit:
                f.write(",".join(str(x) for x in r) + "\n")

    cmd = shlex.join(["python3"] + [sys.argv[0]] + list(argv))
    print(f"command: {cmd}")
    print(f"duckdb {duckdb.__version__}, threads {args.threads}, database {args.db}")
    wl = workload_line(gen_dir)
    if wl:
        print(f"workload (scdflow generate): {wl}")
    timed = len(files) - args.preload
    if args.preload:
        print(f"preload: commits 1..{args.preload} as one untimed bulk load, {preloaded} events "
              f"retained, {preload_ns / 1e9:.3f} s")
    print(f"workload (timed): {rows_total} events in {timed} commits over {keys} keys "
          f"(from {events_dir})")
    print(f"SCD{args.scd}: target {target_rows} rows")
    fmt = lambda s: " ".join(f"{k[:-3]} {v}" for k, v in s.items())
    print(f"per-commit latency (us, transaction: append + recompute): {fmt(stats)}")
    if args.tail and len(latencies_us) > args.tail:
        print(f"  last {args.tail} commits: {fmt(summary(latencies_us[-args.tail:]))}")
    rate = rows_total / seconds if seconds > 0 else float("inf")
    print(f"total {seconds:.3f} s in transactions, {rate:,.0f} events/s; "
          f"parsing the files (not counted) {stage_ns / 1e9:.3f} s; wall {wall_ns / 1e9:.3f} s")
    if args.out:
        print(f"target -> {args.out}")
    con.close()
    if args.json:
        print(json.dumps({"peer": "duckdb", "scd": args.scd, "events": rows_total,
                          "commits": timed, "seconds": round(seconds, 6), **stats},
                         separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
