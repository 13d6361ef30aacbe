#!/usr/bin/env bash
# The journal's cost, printed (not a test: nothing here asserts a time).
#  1. Overhead: `ingest run` with a validate-only pipeline over 10,000 small files, journal on vs --no-journal
#     (target ≤ 5 %). The journal run starts from an empty journal each time, so it records every file.
#  2. Resume: the same command again over the finished batch: every file is skipped from the journal
#     (target < 2 s).
# Each figure is the median of RUNS runs (default 5). Usage: bash Benchmarks/journal.sh [WORKDIR]
# CONFIG=debug measures the debug build instead of release.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG="${CONFIG:-release}"
swift build -c "$CONFIG" --product ingest >/dev/null
INGEST="$(swift build -c "$CONFIG" --show-bin-path)/ingest"
WORK="${1:-$(mktemp -d /tmp/ingest-journal-bench.XXXXXX)}"
trap 'rm -rf "$WORK"' EXIT
RUNS="${RUNS:-5}"
N="${N:-10000}"
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
cat > "$WORK/p.yml" <<'YML'
version: 1
name: bench-journal
concurrency: 2
stages:
  - validate: { extensions: [txt], max_bytes: 1MB, sniff: false }
YML
cd "$WORK"
# Prints "wall cpu" seconds (cpu = user + sys: steadier than wall time on a shared machine).
time_run() {
    local TIMEFORMAT='%R %U %S'
    { time "$INGEST" run p.yml media -q --report-format jsonl "$@" >/dev/null; } 2>&1 | awk '{print $1, $2 + $3}'
}
# Median of column $1 of the lines on standard input.
column_median() { awk -v c="$1" '{print $c}' | median; }

echo "== journal overhead: validate-only run over $N small files ($CONFIG build, median of $RUNS) =="
# Interleaved, so a change in the machine's load (it is shared) falls on both sides alike.
: >without.txt
: >with.txt
for _ in $(seq "$RUNS"); do
    time_run --no-journal >>without.txt
    rm -rf .ingest
    time_run >>with.txt
done
for column in 1 2; do
    label=$([ "$column" = 1 ] && echo "wall" || echo "cpu ")
    a=$(column_median "$column" <without.txt)
    b=$(column_median "$column" <with.txt)
    printf '%s  no journal %6.3f s   journal %6.3f s   overhead %+.1f %% (target <= 5 %%)\n' "$label" "$a" "$b" \
        "$(echo "($b - $a) * 100 / $a" | bc -l)"
done
echo "journal size  $(cat .ingest/journal.sqlite .ingest/journal.sqlite-wal 2>/dev/null | wc -c | awk '{printf "%d", $1 / 1024}') KiB (database file and write-ahead log)"

echo "== resume a finished batch of $N files (median of $RUNS) =="
for _ in $(seq "$RUNS"); do time_run; done >resume.txt
printf 'resume        wall %6.3f s   cpu %6.3f s   (target < 2 s)\n' "$(column_median 1 <resume.txt)" \
    "$(column_median 2 <resume.txt)"
"$INGEST" run p.yml media | tail -1
