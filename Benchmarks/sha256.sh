#!/usr/bin/env bash
# SHA-256 ceiling (issue 13): the journal's hash is SHA-256 over every byte sent, one stream, so one core's SHA-256
# speed bounds a single upload with the journal on. Measures, in CPU seconds per GiB from memory:
#   - swift-crypto's BoringSSL (what ingest links; its objects from the release build, called through
#     CCryptoBoringSSL_SHA256_Update, which dispatches to the SHA-NI code when the CPU has it),
#   - the system's OpenSSL libcrypto (EVP), in the same program, with and without SHA-NI (OPENSSL_ia32cap masks it),
#   - coreutils `sha256sum` on a file in the page cache,
# and names the function perf samples land in (sha256_block_data_order_hw is the SHA-NI one).
# Usage: bash Benchmarks/sha256.sh [MIB]    (default 1024; needs gcc, libssl-dev and a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
MIB="${1:-1024}"
swift build -c release --product ingest >/dev/null
objects=$(find "$(swift build -c release --show-bin-path)/CCryptoBoringSSL.build" -name '*.o')
WORK="$(mktemp -d /tmp/ingest-sha256.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
# shellcheck disable=SC2086
gcc -O2 Benchmarks/sha256/shabench.c $objects -lcrypto -lstdc++ -lpthread -o "$WORK/shabench"
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), SHA-NI: $(grep -q -w sha_ni /proc/cpuinfo && echo yes || echo no)"
"$WORK/shabench" "$MIB" 262144
if command -v perf >/dev/null && perf record -q -o "$WORK/perf.data" "$WORK/shabench" 256 >/dev/null 2>&1; then
    hot=$(perf report -i "$WORK/perf.data" --stdio --sort sym 2>/dev/null | grep -m1 -o 'CCryptoBoringSSL_sha256_block[a-z_]*' || true)
    echo "BoringSSL's hottest SHA-256 function under perf: ${hot:-not resolved}"
fi
echo "the same with SHA-NI masked from OpenSSL (OPENSSL_ia32cap=:~0x20000000; BoringSSL ignores the variable):"
OPENSSL_ia32cap=":~0x20000000" "$WORK/shabench" "$MIB" 262144 | tail -1
head -c "$((MIB * 1048576))" /dev/zero >"$WORK/file"
cat "$WORK/file" >/dev/null
/usr/bin/time -f '%U %S' -o "$WORK/time" sha256sum "$WORK/file" >/dev/null
cpu=$(awk '{ print $1 + $2 }' "$WORK/time")
echo "coreutils sha256sum: $cpu s CPU for $MIB MiB = $(echo "$MIB / $cpu" | bc) MiB/s"
