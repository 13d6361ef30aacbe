#!/usr/bin/env bash
# Several outputs from one recording (issue 31 §2), beside the ffmpeg CLI doing the same jobs, in the same run (not a
# test: nothing here asserts a time):
#  1. speed: a poster (frame at 1 s), a 12-frame thumbnail sheet and a 720p proxy (H.264 CRF 23 veryfast + AAC,
#     faststart) of one clip. ingest: `poster`, `thumbnails` and `video … output: proxy` in one pipeline, which share
#     one demux and decode pass. ffmpeg: the three commands a user would otherwise run, one after the other:
#       ffmpeg -ss 1 -i IN -frames:v 1 -q:v 3 poster.jpg
#       ffmpeg -i IN -vf "fps=12/DURATION,scale=320:-2,tile=4x3" -frames:v 1 sheet.jpg
#       ffmpeg -i IN -vf scale=-2:720 -c:v libx264 -preset veryfast -crf 23 -c:a aac -b:a 128k -movflags +faststart proxy.mp4
#     Goal: ingest ≤ 0.7× the three commands' summed wall time, outputs of the same size class.
#  2. memory: the same three outputs of a 3840×2160 clip: peak RSS of the whole run.
# Knobs (environment):
#   SECONDS_1080=600   length of the 1080p30 clip (the issue's 10 minutes; 0 skips section 1)
#   SECONDS_4K=600     length of the 2160p30 clip for the memory figure (0 skips it)
#   ROUNDS=1           rounds of section 1 (best wall time of each side is kept; the two sides alternate)
#   CLIPS=dir          keep the generated clips there and reuse them (default: made in WORKDIR, removed)
#   INGEST=path        an ingest binary (default: a release build made here)
# Usage: bash Benchmarks/outputs.sh [WORKDIR]   (WORKDIR defaults to a temp dir, removed afterwards)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${INGEST:-}" ]; then
    swift build -c release --product ingest >/dev/null
    INGEST="$(swift build -c release --show-bin-path)/ingest"
fi
WORK="${1:-$(mktemp -d /tmp/ingest-outputs-bench.XXXXXX)}"
trap 'rm -rf "$WORK"' EXIT
SECONDS_1080="${SECONDS_1080:-600}"
SECONDS_4K="${SECONDS_4K:-600}"
ROUNDS="${ROUNDS:-1}"
ff=(ffmpeg -nostdin -hide_banner -loglevel error -y)
CLIPS="${CLIPS:-$WORK}"
mkdir -p "$WORK"
mkdir -p "$CLIPS/in-$SECONDS_1080" "$CLIPS/in4k-$SECONDS_4K"

# Runs a command under /usr/bin/time; sets wall (s), cpu (user + sys s) and rss (peak resident KiB).
measure() {
    /usr/bin/time -f '%e %M %U %S' -o "$WORK/time.txt" "$@" >"$WORK/stdout.txt" 2>"$WORK/stderr.txt" || {
        cat "$WORK/stdout.txt" "$WORK/stderr.txt" >&2
        exit 1
    }
    read -r wall rss user sys <"$WORK/time.txt"
    cpu=$(echo "$user + $sys" | bc -l)
}
# The three outputs in one pipeline; a local upload of each keeps them (the runner clears work files).
ingest_outputs() { # INPUT-FOLDER
    cat >"$WORK/pipeline.yml" <<YAML
version: 1
name: outputs-bench
stages:
  - poster: { at: 1s, output: poster }
  - thumbnails: { count: 12, columns: 4, output: sheet }
  - video: { output: proxy, mode: transcode, max_width: 1280, max_height: 720, crf: 23, preset: veryfast }
  - upload: { method: local, dir: "$WORK/out", output: poster }
  - upload: { method: local, dir: "$WORK/out", output: sheet }
  - upload: { method: local, dir: "$WORK/out", output: proxy }
YAML
    rm -rf "$WORK/work" "$WORK/out"
    measure "$INGEST" run "$WORK/pipeline.yml" "$1" --concurrency 1 --quiet --no-journal --work-dir "$WORK/work"
    if grep -q FAIL "$WORK/stdout.txt"; then cat "$WORK/stdout.txt" >&2; exit 1; fi
}
ffmpeg_outputs() { # INPUT DURATION — sets wall and cpu: the three commands' sums; each one's in ff_each
    local total_wall=0 total_cpu=0
    measure "${ff[@]}" -ss 1 -i "$1" -frames:v 1 -q:v 3 "$WORK/ff-poster.jpg"
    ff_each="poster $wall s wall / $cpu s CPU"
    total_wall=$(echo "$total_wall + $wall" | bc -l) total_cpu=$(echo "$total_cpu + $cpu" | bc -l)
    measure "${ff[@]}" -i "$1" -vf "fps=12/$2,scale=320:-2,tile=4x3" -frames:v 1 "$WORK/ff-sheet.jpg"
    ff_each="$ff_each, sheet $wall / $cpu"
    total_wall=$(echo "$total_wall + $wall" | bc -l) total_cpu=$(echo "$total_cpu + $cpu" | bc -l)
    measure "${ff[@]}" -i "$1" -vf scale=-2:720 -c:v libx264 -preset veryfast -crf 23 -c:a aac -b:a 128k \
        -movflags +faststart "$WORK/ff-proxy.mp4"
    ff_each="$ff_each, proxy $wall / $cpu"
    ff_proxy_wall=$wall ff_proxy_cpu=$cpu
    wall=$(echo "$total_wall + $wall" | bc -l) cpu=$(echo "$total_cpu + $cpu" | bc -l)
}
size() { stat -c %s "$1"; }

if [ "$SECONDS_1080" != 0 ]; then
    echo "== speed: poster + 12-frame sheet + 720p proxy of a ${SECONDS_1080} s 1080p30 clip =="
    clip="$CLIPS/in-$SECONDS_1080/game.mov"
    [ -s "$clip" ] || nice -n 5 "${ff[@]}" -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=c0s=8:allf=t" \
        -f lavfi -i "sine=frequency=440:sample_rate=48000" -t "$SECONDS_1080" -ac 2 \
        -c:v libx264 -preset ultrafast -crf 20 -pix_fmt yuv420p -c:a aac -b:a 128k "$clip"
    ls -l "$clip" | awk '{printf "input: %.1f MB\n", $5/1e6}'
    best_ff=999999 best_in=999999
    for round in $(seq "$ROUNDS"); do
        echo "-- round $round, load average $(cut -d' ' -f1-3 /proc/loadavg)"
        for side in $([ $((round % 2)) = 1 ] && echo "ffmpeg ingest" || echo "ingest ffmpeg"); do
            if [ "$side" = ffmpeg ]; then
                ffmpeg_outputs "$clip" "$SECONDS_1080"
                best_ff=$(echo "if ($wall < $best_ff) $wall else $best_ff" | bc -l)
                ff_cpu=$cpu
            else
                ingest_outputs "$(dirname "$clip")"
                best_in=$(echo "if ($wall < $best_in) $wall else $best_in" | bc -l)
                in_rss=$rss in_cpu=$cpu
            fi
            printf '     %s: %.2f s wall, %.2f s CPU\n' "$side" "$wall" "$cpu"
            [ "$side" = ingest ] || echo "       ($ff_each)"
        done
    done
    printf '  ffmpeg ×3  %7.2f s wall  %7.2f s CPU  poster %s B  sheet %s B  proxy %s B\n' "$best_ff" "$ff_cpu" \
        "$(size "$WORK/ff-poster.jpg")" "$(size "$WORK/ff-sheet.jpg")" "$(size "$WORK/ff-proxy.mp4")"
    printf '  ingest     %7.2f s wall  %7.2f s CPU  %7d KiB peak RSS  poster %s B  sheet %s B  proxy %s B\n' \
        "$best_in" "$in_cpu" "$in_rss" "$(size "$(find "$WORK/out" -name '*.poster.jpg')")" \
        "$(size "$(find "$WORK/out" -name '*.sheet.jpg')")" "$(size "$(find "$WORK/out" -name '*.proxy.mp4')")"
    printf '  ratio ingest / (ffmpeg ×3): wall %.2fx (goal ≤ 0.70x), CPU %.2fx\n' "$(echo "$best_in / $best_ff" | bc -l)" \
        "$(echo "$in_cpu / $ff_cpu" | bc -l)"
    # What one shared decode can at best come to: the proxy's own cost (its decode, scale and encode), the other
    # two outputs' decodes saved. ingest at 1.00x of it makes the poster and the sheet for nothing.
    printf '  ratio ingest / ffmpeg proxy alone (last round): wall %.2fx, CPU %.2fx\n' \
        "$(echo "$best_in / $ff_proxy_wall" | bc -l)" "$(echo "$in_cpu / $ff_proxy_cpu" | bc -l)"
fi

if [ "$SECONDS_4K" != 0 ]; then
    echo "== memory: the same three outputs of a ${SECONDS_4K} s 2160p30 clip, load average $(cut -d' ' -f1-3 /proc/loadavg) =="
    clip="$CLIPS/in4k-$SECONDS_4K/uhd.mov"
    [ -s "$clip" ] || nice -n 5 "${ff[@]}" -f lavfi -i "testsrc2=size=3840x2160:rate=30" \
        -f lavfi -i "sine=frequency=440:sample_rate=48000" -t "$SECONDS_4K" -ac 2 \
        -c:v libx264 -preset ultrafast -crf 23 -pix_fmt yuv420p -c:a aac "$clip"
    ls -l "$clip" | awk '{printf "input: %.1f MB\n", $5/1e6}'
    ingest_outputs "$(dirname "$clip")"
    printf '  ingest  %7.2f s wall  %7d KiB peak RSS\n' "$wall" "$rss"
    measure "${ff[@]}" -i "$clip" -vf scale=-2:720 -c:v libx264 -preset veryfast -crf 23 -c:a aac \
        -b:a 128k -movflags +faststart "$WORK/ff-proxy4k.mp4"
    printf '  ffmpeg proxy alone  %7.2f s wall  %7d KiB peak RSS\n' "$wall" "$rss"
fi
