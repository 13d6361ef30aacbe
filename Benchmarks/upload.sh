#!/usr/bin/env bash
# Upload benchmark: a streamed PUT of a big file to the local fixture backend, `ingest run` (request + upload put)
# against `curl -T` to a signed URL from the same server, in the same run. Prints throughput of both, their ratio,
# and peak RSS of both (GNU time): ingest must stay flat however big the file is (it streams 256 KiB chunks).
# Then MULTI_COUNT (16) files of MULTI_MIB (64) MiB with concurrency 4 against four parallel `curl -T` processes.
# Usage: bash Benchmarks/upload.sh [SIZE_MIB]   (default 1024; 2048 for the 2 GiB memory check; MULTI_COUNT=0 skips
#        the many-files part)
#        INGEST=/path/to/ingest bash Benchmarks/upload.sh   (skip the release build)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB="${1:-1024}"
if [ -z "${INGEST:-}" ]; then
    swift build -c release --product ingest >/dev/null
    INGEST="$(swift build -c release --show-bin-path)/ingest"
fi
WORK="$(mktemp -d /tmp/ingest-upload-bench.XXXXXX)"
python3 Tests/Fixtures/backend.py --port-file "$WORK/port" >/dev/null 2>&1 &
BACKEND=$!
trap 'kill $BACKEND 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
PORT="$(cat "$WORK/port")"
BASE="http://127.0.0.1:$PORT"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY

mkdir -p "$WORK/in/bench"
head -c "$((SIZE_MIB * 1024 * 1024))" /dev/urandom > "$WORK/in/bench/big.mov"
BYTES=$(stat -c %s "$WORK/in/bench/big.mov")
now() { date +%s.%N; }
rss() { awk -F': ' '/Maximum resident set size/ {print $2}' "$1"; }

echo "== PUT ${SIZE_MIB} MiB to the fixture backend on 127.0.0.1 =="
URL=$(curl -s -X POST -H 'Content-Type: application/json' -d '{"user_id":"curl","filename":"curl.mov"}' \
    "$BASE/api/upload-url" | python3 -c 'import json,sys; print(json.load(sys.stdin)["upload_url"])')
start=$(now)
/usr/bin/time -v -o "$WORK/curl.time" curl -sS -f -T "$WORK/in/bench/big.mov" -H 'Content-Type: video/quicktime' \
    -o /dev/null "$URL"
curl_s=$(echo "$(now) - $start" | bc -l)

cat > "$WORK/p.yml" <<YAML
version: 1
name: upload-bench
stages:
  - request: { url: "$BASE/api/upload-url", json: { user_id: ingest, filename: "{{file.name}}" }, as: ticket }
  - upload: { method: put, url: "{{ticket.upload_url}}" }
YAML
start=$(now)
/usr/bin/time -v -o "$WORK/ingest.time" "$INGEST" run "$WORK/p.yml" "$WORK/in" -q
ingest_s=$(echo "$(now) - $start" | bc -l)

curl -s "$BASE/_state" | python3 -c '
import json, sys
state = json.load(sys.stdin)
for key, entry in sorted(state["objects"].items()):
    print("  stored %-28s %d bytes, sha256 %s…, count %d" % (key, entry["size"], entry["sha256"][:16], entry["count"]))'
expected=$(sha256sum "$WORK/in/bench/big.mov" | cut -c1-16)
echo "  local sha256 $expected…"
mib=$(echo "$BYTES / 1048576" | bc -l)
printf '  curl -T : %6.2f s  %7.1f MiB/s  peak RSS %6d KiB\n' "$curl_s" "$(echo "$mib / $curl_s" | bc -l)" "$(rss "$WORK/curl.time")"
printf '  ingest  : %6.2f s  %7.1f MiB/s  peak RSS %6d KiB\n' "$ingest_s" "$(echo "$mib / $ingest_s" | bc -l)" "$(rss "$WORK/ingest.time")"
printf '  ingest throughput / curl throughput: %.2f\n' "$(echo "$curl_s / $ingest_s" | bc -l)"

# Many files at once: COUNT × EACH_MIB files, `ingest run` with concurrency 4 against four parallel `curl -T`
# processes (xargs -P 4), each to its own signed URL from the same server.
COUNT="${MULTI_COUNT:-16}"
EACH_MIB="${MULTI_MIB:-64}"
if [ "$COUNT" -gt 0 ]; then
mkdir -p "$WORK/multi/bench"
for i in $(seq -w 1 "$COUNT"); do head -c "$((EACH_MIB * 1024 * 1024))" /dev/urandom > "$WORK/multi/bench/f$i.mov"; done
echo "== ${COUNT} × ${EACH_MIB} MiB, 4 at a time, to the fixture backend =="
: > "$WORK/urls"
for i in $(seq -w 1 "$COUNT"); do
    url=$(curl -s -X POST -H 'Content-Type: application/json' -d "{\"user_id\":\"curl4\",\"filename\":\"f$i.mov\"}" \
        "$BASE/api/upload-url" | python3 -c 'import json,sys; print(json.load(sys.stdin)["upload_url"])')
    echo "$WORK/multi/bench/f$i.mov $url" >> "$WORK/urls"
done
start=$(now)
/usr/bin/time -v -o "$WORK/curl4.time" xargs -P 4 -L 1 sh -c \
    'curl -sS -f -T "$0" -H "Content-Type: video/quicktime" -o /dev/null "$1"' < "$WORK/urls"
curl4_s=$(echo "$(now) - $start" | bc -l)
cat > "$WORK/p4.yml" <<YAML
version: 1
name: upload-bench-4
concurrency: 4
stages:
  - request: { url: "$BASE/api/upload-url", json: { user_id: ingest4, filename: "{{file.name}}" }, as: ticket }
  - upload: { method: put, url: "{{ticket.upload_url}}" }
YAML
start=$(now)
/usr/bin/time -v -o "$WORK/ingest4.time" "$INGEST" run "$WORK/p4.yml" "$WORK/multi" -q --no-journal
ingest4_s=$(echo "$(now) - $start" | bc -l)
stored=$(curl -s "$BASE/_state" | python3 -c '
import json, sys
objects = json.load(sys.stdin)["objects"]
print(sum(1 for key, entry in objects.items() if key.startswith("users/ingest4/") and entry["count"] == 1))')
echo "  ingest stored $stored of $COUNT files once each"
total_mib=$((COUNT * EACH_MIB))
printf '  4 × curl -T : %6.2f s  %7.1f MiB/s  peak RSS (xargs + one curl) %6d KiB\n' "$curl4_s" "$(echo "$total_mib / $curl4_s" | bc -l)" "$(rss "$WORK/curl4.time")"
printf '  ingest -c 4 : %6.2f s  %7.1f MiB/s  peak RSS %6d KiB\n' "$ingest4_s" "$(echo "$total_mib / $ingest4_s" | bc -l)" "$(rss "$WORK/ingest4.time")"
printf '  ingest throughput / 4 × curl throughput: %.2f\n' "$(echo "$curl4_s / $ingest4_s" | bc -l)"
rm -rf "$WORK/multi"
fi

# The same file by `upload: { method: s3 }` (multipart) to a local SeaweedFS vs `curl --aws-sigv4 -T`.
if [ "${WITH_S3:-0}" = 1 ]; then INGEST="$INGEST" bash Benchmarks/s3upload.sh "$SIZE_MIB"; fi
