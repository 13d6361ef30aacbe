#!/usr/bin/env bash
# The jpeg stage's per-core throughput on 12 MP photos, beside its peers measured in the same run:
#   - tjbench (libjpeg-turbo's own benchmark): decompress the photo + compress at quality 80, 4:2:0, accurate DCT
#   - djpeg | cjpeg -quality 80 -sample 2x2 (what the stage's tests use as the reference)
#   - ingest run with a `jpeg` stage at concurrency 1: the planar fast path, a rotated photo, and a downscale.
# Per-core figures divide megapixels by CPU seconds (user + sys), so the two-process djpeg | cjpeg pipe and a
# single ingest worker compare fairly; wall times are printed too. Not a test: nothing here asserts a time.
# Usage: bash Benchmarks/jpeg.sh [WORKDIR]   (N=8 photos by default; WORKDIR defaults to a temp dir, removed after)
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product ingest >/dev/null
INGEST="$(swift build -c release --show-bin-path)/ingest"
WORK="${1:-$(mktemp -d /tmp/ingest-jpeg-bench.XXXXXX)}"
trap 'rm -rf "$WORK"' EXIT
N="${N:-8}"
WIDTH=4000
HEIGHT=3000
MP=$(echo "$WIDTH * $HEIGHT / 1000000" | bc -l)
mkdir -p "$WORK/in" "$WORK/rotated" "$WORK/out"

# A camera-like 12 MP photo: detailed noisy luma, smooth chroma, stored 4:2:0 at high quality (-q:v 2).
ffmpeg -hide_banner -loglevel error -y -f lavfi \
    -i "testsrc2=size=${WIDTH}x${HEIGHT},eq=saturation=0.5:contrast=0.8,format=yuv444p,noise=c0s=6:allf=t,gblur=sigma=2:planes=6" \
    -frames:v 1 -pix_fmt yuvj420p -q:v 2 "$WORK/photo.jpg"
djpeg "$WORK/photo.jpg" >"$WORK/photo.ppm"
cp "$WORK/photo.jpg" "$WORK/photo-rotated.jpg"
exiftool -q -overwrite_original -n -Orientation=6 "$WORK/photo-rotated.jpg"
for i in $(seq -w 1 "$N"); do
    cp "$WORK/photo.jpg" "$WORK/in/photo$i.jpg"
    cp "$WORK/photo-rotated.jpg" "$WORK/rotated/photo$i.jpg"
done
ls -l "$WORK/photo.jpg" | awk -v mp="$MP" '{printf "photo: %dx%d (%.1f MP), %.2f MB at -q:v 2; %d copies\n", '"$WIDTH"', '"$HEIGHT"', mp, $5/1e6, '"$N"'}'

# tjbench prints one row per test; the figures follow "width height": comp. perf, ratio, decomp. perf (MP/s).
tj_row() { awk -v w="$WIDTH" -v h="$HEIGHT" '{ for (i = 2; i <= NF; i++) if ($(i-1) == w && $i == h) print $(i+1), $NF }'; }
read -r _ tj_decomp < <(tjbench "$WORK/photo.jpg" -quiet -nowrite -benchtime 3 -warmup 1 -accuratedct | tj_row)
read -r tj_comp _ < <(tjbench "$WORK/photo.ppm" 80 -subsamp 420 -rgb -quiet -nowrite -benchtime 3 -warmup 1 -accuratedct | tj_row)
tj_mps=$(echo "1 / (1 / $tj_decomp + 1 / $tj_comp)" | bc -l)

# Runs a command under /usr/bin/time; sets wall and cpu (user + sys, children included).
measure() {
    /usr/bin/time -f '%e %U %S' -o "$WORK/time.txt" "$@" >/dev/null 2>"$WORK/stderr.txt" || {
        cat "$WORK/stderr.txt" >&2
        exit 1
    }
    wall=$(awk '{print $1}' "$WORK/time.txt")
    cpu=$(awk '{print $2 + $3}' "$WORK/time.txt")
}

measure sh -c 'for f in "$1"/in/*.jpg; do djpeg "$f" | cjpeg -quality 80 -sample 2x2 >"$1/out/$(basename "$f")"; done' sh "$WORK"
dc_wall=$wall dc_cpu=$cpu
dc_mps=$(echo "$N * $MP / $dc_cpu" | bc -l)

pipeline() {
    printf 'version: 1\nname: bench-jpeg\nstages:\n  - jpeg: { quality: 0.8%s }\n' "$1" >"$WORK/jpeg.yml"
}
run_ingest() {
    rm -rf "$WORK/work"
    measure "$INGEST" run "$WORK/jpeg.yml" "$1" --concurrency 1 --quiet --work-dir "$WORK/work"
    local produced
    produced=$(find "$WORK/work" -name '*.jpg' | wc -l)
    [ "$produced" -eq "$N" ] || { echo "ingest produced $produced of $N files" >&2; exit 1; }
}
pipeline ""
run_ingest "$WORK/in"
in_wall=$wall in_cpu=$cpu
in_mps=$(echo "$N * $MP / $in_cpu" | bc -l)
pipeline ""
run_ingest "$WORK/rotated"
rot_wall=$wall rot_cpu=$cpu
rot_mps=$(echo "$N * $MP / $rot_cpu" | bc -l)
pipeline ", max_dimension: 2048"
run_ingest "$WORK/in"
small_wall=$wall small_cpu=$cpu
small_mps=$(echo "$N * $MP / $small_cpu" | bc -l)

echo
echo "per core, megapixels of input per CPU second (higher is better):"
printf '  tjbench decompress + compress q80 4:2:0   %7.1f MP/s   (decomp %.1f, comp %.1f)\n' "$tj_mps" "$tj_decomp" "$tj_comp"
printf '  djpeg | cjpeg -quality 80 -sample 2x2     %7.1f MP/s   %6.2f s wall, %6.2f s CPU\n' "$dc_mps" "$dc_wall" "$dc_cpu"
printf '  ingest jpeg (planar fast path)            %7.1f MP/s   %6.2f s wall, %6.2f s CPU   %.2fx tjbench, %.2fx djpeg|cjpeg\n' \
    "$in_mps" "$in_wall" "$in_cpu" "$(echo "$in_mps / $tj_mps" | bc -l)" "$(echo "$in_mps / $dc_mps" | bc -l)"
printf '  ingest jpeg, orientation 6 (rotated)      %7.1f MP/s   %6.2f s wall, %6.2f s CPU   %.2fx tjbench, %.2fx djpeg|cjpeg\n' \
    "$rot_mps" "$rot_wall" "$rot_cpu" "$(echo "$rot_mps / $tj_mps" | bc -l)" "$(echo "$rot_mps / $dc_mps" | bc -l)"
printf '  ingest jpeg, max_dimension 2048           %7.1f MP/s   %6.2f s wall, %6.2f s CPU   %.2fx tjbench, %.2fx djpeg|cjpeg\n' \
    "$small_mps" "$small_wall" "$small_cpu" "$(echo "$small_mps / $tj_mps" | bc -l)" "$(echo "$small_mps / $dc_mps" | bc -l)"
