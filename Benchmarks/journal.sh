#!/usr/bin/env bash
# The SQLite journal's cost at scale, printed (not a test: nothing here asserts a time).
# For each size in SIZES (default 1,000 / 10,000 / 100,000 files of 1 KiB), the pipeline `validate` +
# `upload {method: local}` runs:
#  1. with --no-journal, then with a new journal (interleaved, RUNS rounds, the median kept): µs per file of each,
#     their ratio (target <= 1.5) and the journal's own cost per file (which must not grow with the batch);
#  2. the write-ahead log's peak size during the journaled run, sampled every 20 ms (target: tens of MiB at most);
#  3. the rerun over the finished batch, every file skipped from the journal (target < 3 s per 100,000 files).
# Usage: bash Benchmarks/journal.sh [WORKDIR]
#   SIZES="1000 10000" RUNS=1 bash Benchmarks/journal.sh     # smaller
#   INGEST=/path/to/ingest bash Benchmarks/journal.sh         # another build (e.g. an older commit's), no build
#   CONFIG=debug                                              # the debug build instead of release
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG="${CONFIG:-release}"
if [ -z "${INGEST:-}" ]; then
    swift build -c "$CONFIG" --product ingest >/dev/null
    INGEST="$(swift build -c "$CONFIG" --show-bin-path)/ingest"
fi
WORK="${1:-$(mktemp -d /tmp/ingest-journal-bench.XXXXXX)}"
trap 'rm -rf "$WORK"' EXIT
RUNS="${RUNS:-3}"
SIZES="${SIZES:-1000 10000 100000}"
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

cat >"$WORK/p.yml" <<'YML'
version: 1
name: bench-journal
stages:
  - validate: { extensions: [txt], max_bytes: 1MB, sniff: false }
  - upload: { method: local, dir: dest }
YML
cd "$WORK"

# Makes N files of 1 KiB under media/ (100 a folder).
make_files() {
    rm -rf media
    python3 - media "$1" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
body = b"x" * 1000
for i in range(n):
    folder = os.path.join(root, "d%04d" % (i // 100))
    if i % 100 == 0:
        os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "f%06d.txt" % i), "wb") as f:
        f.write(b"small file %d\n" % i + body)
PY
}

# Runs ingest once; prints "wall-seconds peak-wal-bytes". The -wal file is sampled meanwhile.
timed_run() {
    local peak_file
    peak_file=$(mktemp "$WORK/peak.XXXXXX")
    echo 0 >"$peak_file"
    local start end
    start=$(date +%s.%N)
    "$INGEST" run p.yml media -q --report-format jsonl "$@" >/dev/null 2>err.txt &
    local pid=$!
    (
        peak=0
        while kill -0 "$pid" 2>/dev/null; do
            size=$(stat -c %s .ingest/journal.sqlite-wal 2>/dev/null || echo 0)
            [ "$size" -gt "$peak" ] && peak=$size && echo "$peak" >"$peak_file"
            sleep 0.02
        done
    ) &
    local sampler=$!
    local status=0
    wait "$pid" || status=$?
    end=$(date +%s.%N)
    wait "$sampler" || true
    [ "$status" -le 1 ] || { echo "ingest failed ($status):" >&2; cat err.txt >&2; exit 1; }
    echo "$(echo "$end - $start" | bc -l) $(cat "$peak_file")"
    rm -f "$peak_file"
}
column_median() { awk -v c="$1" '{print $c}' | median; }

echo "== journal at scale: validate + upload {method: local} over files of 1 KiB ($CONFIG build, $INGEST) =="
echo "   median of $RUNS interleaved rounds; µs/file = wall time / files; WAL = peak size of journal.sqlite-wal"
printf '%8s  %12s  %12s  %6s  %14s  %10s  %9s  %12s\n' files "no-journal" journal ratio "journal cost" "WAL peak" rerun \
    "rerun/100k"
printf '%8s  %12s  %12s  %6s  %14s  %10s  %9s  %12s\n' "" "µs/file" "µs/file" "" "µs/file" "MiB" "s" "s"
for N in $SIZES; do
    make_files "$N"
    : >without.txt
    : >with.txt
    : >rerun.txt
    for _ in $(seq "$RUNS"); do
        rm -rf dest .ingest
        timed_run --no-journal >>without.txt
        rm -rf dest .ingest
        timed_run >>with.txt
        # Every file done: each is skipped from the journal.
        timed_run >>rerun.txt
    done
    a=$(column_median 1 <without.txt)
    b=$(column_median 1 <with.txt)
    peak=$(awk '{print $2}' with.txt | sort -n | tail -1)
    r=$(column_median 1 <rerun.txt)
    printf '%8d  %12.1f  %12.1f  %6.2f  %14.1f  %10.1f  %9.2f  %12.2f\n' "$N" \
        "$(echo "$a * 1000000 / $N" | bc -l)" "$(echo "$b * 1000000 / $N" | bc -l)" "$(echo "$b / $a" | bc -l)" \
        "$(echo "($b - $a) * 1000000 / $N" | bc -l)" "$(echo "$peak / 1048576" | bc -l)" "$r" \
        "$(echo "$r * 100000 / $N" | bc -l)"
done
echo "targets: ratio <= 1.5 at 100,000 files; journal cost flat from 1,000 to 100,000; WAL tens of MiB at most;"
echo "         rerun < 3 s per 100,000 files"
