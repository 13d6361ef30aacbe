#!/usr/bin/env bash
# Soak test of `ingest watch` (issue 23 §1 "Bounded over months"): a writer lands FILES_PER_SECOND (default 10) real
# recordings a second in the watched folder for MINUTES (default 2; `MINUTES=10` for the issue's 10-minute run) —
# half written in place, half written as `.x.tmp` and renamed, a new subfolder every minute — through a probe +
# `method: local` pipeline with the SQLite journal and a JSON Lines report. It prints the watcher's RSS after a
# warm-up, each minute, and at the end once every file is reported, and the growth (the issue's bound: under 5 MiB).
#   bash Benchmarks/watch-soak.sh                 (2 minutes, the debug build)
#   MINUTES=10 INGEST=.build/release/ingest bash Benchmarks/watch-soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
INGEST="${INGEST:-.build/debug/ingest}"
MINUTES="${MINUTES:-2}"
RATE="${FILES_PER_SECOND:-10}"
WARMUP="${WARMUP_SECONDS:-20}"
[ -x "$INGEST" ] || swift build --product ingest >/dev/null
sample="$PWD/Samples/good/voice.m4a"
work=$(mktemp -d "${TMPDIR:-/tmp}/ingest-soak.XXXXXX")
pid=""
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/in"
cat >"$work/p.yml" <<'EOF'
version: 1
name: soak
concurrency: 2
stages:
  - probe:
  - upload: { method: local, dir: out, key: "{{file.name}}", overwrite: true }
EOF
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
reported() { [ -f "$work/report.jsonl" ] && wc -l <"$work/report.jsonl" || echo 0; }

(cd "$work" && exec "$INGEST" watch p.yml in --settle 1s --report report.jsonl -q 2>"$work/stderr.txt") &
pid=$!
total=$((MINUTES * 60 * RATE))
# The writer: RATE files a second, paced on the clock; a new subfolder each minute.
python3 - "$work/in" "$sample" "$total" "$RATE" <<'PY' &
import os, shutil, sys, time
folder, sample, total, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = open(sample, "rb").read()
start = time.monotonic()
for index in range(total):
    delay = start + index / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    sub = os.path.join(folder, "minute-%03d" % (index // (60 * rate)))
    os.makedirs(sub, exist_ok=True)
    name = "rec-%06d.m4a" % index
    if index % 2:
        with open(os.path.join(sub, name), "wb") as out:
            out.write(data[: len(data) // 2]); out.flush(); out.write(data[len(data) // 2 :])
    else:
        temporary = os.path.join(sub, "." + name + ".tmp")
        with open(temporary, "wb") as out:
            out.write(data)
        os.rename(temporary, os.path.join(sub, name))
PY
writer=$!
sleep "$WARMUP"
start_rss=$(rss_kib "$pid")
echo "after ${WARMUP} s: $(reported) files reported, RSS $start_rss KiB"
minute=1
while kill -0 "$writer" 2>/dev/null; do
    sleep 1
    if [ $(( $(date +%s) % 60 )) -eq 0 ]; then
        echo "minute $minute: $(reported) files reported, RSS $(rss_kib "$pid") KiB"
        minute=$((minute + 1))
    fi
done
wait "$writer"
for _ in $(seq 1 600); do
    [ "$(reported)" -ge "$total" ] && break
    sleep 0.5
done
end_rss=$(rss_kib "$pid")
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=""
failed=$(grep -vc '"status":"passed"' "$work/report.jsonl" || true)
echo "files written: $total; reported: $(reported) (not passed: $failed); exit status after SIGTERM: $status"
echo "RSS at start: $start_rss KiB, at end: $end_rss KiB, growth: $((end_rss - start_rss)) KiB" \
    "($(awk -v d=$((end_rss - start_rss)) 'BEGIN { printf "%.2f", d / 1024 }') MiB over ${MINUTES} min at ${RATE} files/s)"
