#!/usr/bin/env bash
# Checks that benches/peers/duckdb_incremental.py computes the same SCD1 and SCD2 tables as
# `scdflow run` on the same files: byte-identical CSVs (same rows, order, NULL vs "" and quoting).
# With FLINK_PYTHON set, also that benches/peers/flink_dedup.py computes the same SCD1 table on
# generated inputs without truncates (a, and f: JSON lines with stragglers).
# Not part of CI (it needs the `duckdb` Python package: python3 -m pip install --user duckdb;
# and for Flink, apache-flink in FLINK_PYTHON's environment plus Java).
#
# Usage: bash benches/peers/check.sh [WORKDIR]     (default: a fresh directory under /tmp)
# SCDFLOW=path/to/scdflow uses that binary instead of `cargo run --release --`.
set -euo pipefail
cd "$(dirname "$0")/../.."
W="${1:-$(mktemp -d /tmp/scdflow-peer-check.XXXXXX)}"
PEER=benches/peers/duckdb_incremental.py
if [ -n "${SCDFLOW:-}" ]; then S=("$SCDFLOW"); else S=(cargo run --release -q --); fi
fail=0

compare() { # DIR SCD
    local dir=$1 scd=$2
    python3 "$PEER" --events-dir "$dir" --scd "$scd" --out "$dir/duckdb_scd$scd.csv" >/dev/null
    "${S[@]}" run "$dir/scd$scd.sql" --out "$dir/out$scd" >/dev/null
    if cmp -s "$dir/out$scd/scd$scd.csv" "$dir/duckdb_scd$scd.csv"; then
        echo "identical: $dir SCD$scd ($(($(wc -l <"$dir/duckdb_scd$scd.csv") - 1)) rows)"
    else
        echo "DIFFERENT: $dir SCD$scd"; diff "$dir/out$scd/scd$scd.csv" "$dir/duckdb_scd$scd.csv" | head -20
        fail=1
    fi
}

rm -rf "$W/a" "$W/t" "$W/s" "$W/j" "$W/ties"
"${S[@]}" generate --out "$W/a" --events 20000 --keys 500 --commits 40 --displacement 1000 --deletes 0.1
"${S[@]}" generate --out "$W/t" --events 20000 --keys 500 --commits 40 --displacement 1000 --deletes 0.1 --truncates 0.001
# Few keys (deep histories), fully shuffled, three payload columns, more truncates.
"${S[@]}" generate --out "$W/s" --events 30000 --keys 20 --commits 30 --displacement 30000 --deletes 0.2 --truncates 0.002 --width 3
# JSON lines, stragglers.
"${S[@]}" generate --out "$W/j" --events 20000 --keys 5000 --commits 25 --displacement 1000 --stragglers 0.05 --deletes 0.1 --truncates 0.001 --format jsonl

# Hand-written: sequence ties (D1 replays, D2 delete beats upsert, greatest image wins), empty
# strings vs NULL, quoting, a truncate (D5: equality removes, later-arriving older events ignored).
mkdir -p "$W/ties/events"
cp "$W/a/scd1.sql" "$W/a/scd2.sql" "$W/ties/"
cat >"$W/ties/events/commit_000001.csv" <<'EOF'
k,c0,c1,op,seq,st,cols
1,a,b,UPSERT,10,0,"c0,c1"
1,a,c,UPSERT,10,1,"c0,c1"
2,x,y,UPSERT,5,2,"c0,c1"
2,,,DELETE,5,3,
3,"","",UPSERT,7,4,"c0,c1"
3,p,q,UPSERT,8,5,"c0,c1"
4,,,DELETE,3,6,
4,"a, b"," lead",UPSERT,4,7,"c0,c1"
5,m,n,UPSERT,1,8,"c0,c1"
5,m,n,UPSERT,1,9,"c0,c1"
5,m,n,UPSERT,2,10,"c0,c1"
5,m,o,UPSERT,3,11,"c0,c1"
EOF
cat >"$W/ties/events/commit_000002.csv" <<'EOF'
k,c0,c1,op,seq,st,cols
,,,TRUNCATE,7,12,
3,"",z,UPSERT,9,13,"c0,c1"
6,"q""uote",,UPSERT,7,14,"c0,c1"
6,r,s,UPSERT,6,15,"c0,c1"
5,m,n,UPSERT,20,16,"c0,c1"
1,,,DELETE,11,17,
1,a,a,UPSERT,12,18,"c0,c1"
EOF
cat >"$W/ties/events/commit_000003.csv" <<'EOF'
k,c0,c1,op,seq,st,cols
7,a,b,UPSERT,2,19,"c0,c1"
8,a,b,UPSERT,8,20,"c0,c1"
2,x,y,UPSERT,5,21,"c0,c1"
3,w,w,UPSERT,7,22,"c0,c1"
EOF

for d in a t s j ties; do
    compare "$W/$d" 1
    compare "$W/$d" 2
done
if [ -n "${FLINK_PYTHON:-}" ]; then
    rm -rf "$W/f"
    "${S[@]}" generate --out "$W/f" --events 20000 --keys 5000 --commits 25 --displacement 1000 --stragglers 0.05 --deletes 0.1 --format jsonl
    "${S[@]}" run "$W/f/scd1.sql" --out "$W/f/out1" >/dev/null
    for d in a f; do
        "$FLINK_PYTHON" benches/peers/flink_dedup.py --events-dir "$W/$d/events" --out "$W/$d/flink_scd1.csv" >/dev/null
        if cmp -s "$W/$d/out1/scd1.csv" "$W/$d/flink_scd1.csv"; then
            echo "identical: $W/$d SCD1 (Flink)"
        else
            echo "DIFFERENT: $W/$d SCD1 (Flink)"; diff "$W/$d/out1/scd1.csv" "$W/$d/flink_scd1.csv" | head -20
            fail=1
        fi
    done
fi
exit $fail
