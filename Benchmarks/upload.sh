#!/usr/bin/env bash
# Upload benchmark (issue 13, goal 1): one big file to a loopback sink (Benchmarks/sink.py on 127.0.0.1, which reads
# and drops bodies without hashing them, so the client is what is measured), two ways, each beside its peer:
#   - PUT:     `ingest run` with `upload: { method: put }` (journal on, the default)  vs  `curl -T`; and the same
#              PUT with --no-journal (no SHA-256: what the journal's hash costs)
#   - s3-post: `ingest run` with `upload: { method: s3-post }` and a form from `ingest presign post` (journal on)
#              vs  `curl -F` posting the same fields, in the same order, then the file
# Best wall time of ROUNDS interleaved rounds (each round runs all four, in an order that alternates), throughput
# ratio ingest/peer (≥ 1 means ingest is faster), and peak RSS (GNU time %M) beside `ingest --version`'s (the RSS of
# merely loading the binary; the goal is at most 8 MiB above it). The sink's record of every body's size is checked
# after each run; a wrong size stops the script (exit 1).
# Usage: bash Benchmarks/upload.sh [SIZE_MIB]        (default 2048; SIZE_MIB=… works too)
#        ROUNDS=3 INGEST=/path/to/ingest bash Benchmarks/upload.sh 2048   (INGEST skips the release build)
#        MARKDOWN=1 … prints docs/performance.md's table rows instead (Benchmarks/README-table.sh runs every benchmark so)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB="${1:-${SIZE_MIB:-2048}}"
ROUNDS="${ROUNDS:-2}"
if [ -z "${INGEST:-}" ]; then
    swift build -c release --product ingest >/dev/null
    INGEST="$(swift build -c release --show-bin-path)/ingest"
fi
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
WORK="$(mktemp -d /tmp/ingest-upload-bench.XXXXXX)"
python3 Benchmarks/sink.py --port-file "$WORK/port" &
SINK=$!
trap 'kill $SINK 2>/dev/null; wait $SINK 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
[ -s "$WORK/port" ] || { echo "upload.sh: the sink did not start" >&2; exit 1; }
BASE="http://127.0.0.1:$(cat "$WORK/port")"

mkdir -p "$WORK/in"
FILE="$WORK/in/big.bin"
head -c "$((SIZE_MIB * 1024 * 1024))" /dev/urandom >"$FILE"
BYTES=$(stat -c %s "$FILE")
cat "$FILE" >/dev/null # in the page cache for every run alike
now() { date +%s.%N; }
declare -A BEST RSS CPU

# Runs one timed command (label, then the command) under GNU time, keeps the best time (and that run's CPU seconds,
# user + system) and the largest peak RSS.
measure() {
    local label="$1" start secs
    shift
    start=$(now)
    /usr/bin/time -f '%M %U %S' -o "$WORK/time" "$@" || { echo "upload.sh: $label failed" >&2; exit 1; }
    secs=$(echo "$(now) - $start" | bc -l)
    local rss cpu
    read -r rss cpu <<<"$(tail -1 "$WORK/time" | awk '{ print $1, $2 + $3 }')"
    if [ -z "${BEST[$label]:-}" ] || [ "$(echo "$secs < ${BEST[$label]}" | bc -l)" = 1 ]; then
        BEST[$label]=$secs CPU[$label]=$cpu
    fi
    if [ -z "${RSS[$label]:-}" ] || [ "$rss" -gt "${RSS[$label]}" ]; then RSS[$label]=$rss; fi
}

# The sink must hold exactly BYTES under this path or form key.
verify() {
    curl -sS -f "$BASE/_sizes" | python3 -c '
import json, sys
sizes, key, expected = json.load(sys.stdin), sys.argv[1], int(sys.argv[2])
if sizes.get(key) != expected:
    sys.exit("upload.sh: the sink holds %s bytes under %s, expected %d" % (sizes.get(key), key, expected))' "$1" "$BYTES"
}

put_pipeline() { # $1 path prefix
    cat >"$WORK/put.yml" <<YAML
version: 1
name: upload-bench-put
stages:
  - upload: { method: put, url: "$BASE/$1/{{file.name}}" }
YAML
}

# A presigned POST form for KEY (the sink checks no signature; the form is the one a real bucket would get).
form() {
    AWS_ACCESS_KEY_ID=AKIDINGESTBENCH AWS_SECRET_ACCESS_KEY='bench/Secret+key' AWS_REGION=us-east-1 \
        "$INGEST" presign post "s3://bench/$1" --endpoint "$BASE" >"$WORK/form.json"
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$WORK/form.json"
}

run_curl_put() { measure "curl -T" curl -sS -f -o /dev/null -T "$FILE" "$BASE/curl-r$1/big.bin"; verify "/curl-r$1/big.bin"; }
run_ingest_put() {
    put_pipeline "ingest-r$1"
    rm -f "$WORK"/journal.sqlite* # a fresh journal (and no stale -wal/-shm) each run
    measure "ingest run (put)" "$INGEST" run "$WORK/put.yml" "$WORK/in" -q --journal "$WORK/journal.sqlite" \
        --work-dir "$WORK/work"
    verify "/ingest-r$1/big.bin"
}
# The same PUT without the journal (no SHA-256 of the bytes sent): what the journal's hash costs.
run_ingest_put_no_journal() {
    put_pipeline "ingest-nj-r$1"
    measure "ingest run (put, --no-journal)" "$INGEST" run "$WORK/put.yml" "$WORK/in" -q --no-journal \
        --work-dir "$WORK/work"
    verify "/ingest-nj-r$1/big.bin"
}
run_curl_form() {
    local url
    url=$(form "curl-r$1/big.bin")
    mapfile -d '' args < <(python3 -c '
import json, sys
for name, value in json.load(open(sys.argv[1]))["fields"].items():
    sys.stdout.write("--form-string\0%s=%s\0" % (name, value))' "$WORK/form.json")
    measure "curl -F (same form)" curl -sS -f -o /dev/null "${args[@]}" -F "file=@$FILE" "$url"
    verify "curl-r$1/big.bin"
}
run_ingest_form() {
    local url
    url=$(form "ingest-r$1/big.bin")
    cat >"$WORK/post.yml" <<YAML
version: 1
name: upload-bench-post
stages:
  - upload: { method: s3-post, url: "$url", fields: $(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["fields"]))' "$WORK/form.json") }
YAML
    rm -f "$WORK"/journal.sqlite* # a fresh journal (and no stale -wal/-shm) each run
    measure "ingest run (s3-post)" "$INGEST" run "$WORK/post.yml" "$WORK/in" -q --journal "$WORK/journal.sqlite" \
        --work-dir "$WORK/work"
    verify "ingest-r$1/big.bin"
}

for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then
        run_curl_put "$round"; run_ingest_put "$round"; run_ingest_put_no_journal "$round"
        run_curl_form "$round"; run_ingest_form "$round"
    else
        run_ingest_form "$round"; run_curl_form "$round"
        run_ingest_put_no_journal "$round"; run_ingest_put "$round"; run_curl_put "$round"
    fi
    curl -sS -f -X DELETE -o /dev/null "$BASE/_sizes"
done
/usr/bin/time -f %M -o "$WORK/time" "$INGEST" --version >/dev/null
BASELINE=$(tail -1 "$WORK/time")

mib=$(echo "$BYTES / 1048576" | bc -l)
# MARKDOWN=1: docs/performance.md's rows instead (workload, ingest, peer, ratio, ingest's peak RSS over --version).
if [ "${MARKDOWN:-0}" = 1 ]; then
    cell() { printf '%.0f MiB/s (%.2f s, %.2f s CPU, %.1f MiB RSS)' "$(echo "$mib / ${BEST[$1]}" | bc -l)" \
        "${BEST[$1]}" "${CPU[$1]}" "$(echo "${RSS[$1]} / 1024" | bc -l)"; }
    row() { # workload, ingest's label, peer's label
        printf '| %s | %s | `%s` %s | **%.2f** | %+.1f MiB |\n' "$1" "$(cell "$2")" "${3% (same form)}" "$(cell "$3")" \
            "$(echo "${BEST[$3]} / ${BEST[$2]}" | bc -l)" "$(echo "(${RSS[$2]} - $BASELINE) / 1024" | bc -l)"
    }
    echo "| workload (loopback sink) | ingest (journal on) | peer | ingest ÷ peer | ingest RSS over \`--version\` ($(echo "$BASELINE / 1024" | bc -l | xargs printf '%.1f') MiB) |"
    echo "|---|---|---|---|---|"
    row "one $SIZE_MIB MiB PUT" "ingest run (put)" "curl -T"
    row "one $SIZE_MIB MiB PUT, \`--no-journal\`" "ingest run (put, --no-journal)" "curl -T"
    row "one $SIZE_MIB MiB s3-post (same form)" "ingest run (s3-post)" "curl -F (same form)"
    exit 0
fi
echo "== one ${SIZE_MIB} MiB upload to a loopback sink (127.0.0.1), best of $ROUNDS interleaved rounds, every size verified =="
printf '  %-22s %8s %9s %7s %14s %16s\n' run "best s" "MiB/s" "CPU s" "peak RSS KiB" "over --version"
for label in "curl -T" "ingest run (put)" "ingest run (put, --no-journal)" "curl -F (same form)" "ingest run (s3-post)"; do
    over=""
    case "$label" in ingest*) over=$(printf '%+d KiB' "$((RSS[$label] - BASELINE))") ;; esac
    printf '  %-22s %8.2f %9.1f %7.2f %14d %16s\n' "$label" "${BEST[$label]}" "$(echo "$mib / ${BEST[$label]}" | bc -l)" \
        "${CPU[$label]}" "${RSS[$label]}" "$over"
done
printf '  %-22s %8s %9s %7s %14d\n' "ingest --version" "" "" "" "$BASELINE"
printf '  throughput ratio ingest/peer (>= 1: ingest faster; goal >= 0.95): put %.2f (--no-journal %.2f)   s3-post %.2f\n' \
    "$(echo "${BEST[curl -T]} / ${BEST[ingest run (put)]}" | bc -l)" \
    "$(echo "${BEST[curl -T]} / ${BEST[ingest run (put, --no-journal)]}" | bc -l)" \
    "$(echo "${BEST[curl -F (same form)]} / ${BEST[ingest run (s3-post)]}" | bc -l)"
# Issue 22 §4: the journal's identity (XXH3-128 on curl's thread) must not cost CPU either: goal <= 1.3.
printf '  CPU seconds per GiB: curl -T %.2f, ingest put %.2f (--no-journal %.2f); ingest/curl %.2f (goal <= 1.3)\n' \
    "$(echo "${CPU[curl -T]} * 1024 / $mib" | bc -l)" "$(echo "${CPU[ingest run (put)]} * 1024 / $mib" | bc -l)" \
    "$(echo "${CPU[ingest run (put, --no-journal)]} * 1024 / $mib" | bc -l)" \
    "$(echo "${CPU[ingest run (put)]} / ${CPU[curl -T]}" | bc -l)"
