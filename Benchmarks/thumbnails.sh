#!/usr/bin/env bash
# The HTML report's thumbnail cost per file, beside the ffmpeg CLI making the same 320 px thumbnail in the same
# run. For each kind of file, N copies go through `ingest validate` twice — `--report x.jsonl` and
# `--report x.html` — and the difference per file is what the contact sheet costs (sniff, decode, scale, orient,
# JPEG-encode, base64, spool). The peer is one `ffmpeg` process per file (`heif-convert` for HEIC) (what a script would run): a seek and one
# frame scaled to 320 px for videos, the still scaled for photos, `showwavespic` for audio. CPU seconds (user +
# sys) and peak RSS come from /usr/bin/time. Not a test: nothing here asserts a time.
# Usage: bash Benchmarks/thumbnails.sh [WORKDIR]   (N=20 copies of each kind; INGEST=path skips the release build)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${INGEST:-}" ]; then
    swift build -c release --product ingest >/dev/null
    INGEST="$(swift build -c release --show-bin-path)/ingest"
fi
WORK="${1:-$(mktemp -d /tmp/ingest-thumb-bench.XXXXXX)}"
trap 'rm -rf "$WORK"' EXIT
N="${N:-20}"
ff=(ffmpeg -hide_banner -loglevel error -y)
mkdir -p "$WORK/src"

# A 12 MP camera photo turned by EXIF (orientation 6); a 3000×2000 PNG; a 12 MP HEIC; a 1080p 30 s H.264 clip
# that opens on black; a 5-minute AAC recording.
"${ff[@]}" -f lavfi -i "testsrc2=size=4000x3000" -frames:v 1 -q:v 2 "$WORK/src/photo.jpg"
exiftool -q -overwrite_original -n -Orientation=6 "$WORK/src/photo.jpg"
"${ff[@]}" -f lavfi -i "testsrc2=size=3000x2000" -frames:v 1 "$WORK/src/graphic.png"
heif-enc -q 50 -o "$WORK/src/photo.heic" "$WORK/src/photo.jpg" >/dev/null
"${ff[@]}" -f lavfi -i "color=c=black:s=1920x1080:r=30:d=2" -f lavfi -i "testsrc2=s=1920x1080:r=30:d=28" \
    -filter_complex "[0][1]concat=n=2:v=1:a=0" -c:v libx264 -preset veryfast -g 60 -pix_fmt yuv420p "$WORK/src/clip.mp4"
"${ff[@]}" -f lavfi -i "sine=frequency=330:duration=300:sample_rate=48000" -c:a aac -b:a 96k "$WORK/src/voice.m4a"

cat >"$WORK/p.yml" <<'YML'
version: 1
name: thumbnail-bench
stages:
  - validate: { sniff: true }
  - probe:
YML

# Runs a command under /usr/bin/time; sets wall, cpu (user + sys) and rss (KiB).
measure() {
    /usr/bin/time -f '%e %U %S %M' -o "$WORK/time.txt" "$@" >/dev/null 2>&1 || true
    read -r wall user sys rss < <(tail -1 "$WORK/time.txt")
    cpu=$(echo "$user + $sys" | bc -l)
}

printf '%-8s %-20s | %-28s | %-28s | %s\n' kind "file" "ingest html − jsonl, per file" "ffmpeg CLI per file" "ingest ÷ ffmpeg (CPU)"
for kind in photo.jpg graphic.png photo.heic clip.mp4 voice.m4a; do
    dir="$WORK/$kind.d"
    mkdir -p "$dir"
    for i in $(seq -w 1 "$N"); do ln -f "$WORK/src/$kind" "$dir/$i-$kind"; done
    measure "$INGEST" validate "$WORK/p.yml" "$dir" --report "$WORK/r.jsonl" -q --work-dir "$WORK/w"
    base_wall=$wall base_cpu=$cpu
    measure "$INGEST" validate "$WORK/p.yml" "$dir" --report "$WORK/r.html" -q --work-dir "$WORK/w"
    html_wall=$wall html_cpu=$cpu html_rss=$rss
    per_cpu=$(echo "($html_cpu - $base_cpu) * 1000 / $N" | bc -l)
    per_wall=$(echo "($html_wall - $base_wall) * 1000 / $N" | bc -l)
    case "$kind" in
        clip.mp4) peer=(-ss 6 -i "$dir/01-$kind" -frames:v 1 -vf "scale=320:-2" "$WORK/peer.jpg") ;;
        voice.m4a) peer=(-i "$dir/01-$kind" -filter_complex "showwavespic=s=320x60" -frames:v 1 "$WORK/peer.png") ;;
        *) peer=(-i "$dir/01-$kind" -frames:v 1 -vf "scale=320:320:force_original_aspect_ratio=decrease" "$WORK/peer.jpg") ;;
    esac
    # FFmpeg 5.1 cannot read HEIC (it fails at once): that row's peer is libheif's own heif-convert (a full-size
    # decode and JPEG encode, no scaling).
    runner=("${ff[@]}")
    [ "$kind" = photo.heic ] && runner=(heif-convert -q 85) peer=("$dir/01-$kind" "$WORK/peer.jpg")
    peer_cpu=0 peer_wall=0
    for _ in 1 2 3; do
        measure "${runner[@]}" "${peer[@]}"
        peer_cpu=$(echo "$peer_cpu + $cpu / 3" | bc -l)
        peer_wall=$(echo "$peer_wall + $wall / 3" | bc -l)
    done
    size=$(stat -c %s "$WORK/src/$kind")
    printf '%-8s %-20s | %6.1f ms CPU, %6.1f ms wall    | %6.1f ms CPU, %6.1f ms wall | %.2f  (html run peak RSS %d MiB)\n' \
        "${kind#*.}" "$kind ($((size / 1024)) KiB)" "$per_cpu" "$per_wall" "$(echo "$peer_cpu * 1000" | bc -l)" \
        "$(echo "$peer_wall * 1000" | bc -l)" "$(echo "$per_cpu / ($peer_cpu * 1000)" | bc -l)" "$((html_rss / 1024))"
    rm -rf "$dir"
done
