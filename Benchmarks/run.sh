#!/usr/bin/env bash
# Benchmarks for the foundation: each figure is printed beside the peer tool's, measured in the same run.
#  1. probe throughput: `ingest probe --json` over 500 small .m4a/.mov files vs `ffprobe` once per file.
#  2. `ingest validate` (with probe) on a 2 GiB .mov: peak RSS and wall time (the file must never be read whole).
# Usage: bash Benchmarks/run.sh [WORKDIR]   (WORKDIR defaults to a temp dir; it is removed afterwards)
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product ingest >/dev/null
INGEST="$(swift build -c release --show-bin-path)/ingest"
WORK="${1:-$(mktemp -d /tmp/ingest-bench.XXXXXX)}"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/small"
now() { date +%s.%N; }
ff=(ffmpeg -hide_banner -loglevel error -y)

echo "== probe: 500 small files (250 .mov H.264/AAC, 250 .m4a AAC) =="
"${ff[@]}" -f lavfi -i testsrc=size=320x240:rate=25:duration=2 -f lavfi -i sine=duration=2 \
    -c:v libx264 -preset ultrafast -c:a aac -shortest "$WORK/seed.mov"
"${ff[@]}" -f lavfi -i sine=duration=3 -ac 1 -ar 44100 -c:a aac "$WORK/seed.m4a"
for i in $(seq -w 1 250); do
    cp "$WORK/seed.mov" "$WORK/small/clip$i.mov"
    cp "$WORK/seed.m4a" "$WORK/small/voice$i.m4a"
done
files=("$WORK"/small/*)
start=$(now)
for f in "${files[@]}"; do ffprobe -v error -show_format -show_streams -of json "$f" >/dev/null; done
ffprobe_s=$(echo "$(now) - $start" | bc -l)
start=$(now)
"$INGEST" probe --json "${files[@]}" >/dev/null
ingest_s=$(echo "$(now) - $start" | bc -l)
cat > "$WORK/probe.yml" <<'YML'
version: 1
name: bench-probe
stages:
  - probe:
YML
start=$(now)
"$INGEST" validate "$WORK/probe.yml" "$WORK/small" --report "$WORK/report.jsonl" --report-format jsonl --quiet || true
run_s=$(echo "$(now) - $start" | bc -l)
n=${#files[@]}
printf 'ffprobe, once per file:          %6.2f s  (%5.1f ms/file)\n' "$ffprobe_s" "$(echo "$ffprobe_s*1000/$n" | bc -l)"
printf 'ingest probe --json (1 process): %6.2f s  (%5.2f ms/file)  %5.1fx ffprobe\n' "$ingest_s" \
    "$(echo "$ingest_s*1000/$n" | bc -l)" "$(echo "$ffprobe_s/$ingest_s" | bc -l)"
printf 'ingest validate probe-pipeline:  %6.2f s  (%5.2f ms/file)  %5.1fx ffprobe  (concurrency = cores)\n' \
    "$run_s" "$(echo "$run_s*1000/$n" | bc -l)" "$(echo "$ffprobe_s/$run_s" | bc -l)"

echo
echo "== validate + probe on a 2 GiB .mov (moov at the end) =="
"${ff[@]}" -f lavfi -i testsrc=size=1920x1080:rate=30 -frames:v 520 -c:v rawvideo -pix_fmt uyvy422 "$WORK/big.mov"
ls -l "$WORK/big.mov" | awk '{printf "size: %.2f GiB\n", $5/1073741824}'
cat > "$WORK/big.yml" <<'YML'
version: 1
name: bench-big
stages:
  - validate: { extensions: [mov], max_bytes: 4GiB, duration: { max: 1h }, require: [video] }
  - probe:
YML
sync
/usr/bin/time -f '%e %M' -o "$WORK/time.txt" "$INGEST" validate "$WORK/big.yml" "$WORK/big.mov" --quiet \
    --report "$WORK/big.jsonl" --report-format jsonl || true
read -r wall rss_kib < "$WORK/time.txt"
/usr/bin/time -f '%e %M' -o "$WORK/time-ffprobe.txt" ffprobe -v error -show_format -show_streams -of json \
    "$WORK/big.mov" >/dev/null
read -r ff_wall ff_rss < "$WORK/time-ffprobe.txt"
printf 'ingest validate: %.2f s, peak RSS %.1f MiB   (target: < 1 s, <= 40 MiB)\n' "$wall" "$(echo "$rss_kib/1024" | bc -l)"
printf 'ffprobe:         %.2f s, peak RSS %.1f MiB\n' "$ff_wall" "$(echo "$ff_rss/1024" | bc -l)"
grep -o '"status":"[a-z]*"' "$WORK/big.jsonl" || true
