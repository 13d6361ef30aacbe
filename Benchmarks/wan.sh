#!/usr/bin/env bash
# WAN benchmark (issue 13, goal 3): Benchmarks/s3batch.sh's two workloads (FILES × FILE_MIB MiB folder, one BIG_MIB
# MiB file) and tools (ingest run with an s3 pipeline vs s5cmd, rclone, aws-cli; CONCURRENCY at a time, PART_MIB MiB
# parts) at WAN latency: SeaweedFS runs in a network namespace of this script's own, the tools in a second one, joined
# by a link with a private /30 (10.203.0.1 for the tools, 10.203.0.2 for the server: only these two ends, inside the
# namespaces, get addresses; nothing else is reached). Every packet is delayed DELAY (20 ms) on both ends, 40 ms
# round trip; a first pass runs with no loss, a second with LOSS (1 %) loss on both ends. The link is a veth pair with
# `tc netem` where the kernel has netem, else (LINK=tun, as on the 2-core Debian machine this was written on, whose
# kernel lacks CONFIG_NET_SCH_NETEM) two TUN devices joined by Benchmarks/delayline.py. Also reports how many
# TCP connections each tool opened (ActiveOpens of the tools' namespace, where nothing else runs). Every object's
# size is checked after each run; best of ROUNDS (2) rotating rounds; ratios ingest/peer (>= 1: ingest faster).
# Namespaces, veth and server are removed at exit, however the script ends. Needs root (ip netns, tc).
# Usage: sudo bash Benchmarks/wan.sh                        (full size: 100 × 4 MiB and 1 GiB, both passes)
#        FILES=10 FILE_MIB=1 BIG_MIB=64 INGEST=/path/to/ingest bash Benchmarks/wan.sh   (smoke test)
#        LOSSES="0" (only the lossless pass), DELAY=50ms, TOOLS="ingest s5cmd", as in s3batch.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
FILES="${FILES:-100}"
FILE_MIB="${FILE_MIB:-4}"
BIG_MIB="${BIG_MIB:-1024}"
DELAY="${DELAY:-20ms}"
LOSS="${LOSS:-1%}"
LOSSES="${LOSSES:-0 $LOSS}"
[ "$(id -u)" = 0 ] || { echo "wan.sh needs root (ip netns, tc): sudo bash Benchmarks/wan.sh" >&2; exit 2; }
if [ -z "${INGEST:-}" ]; then
    swift build -c release --product ingest >/dev/null
    INGEST="$(swift build -c release --show-bin-path)/ingest"
fi
NS_SRV="ingest-wan-srv-$$" NS_CLI="ingest-wan-cli-$$"
VETH_SRV="iwan-s-$$" VETH_CLI="iwan-c-$$"
VETH_SRV="${VETH_SRV:0:15}" VETH_CLI="${VETH_CLI:0:15}"
SRV_IP=10.203.0.2 CLI_IP=10.203.0.1
SRV=(ip netns exec "$NS_SRV") CLI=(ip netns exec "$NS_CLI")
COUNT_CONNECTIONS=1
source Benchmarks/s3lib.sh
WORK="$(mktemp -d /tmp/ingest-wan.XXXXXX)"
# The delay line's packet counts (passed, dropped) go to standard output directly, or after the table (MARKDOWN=1).
DELAYLINE_LOG=/dev/stdout
[ "${MARKDOWN:-0}" = 1 ] && DELAYLINE_LOG="$WORK/delayline.log"
cleanup() {
    stop_weed
    [ -z "${DELAYLINE:-}" ] || { kill "$DELAYLINE" 2>/dev/null; wait "$DELAYLINE" 2>/dev/null; } || true
    ip netns del "$NS_CLI" 2>/dev/null || true # takes its veth end, and with it the pair
    ip netns del "$NS_SRV" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The two namespaces and the link between them. The kernel's netem (tc qdisc … netem) is used when the kernel has it;
# where it does not (CONFIG_NET_SCH_NETEM unset, as on the machine this was written on: "Specified qdisc kind is
# unknown"), Benchmarks/delayline.py joins two TUN devices and delays/drops in user space instead. Either way each
# end gets its /30 address inside its own namespace only.
ip netns add "$NS_SRV"
ip netns add "$NS_CLI"
for ns in "$NS_CLI" "$NS_SRV"; do ip -n "$ns" link set lo up; done
LINK="${LINK:-auto}"
if [ "$LINK" = auto ]; then
    ip link add "$VETH_CLI" netns "$NS_CLI" type veth peer name "$VETH_SRV" netns "$NS_SRV"
    if tc -n "$NS_CLI" qdisc add dev "$VETH_CLI" root netem delay "$DELAY" 2>/dev/null; then LINK=netem; else LINK=tun; fi
    [ "$LINK" = netem ] || ip -n "$NS_CLI" link del "$VETH_CLI"
fi
if [ "$LINK" = netem ]; then
    ip -n "$NS_CLI" addr add "$CLI_IP/30" dev "$VETH_CLI"
    ip -n "$NS_SRV" addr add "$SRV_IP/30" dev "$VETH_SRV"
else
    echo 0 >"$WORK/loss"
    CURRENT_LOSS=0
    python3 Benchmarks/delayline.py --ns-a "$NS_CLI" --dev-a "$VETH_CLI" --ns-b "$NS_SRV" --dev-b "$VETH_SRV" \
        --delay-ms "${DELAY%ms}" --loss-file "$WORK/loss" --ready-file "$WORK/link-ready" >"$DELAYLINE_LOG" &
    DELAYLINE=$!
    for _ in $(seq 100); do [ -s "$WORK/link-ready" ] && break; sleep 0.1; done
    [ -s "$WORK/link-ready" ] || { echo "wan.sh: the delay line did not start" >&2; exit 1; }
    ip -n "$NS_CLI" addr add "$CLI_IP" peer "$SRV_IP" dev "$VETH_CLI"
    ip -n "$NS_SRV" addr add "$SRV_IP" peer "$CLI_IP" dev "$VETH_SRV"
fi
ip -n "$NS_CLI" link set "$VETH_CLI" up
ip -n "$NS_SRV" link set "$VETH_SRV" up
# Sets the loss ($1: 0 or N%) on both ends. netem's default queue (1000 packets) would drop on its own at this
# bandwidth-delay product: a deep one instead.
impair() {
    if [ "$LINK" = netem ]; then
        local extra=()
        [ "$1" = 0 ] || extra=(loss "$1")
        tc -n "$NS_CLI" qdisc replace dev "$VETH_CLI" root netem delay "$DELAY" limit 100000 "${extra[@]}"
        tc -n "$NS_SRV" qdisc replace dev "$VETH_SRV" root netem delay "$DELAY" limit 100000 "${extra[@]}"
    elif [ "$1" != "$CURRENT_LOSS" ]; then # the delay line prints the last pass's packet counts on each change
        CURRENT_LOSS="$1"
        echo "${1%\%}" | awk '{ print $1 / 100 }' >"$WORK/loss"
        kill -HUP "$DELAYLINE"
    fi
}
impair 0

find_programs
start_weed "$SRV_IP"
configure_peers
make_data
rtt=$("${CLI[@]}" curl -s -o /dev/null -w '%{time_connect}' "$ENDPOINT/" | awk '{ printf "%.1f", $1 * 1000 }' || true)
[ "${MARKDOWN:-0}" = 1 ] && printf '\n'
echo "tools in $NS_CLI ($CLI_IP), SeaweedFS in $NS_SRV ($ENDPOINT); link: $LINK, $DELAY each way, TCP connect (one round trip) ${rtt:-?} ms"
for loss in $LOSSES; do
    impair "$loss"
    label="$DELAY each way"
    [ "$loss" = 0 ] || label+=", $loss loss each way"
    run_workloads "$label"
done
if [ "${MARKDOWN:-0}" = 1 ] && [ -n "${DELAYLINE:-}" ]; then
    kill -HUP "$DELAYLINE" # prints the last pass's counts
    sleep 0.5
    echo
    sed 's/^ *//' "$DELAYLINE_LOG"
fi
