#!/usr/bin/env bash
# The PostgreSQL journal at scale, printed (not a test: nothing here asserts a time). Issue 19's targets:
#  1. 4 workers (4 `ingest run` processes) sharing one PostgreSQL journal over N small files (default 10,000),
#     through `validate` + `upload { method: local }`, within 3x the wall time of one process with --no-journal.
#  2. The rerun over the finished batch, every file done, under 2 s (4 workers again, and one process alone).
# It starts its own PostgreSQL as the tests do (Debian's initdb in a temp folder, 127.0.0.1, a free port, fsync off
# unless FSYNC=on), a fresh database for each 4-worker run. Each figure is the median of RUNS runs (default 3).
# Usage: bash Benchmarks/journal-postgres.sh [WORKDIR]
#   N=1000 RUNS=1 ...            a smaller batch
#   INGEST=/path/to/ingest ...    measure that binary (e.g. an older build) instead of building this checkout
#   CONFIG=debug ...              the debug build instead of release
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG="${CONFIG:-release}"
if [ -z "${INGEST:-}" ]; then
    swift build -c "$CONFIG" --product ingest >/dev/null
    INGEST="$(swift build -c "$CONFIG" --show-bin-path)/ingest"
fi
RUNS="${RUNS:-3}"
N="${N:-10000}"
WORKERS="${WORKERS:-4}"
FSYNC="${FSYNC:-off}"
WORK="${1:-$(mktemp -d /tmp/ingest-pg-bench.XXXXXX)}"
PGDIR="$(mktemp -d /tmp/ingest-pg-bench-db.XXXXXX)"

# --- PostgreSQL (Benchmarks/pglib.sh) ---
source Benchmarks/pglib.sh
PG_PID=""
cleanup() {
    [ -n "$PG_PID" ] && { kill "$PG_PID" 2>/dev/null || true; wait "$PG_PID" 2>/dev/null || true; }
    rm -rf "$WORK" "$PGDIR"
}
trap cleanup EXIT
start_postgres
database=0
new_database() {
    database=$((database + 1))
    psql -c "CREATE DATABASE bench_$database" >/dev/null
    URL="postgres://ingest@127.0.0.1:$PORT/bench_$database"
}

# --- the batch ---
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mkdir -p "$WORK/media"
python3 - "$WORK/media" "$N" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    folder = os.path.join(root, "d%03d" % (i % 100))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "f%05d.txt" % i), "w") as f:
        f.write("small file %d\n" % i)
PY
cat >"$WORK/p.yml" <<'YML'
version: 1
name: bench-journal-postgres
concurrency: 2
stages:
  - validate: { extensions: [txt], max_bytes: 1MB, sniff: false }
  - upload: { method: local, dir: out }
YML
cd "$WORK"

# One process, no journal: wall seconds.
single() {
    rm -rf out .ingest
    local start end
    start=$(now)
    "$INGEST" run p.yml media -q --no-journal --report-format jsonl >/dev/null
    end=$(now)
    echo "$end - $start" | bc -l
}
# $WORKERS processes on the journal at $URL: wall seconds; each worker's report in w$I.jsonl.
workers() {
    local start end pids=() status=0
    start=$(now)
    for i in $(seq "$WORKERS"); do
        "$INGEST" run p.yml media -q --journal "$URL" --work-dir "w$i/work" --report "w$i.jsonl" >/dev/null &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
    end=$(now)
    [ "$status" = 0 ] || { echo "a worker failed (exit $status)" >&2; exit 1; }
    echo "$end - $start" | bc -l
}
passed() { grep -c '"status":"passed"' "$1" || true; }

echo "== PostgreSQL journal: $WORKERS workers over $N small files, validate + upload (local) ($CONFIG build, fsync $FSYNC, median of $RUNS) =="
: >single.txt
: >workers.txt
: >rerun.txt
: >rerun1.txt
for _ in $(seq "$RUNS"); do
    single >>single.txt
    rm -rf out w*
    new_database
    workers >>workers.txt
    split=$(for i in $(seq "$WORKERS"); do passed "w$i.jsonl"; done | paste -sd+)
    workers >>rerun.txt
    rerun_passed=$(for i in $(seq "$WORKERS"); do passed "w$i.jsonl"; done | paste -sd+ | bc)
    start=$(now)
    "$INGEST" run p.yml media -q --journal "$URL" --work-dir w1/work --report-format jsonl >/dev/null
    echo "$(now) - $start" | bc -l >>rerun1.txt
done
one=$(median <single.txt)
many=$(median <workers.txt)
again=$(median <rerun.txt)
again1=$(median <rerun1.txt)
per_file() { echo "$1 * 1000000 / $N" | bc -l; }
printf 'one process, --no-journal   %7.3f s  %7.1f µs/file\n' "$one" "$(per_file "$one")"
printf '%d workers, PostgreSQL       %7.3f s  %7.1f µs/file   ratio %.2f (target <= 3)   passed per worker: %s\n' \
    "$WORKERS" "$many" "$(per_file "$many")" "$(echo "$many / $one" | bc -l)" "$split"
printf 'rerun, all done, %d workers  %7.3f s  %7.1f µs/file   (target < 2 s; passed again: %s)\n' "$WORKERS" "$again" \
    "$(per_file "$again")" "$rerun_passed"
printf 'rerun, all done, 1 process  %7.3f s  %7.1f µs/file\n' "$again1" "$(per_file "$again1")"
