#!/usr/bin/env bash
# The torture run (issue #29 §8), as an operator would try it: WORKERS `ingest run` processes on one PostgreSQL
# journal upload a batch of small, medium and multipart files to SeaweedFS through a bad link
# (Benchmarks/chaoslink.py: every request and answer held DELAY_MS, RESET of the requests cut off in flight with a
# TCP reset, DROP of the answers lost after S3 acted), each file then a callback with `verify:` through the same
# link; every KILL_EVERY seconds one running worker is killed with SIGKILL and started again. Not a test (nothing
# asserts): it prints what an operator checks afterwards:
#   - files, kills, and the rounds the workers needed until every file was done;
#   - every object byte-identical to its file (sha256 of a download with curl's own SigV4, straight from SeaweedFS);
#   - every callback delivered exactly once (the link's backend acts on every call, so a repeat would show);
#   - bytes sent upstream ÷ the batch's bytes, and parts sent again although their 200 had reached ingest;
#   - incomplete multipart uploads left in the bucket (ListMultipartUploads; the target is 0).
# Knobs (environment), with the full size of the issue's run as defaults (3,044 files, ~750 MiB):
#   SMALL=2500 SMALL_KIB=4-64         small files (single PUT), sizes uniform in that range
#   MEDIUM=540 MEDIUM_KIB=128-512     medium files (single PUT)
#   BIG=4 BIG_MIB=96-160              multipart files, in PART_MIB=8 MiB parts
#   WORKERS=4                         ingest processes sharing the journal; LEASE=10 (--lease-seconds)
#   KILL_EVERY=20                     seconds between kill -9s (0: none)
#   DELAY_MS=20 RESET=0.01 DROP=0.01  the link: one-way hold, fraction of requests reset, of answers dropped
#   DROP_CREATE=0.5                   and of CreateMultipartUpload answers dropped besides (S3 made the upload)
#   MAX_ROUNDS=40                     restarts a worker gets before the run gives up
#   SEED=29                           file contents and the link's dice
#   INGEST=/path/to/ingest            the binary (default: this checkout's release build); CONFIG=debug
# Usage: bash Benchmarks/torture.sh
#        SMALL=300 MEDIUM=40 BIG=2 BIG_MIB=24-40 KILL_EVERY=10 INGEST=.build/debug/ingest bash Benchmarks/torture.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SMALL="${SMALL:-2500}" SMALL_KIB="${SMALL_KIB:-4-64}"
MEDIUM="${MEDIUM:-540}" MEDIUM_KIB="${MEDIUM_KIB:-128-512}"
BIG="${BIG:-4}" BIG_MIB="${BIG_MIB:-96-160}"
PART_MIB="${PART_MIB:-8}"
WORKERS="${WORKERS:-4}" LEASE="${LEASE:-10}"
KILL_EVERY="${KILL_EVERY:-20}"
DELAY_MS="${DELAY_MS:-20}" RESET="${RESET:-0.01}" DROP="${DROP:-0.01}" DROP_CREATE="${DROP_CREATE:-0.5}"
MAX_ROUNDS="${MAX_ROUNDS:-40}"
SEED="${SEED:-29}"
CONFIG="${CONFIG:-release}"
if [ -z "${INGEST:-}" ]; then
    swift build -c "$CONFIG" --product ingest >/dev/null
    INGEST="$(swift build -c "$CONFIG" --show-bin-path)/ingest"
fi
SRV=() CLI=() TOOLS=ingest
source Benchmarks/s3lib.sh
WORK="$(mktemp -d /tmp/ingest-torture.XXXXXX)"
PGDIR="$(mktemp -d /tmp/ingest-torture-db.XXXXXX)"
LINK_PID="" PG_PID="" WORKER_PIDS=()
cleanup() {
    local pid
    for pid in "${WORKER_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in $(cat "$WORK"/pid-* 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    [ -n "$LINK_PID" ] && kill "$LINK_PID" 2>/dev/null || true
    [ -n "$PG_PID" ] && { kill "$PG_PID" 2>/dev/null || true; wait "$PG_PID" 2>/dev/null || true; }
    stop_weed
    rm -rf "$WORK" "$PGDIR"
}
trap cleanup EXIT
trap "exit 130" INT TERM
find_programs
start_weed 127.0.0.1

# --- PostgreSQL (Benchmarks/pglib.sh) ---
source Benchmarks/pglib.sh
start_postgres
psql -c "CREATE DATABASE torture" >/dev/null
JOURNAL="postgres://ingest@127.0.0.1:$PORT/torture"

# --- the link ---
python3 Benchmarks/chaoslink.py --upstream "$ENDPOINT" --port-file "$WORK/link-port" --delay-ms "$DELAY_MS" \
    --reset "$RESET" --drop "$DROP" --drop-create "$DROP_CREATE" --seed "$SEED" >"$WORK/link.log" 2>&1 &
LINK_PID=$!
for _ in $(seq 200); do [ -s "$WORK/link-port" ] && break; sleep 0.05; done
LINK="http://127.0.0.1:$(cat "$WORK/link-port")"

# --- the batch ---
python3 - "$WORK/in" "$SEED" "$SMALL" "$SMALL_KIB" "$MEDIUM" "$MEDIUM_KIB" "$BIG" "$BIG_MIB" <<'PY'
import os, random, sys
root, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
def span(text, unit):
    low, _, high = text.partition("-")
    return int(low) * unit, int(high or low) * unit
for kind, count, (low, high) in (("small", int(sys.argv[3]), span(sys.argv[4], 1024)),
                                 ("medium", int(sys.argv[5]), span(sys.argv[6], 1024)),
                                 ("big", int(sys.argv[7]), span(sys.argv[8], 1 << 20))):
    for i in range(count):
        folder = os.path.join(root, kind, "d%02d" % (i % 50))
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "%s%05d.bin" % (kind, i)), "wb") as f:
            left = rng.randint(low, high)
            while left > 0:
                chunk = min(left, 1 << 20)
                f.write(rng.randbytes(chunk))
                left -= chunk
PY
FILES=$(find "$WORK/in" -type f | wc -l)
INPUT_BYTES=$(find "$WORK/in" -type f -printf '%s\n' | awk '{s += $1} END {print s}')

cat >"$WORK/torture.yml" <<YAML
version: 1
name: torture
concurrency: 4
stages:
  - upload:
      method: s3
      endpoint: $LINK
      bucket: $BUCKET
      key: "t/{{file.path}}"
      access_key_id: \${AWS_ACCESS_KEY_ID}
      secret_access_key: \${AWS_SECRET_ACCESS_KEY}
      part_size: ${PART_MIB}MiB
      part_concurrency: 4
      allow_http: true
      max_attempts: 10
      backoff: 200ms
      as: stored
  - request:
      url: "$LINK/callback/{{stored.key}}"
      json: { key: "{{stored.key}}", etag: "{{stored.etag}}" }
      max_attempts: 10
      backoff: 200ms
      timeout: 30s
      allow_http: true
      verify: { url: "$LINK/callback/{{stored.key}}", expect: [200], settle: 2s }
YAML
export AWS_ACCESS_KEY_ID="$KEY" AWS_SECRET_ACCESS_KEY="$SECRET"

# --- the workers, and the killer ---
# Worker n runs `ingest run` until it exits 0 (every file done), at most MAX_ROUNDS times; the running one's pid is
# in $WORK/pid-n, where the killer finds it.
worker() {
    local n="$1" round pid
    for round in $(seq "$MAX_ROUNDS"); do
        echo "$round" >"$WORK/rounds-$n"
        "$INGEST" run "$WORK/torture.yml" "$WORK/in" -q --journal "$JOURNAL" --lease-seconds "$LEASE" \
            --work-dir "$WORK/work-$n" >>"$WORK/worker-$n.log" 2>&1 &
        pid=$!
        echo "$pid" >"$WORK/pid-$n"
        if wait "$pid"; then
            rm -f "$WORK/pid-$n"
            return 0
        fi
    done
    rm -f "$WORK/pid-$n"
    return 1
}
started=$(now)
for n in $(seq "$WORKERS"); do
    worker "$n" &
    WORKER_PIDS+=($!)
done
kills=0
while :; do
    running=0
    for pid in "${WORKER_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && running=$((running + 1)); done
    [ "$running" = 0 ] && break
    if [ "$KILL_EVERY" != 0 ]; then
        sleep "$KILL_EVERY"
        victim=$(cat "$WORK"/pid-* 2>/dev/null | shuf -n 1 || true)
        if [ -n "$victim" ]; then
            kill -KILL "$victim" 2>/dev/null && kills=$((kills + 1))
        fi
    else
        sleep 1
    fi
done
failed_workers=0
for pid in "${WORKER_PIDS[@]}"; do wait "$pid" || failed_workers=$((failed_workers + 1)); done
WORKER_PIDS=()
seconds=$(awk "BEGIN { print $(now) - $started }")

# --- what an operator checks ---
STATS=$(curl -sS "$LINK/_stats")
mismatched=0 missing=0
while IFS= read -r -d '' file; do
    rel="${file#"$WORK/in/"}"
    if ! s3curl -f -o "$WORK/copy" "$ENDPOINT/$BUCKET/t/$rel" 2>/dev/null; then
        missing=$((missing + 1))
    elif ! cmp -s "$file" "$WORK/copy"; then
        mismatched=$((mismatched + 1))
    fi
done < <(find "$WORK/in" -type f -print0)
open_uploads=$(s3curl "$ENDPOINT/$BUCKET?uploads=" | grep -o '<Upload>' | wc -l || true)
open_uploads="${open_uploads:-0}"
rounds=$(cat "$WORK"/rounds-* | sort -n | tail -1)
python3 - "$STATS" "$FILES" "$INPUT_BYTES" <<PY
import json, sys
stats, files, total = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
calls = stats["callbacks"]
once = sum(1 for n in calls.values() if n == 1)
print("torture: %d files, %.1f MiB (small %s, medium %s, big %s of %s MiB in %s MiB parts)"
      % (files, total / 1048576, "$SMALL", "$MEDIUM", "$BIG", "$BIG_MIB", "$PART_MIB"))
print("  %s workers on one PostgreSQL journal, link %s ms each way, %s reset, %s answers dropped (creates: %s more)"
      % ("$WORKERS", "$DELAY_MS", "$RESET", "$DROP", "$DROP_CREATE"))
print("  wall %.0f s; kill -9 every %s s: %d kills; most rounds a worker needed: %s; workers that gave up: %s"
      % (float("$seconds"), "$KILL_EVERY", $kills, "$rounds", "$failed_workers"))
print("  requests %d, reset %d, answers dropped %d (CreateMultipartUpload's: %d)"
      % (stats["requests"], stats["resets"], stats["dropped_answers"], stats["dropped_create_answers"]))
print("  objects: %d missing, %d differing from their file" % ($missing, $mismatched))
print("  callbacks: %d of %d files delivered exactly once, %d more than once, %d never"
      % (once, files, sum(1 for n in calls.values() if n > 1), files - len(calls)))
print("  sent upstream: %.1f MiB = %.2fx the input; parts sent again after their 200 reached ingest: %d"
      % (stats["body_bytes"] / 1048576, stats["body_bytes"] / max(total, 1), stats["resent_stored_parts"]))
print("  incomplete multipart uploads left in the bucket: %d" % $open_uploads)
PY
crashes=$(grep -l -E "Fatal error|Segmentation|SIGSEGV|Illegal instruction" "$WORK"/worker-*.log 2>/dev/null | wc -l || true)
echo "  worker logs mentioning a crash: $crashes"
