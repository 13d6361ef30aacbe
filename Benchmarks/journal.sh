#!/usr/bin/env bash
# The SQLite journal's cost at scale, printed (not a test: nothing here asserts a time).
# For each size in SIZES (default 1,000 / 10,000 / 100,000 files of 1 KiB), the pipeline `validate` +
# `upload {method: local}` runs:
#  1. with --no-journal, then with a new journal (interleaved, RUNS rounds, the median kept): wall and CPU µs per
#     file of each, their ratios (target <= 1.5) and the journal's own CPU per file (which must not grow with the
#     batch); CPU time (user + sys) is the steadier figure on a shared machine;
#  2. the write-ahead log's peak size during the journaled run, sampled every 20 ms (target: tens of MiB at most);
#  3. the rerun over the finished batch, every file skipped from the journal (target < 3 s per 100,000 files).
# Usage: bash Benchmarks/journal.sh [WORKDIR]
#   SIZES="1000 10000" RUNS=1 bash Benchmarks/journal.sh     # smaller
#   INGEST=/path/to/ingest bash Benchmarks/journal.sh         # another build (e.g. an older commit's), no build
#   CONFIG=debug                                              # the debug build instead of release
# Nothing is deleted while it measures: each run writes a destination folder of its own and each size gets its own
# media folder (all removed at the end; RUNS=3 over the three sizes keeps ~780,000 small files, ~3 GiB). On ext4
# without a journal (this machine's /tmp) a new inode is not taken from those freed in the last 60-360 s
# (`recently_deleted`): a run that followed `rm -rf` of the last run's files spent up to a third of its samples there,
# and that run was always the journaled one.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH="$PWD/Benchmarks"
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

# The pipeline for one run, uploading to a destination folder of its own (dest-TAG).
pipeline() {
    cat >"p-$1.yml" <<YML
version: 1
name: bench-journal
stages:
  - validate: { extensions: [txt], max_bytes: 1MB, sniff: false }
  - upload: { method: local, dir: dest-$1 }
YML
}
cd "$WORK"

# Makes N files of 1 KiB under media-N/ (100 a folder).
make_files() {
    python3 - "media-$1" "$1" <<'PY'
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

# Runs ingest once; prints "wall-seconds cpu-seconds peak-wal-bytes" (cpu = user + sys of ingest), the -wal file
# sampled every 20 ms meanwhile.
timed_run() {
    local tag="$1"
    shift
    python3 "$BENCH/timed_run.py" .ingest/journal.sqlite-wal 1 "$INGEST" run "p-$tag.yml" "media-$N" -q \
        --report-format jsonl "$@"
}
# Seconds (an expression) per file of the current size, in µs.
us() { echo "$1 * 1000000 / $N" | bc -l; }
column_median() { awk -v c="$1" '{print $c}' | median; }

echo "== journal at scale: validate + upload {method: local} over files of 1 KiB ($CONFIG build, $INGEST) =="
echo "   median of $RUNS interleaved rounds; µs/f = time / files; WAL peak = largest journal.sqlite-wal seen"
printf '%8s  %11s %11s %6s  %11s %11s %6s  %9s  %8s  %8s %8s %10s\n' files "no-journal" journal ratio \
    "no-journal" journal ratio journal "WAL peak" rerun rerun "rerun/100k"
printf '%8s  %11s %11s %6s  %11s %11s %6s  %9s  %8s  %8s %8s %10s\n' "" "wall µs/f" "wall µs/f" "" "cpu µs/f" \
    "cpu µs/f" "" "+cpu µs/f" "MiB" "wall s" "cpu s" "wall s"
for N in $SIZES; do
    make_files "$N"
    : >without.txt
    : >with.txt
    : >rerun.txt
    for round in $(seq "$RUNS"); do
        pipeline "$N-$round-none"
        pipeline "$N-$round-journal"
        timed_run "$N-$round-none" --no-journal >>without.txt
        rm -rf .ingest
        timed_run "$N-$round-journal" >>with.txt
        # Every file done: each is skipped from the journal.
        timed_run "$N-$round-journal" >>rerun.txt
    done
    a=$(column_median 1 <without.txt)
    b=$(column_median 1 <with.txt)
    ca=$(column_median 2 <without.txt)
    cb=$(column_median 2 <with.txt)
    peak=$(awk '{print $3}' with.txt | sort -n | tail -1)
    r=$(column_median 1 <rerun.txt)
    cr=$(column_median 2 <rerun.txt)
    printf '%8d  %11.1f %11.1f %6.2f  %11.1f %11.1f %6.2f  %9.1f  %8.1f  %8.2f %8.2f %10.2f\n' "$N" \
        "$(us "$a")" "$(us "$b")" "$(echo "$b / $a" | bc -l)" "$(us "$ca")" "$(us "$cb")" "$(echo "$cb / $ca" | bc -l)" \
        "$(us "($cb - $ca)")" "$(echo "$peak / 1048576" | bc -l)" "$r" "$cr" "$(echo "$r * 100000 / $N" | bc -l)"
done
echo "targets: ratio <= 1.5 at 100,000 files; journal cost flat from 1,000 to 100,000; WAL tens of MiB at most;"
echo "         rerun < 3 s per 100,000 files"
