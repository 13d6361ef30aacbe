#!/usr/bin/env bash
# Runs the upload benchmarks of issue 13 — upload.sh (PUT vs curl -T, s3-post vs curl -F), s3batch.sh (a folder and
# one multipart file to SeaweedFS vs s5cmd, rclone, aws-cli) and, as root, wan.sh (the same at 40 ms round trip, then
# with 1 % loss) — and prints the tables of docs/performance.md in Markdown, headed by the machine they ran on.
# Each script's own sizes apply (see their headers) and pass through, e.g.
#   bash Benchmarks/README-table.sh                                   (full size; wan.sh only as root)
#   SIZE_MIB=512 FILES=20 BIG_MIB=256 ROUNDS=3 bash Benchmarks/README-table.sh
#   WAN_FILES=20 WAN_BIG_MIB=128 … (wan.sh's sizes, defaults FILES/FILE_MIB/BIG_MIB); SKIP="wan" leaves a part out.
# A release build is made once (or INGEST=/path/to/ingest is used); peers: `make bench` installs them.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${INGEST:-}" ]; then
    swift build -c release --product ingest >/dev/null
    INGEST="$(swift build -c release --show-bin-path)/ingest"
fi
export INGEST MARKDOWN=1
SKIP="${SKIP:-}"
skipped() { [[ " $SKIP " = *" $1 "* ]]; }
peer_version() { "$@" 2>/dev/null | head -1 | tr -s ' ' | cut -c1-60 || echo "?"; }
scripts=$(python3 -c "import sysconfig; print(sysconfig.get_path('scripts'))")

echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores ($(grep -o -w sha_ni /proc/cpuinfo | head -1 || echo 'no sha_ni')),"
echo "$(free -g | awk '/^Mem:/ { print $2 }') GiB RAM, Linux $(uname -r), load average at start $(cut -d' ' -f1-3 /proc/loadavg)."
echo "$("$INGEST" --version | head -1); curl $(curl --version | head -1 | cut -d' ' -f2);" \
    "s5cmd $(peer_version "$(python3 -c 'import os, s5cmd; print(os.path.join(os.path.dirname(s5cmd.__file__), "bin", "s5cmd"))')" version);" \
    "$(peer_version "$scripts/rclone" version); $(peer_version "$scripts/aws" --version | cut -d' ' -f1)."
echo

if ! skipped upload; then
    echo "**One file to a loopback HTTP sink** (\`Benchmarks/upload.sh\`, best of ${ROUNDS:-2} interleaved rounds):"
    echo
    bash Benchmarks/upload.sh
    echo
fi
if ! skipped s3batch; then
    echo "**A folder to SeaweedFS on loopback** (\`Benchmarks/s3batch.sh\`, ${CONCURRENCY:-4} at a time, ${PART_MIB:-8} MiB parts, best of ${ROUNDS:-2} rotating rounds; cells: throughput (best seconds, that run's CPU seconds, peak RSS)):"
    echo
    bash Benchmarks/s3batch.sh
    echo
fi
if ! skipped wan; then
    if [ "$(id -u)" != 0 ]; then
        echo "(wan.sh skipped: it needs root for its network namespaces — sudo bash Benchmarks/README-table.sh)"
    else
        echo "**The same at WAN latency** (\`Benchmarks/wan.sh\`: SeaweedFS and the tools in two network namespaces, 20 ms each way; cells also give the TCP connections each tool opened):"
        echo
        FILES="${WAN_FILES:-${FILES:-100}}" FILE_MIB="${WAN_FILE_MIB:-${FILE_MIB:-4}}" BIG_MIB="${WAN_BIG_MIB:-${BIG_MIB:-1024}}" \
            bash Benchmarks/wan.sh
    fi
fi
