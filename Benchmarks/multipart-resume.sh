#!/usr/bin/env bash
# A multipart upload killed with SIGKILL at about 65 %, then resumed (issue #22 §1). A FILE_MIB (512) MiB file in
# PART_MIB (8) MiB parts goes to SeaweedFS through Tests/Fixtures/backend.py as a counting proxy (every request it
# forwards is logged with its method, path and status). The first run is killed once the journal lists KILL_AT_PCT
# (65) % of the parts; the second run resumes it. Prints:
#   - the fraction of the file's bytes the resumed run sent (the part PUTs the proxy forwarded, times their sizes;
#     target <= 45 %),
#   - whether the object equals the file (sha256 of a download with curl's own SigV4),
#   - the incomplete multipart uploads left in the bucket (ListMultipartUploads; target 0).
# Usage: bash Benchmarks/multipart-resume.sh                 (builds and uses the release binary)
#        INGEST=.build/debug/ingest bash Benchmarks/multipart-resume.sh   (any build; say which)
set -euo pipefail
cd "$(dirname "$0")/.."
FILE_MIB="${FILE_MIB:-512}"
PART_MIB="${PART_MIB:-8}"
KILL_AT_PCT="${KILL_AT_PCT:-65}"
if [ -z "${INGEST:-}" ]; then
    swift build -c release --product ingest >/dev/null
    INGEST="$(swift build -c release --show-bin-path)/ingest"
fi
SRV=() CLI=() TOOLS=ingest
source Benchmarks/s3lib.sh
WORK="$(mktemp -d /tmp/ingest-resume.XXXXXX)"
PROXY_PID=""
cleanup() {
    [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null || true
    stop_weed
    rm -rf "$WORK"
}
trap cleanup EXIT
find_programs
start_weed 127.0.0.1

python3 Tests/Fixtures/backend.py --port-file "$WORK/proxy-port" --upstream "$ENDPOINT" >/dev/null 2>&1 &
PROXY_PID=$!
for _ in $(seq 200); do [ -s "$WORK/proxy-port" ] && break; sleep 0.05; done
PROXY="http://127.0.0.1:$(cat "$WORK/proxy-port")"

mkdir -p "$WORK/in"
head -c "$((FILE_MIB << 20))" /dev/urandom >"$WORK/in/big.bin"
PARTS=$(((FILE_MIB + PART_MIB - 1) / PART_MIB))
KILL_AT=$(((PARTS * KILL_AT_PCT + 99) / 100))
cat >"$WORK/p.yml" <<YAML
version: 1
name: multipart-resume-bench
stages:
  - upload:
      method: s3
      endpoint: $PROXY
      bucket: $BUCKET
      key: "resume/{{file.name}}"
      access_key_id: $KEY
      secret_access_key: "$SECRET"
      part_size: ${PART_MIB}MiB
      allow_http: true
YAML
JOURNAL="$WORK/.ingest/journal.sqlite"
# Python's sqlite3 module (no sqlite3 program needed); 0 until the journal and its table exist.
journaled_parts() {
    python3 -c '
import sqlite3, sys
try:
    print(sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True).execute(
        "SELECT COUNT(*) FROM multipart_parts").fetchone()[0])
except sqlite3.Error:
    print(0)' "$JOURNAL"
}
# Part PUTs for the object the proxy forwarded with 200, and their bytes (every part but the last is PART_MIB).
part_puts() {
    curl -s "$PROXY/_state" | python3 -c '
import json, sys
state = json.load(sys.stdin)
print(sum(1 for r in state["requests"] if r[0] == "PUT" and r[1] == "/'"$BUCKET"'/resume/big.bin" and r[2] == 200))'
}

cd "$WORK"
"$INGEST" run p.yml in -q >/dev/null 2>&1 &
RUN=$!
while kill -0 "$RUN" 2>/dev/null && [ "$(journaled_parts)" -lt "$KILL_AT" ]; do sleep 0.02; done
kill -9 "$RUN" 2>/dev/null || true
wait "$RUN" 2>/dev/null || true
AT_KILL=$(journaled_parts)
BEFORE=$(part_puts)
"$INGEST" status 2>/dev/null | grep PART || true
start=$(now)
"$INGEST" run p.yml in -q >/dev/null 2>&1 || echo "the resumed run failed (exit $?)"
seconds=$(echo "$(now) - $start" | bc)
SENT_PARTS=$(($(part_puts) - BEFORE))
s3curl -o "$WORK/back.bin" "$ENDPOINT/$BUCKET/resume/big.bin"
OPEN=$(s3curl "$ENDPOINT/$BUCKET?uploads=" | { grep -o "<UploadId>" || true; } | wc -l)
python3 - "$SENT_PARTS" "$PARTS" "$PART_MIB" "$FILE_MIB" "$AT_KILL" "$seconds" <<'PY'
import sys
sent, parts, part_mib, file_mib, at_kill, seconds = (float(x) for x in sys.argv[1:])
# Every part is PART_MIB but the last; a resumed run sends the last part, so count it at its own size.
last = file_mib - (parts - 1) * part_mib
sent_mib = (sent - 1) * part_mib + last if sent else 0
print("killed with %d of %d parts journaled (%.0f %%)" % (at_kill, parts, 100 * at_kill / parts))
print("resumed run: %d part PUTs, %.0f MiB of %.0f MiB = %.1f %% of the file's bytes (target <= 45 %%), %.1f s"
      % (sent, sent_mib, file_mib, 100 * sent_mib / file_mib, seconds))
PY
if cmp -s "$WORK/in/big.bin" "$WORK/back.bin"; then echo "object equals the file: yes"; else echo "object equals the file: NO"; fi
echo "incomplete multipart uploads left: $OPEN (target 0)"
