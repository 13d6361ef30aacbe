#!/usr/bin/env bash
# The audio and video stages beside the ffmpeg CLI doing the same job, measured in the same run (not a test:
# nothing here asserts a time):
#  1. video: a 60 s 1080p30 .mov (H.264 + AAC) → 720p H.264 CRF 23 `veryfast` + AAC 128k, faststart MP4.
#     ingest: a `video` stage (mode transcode, max 1280×720). ffmpeg: the plain CLI command for the same job
#     (the stage's rc-lookahead=10 is veryfast's own default, so x264 runs identically). Wall time, peak RSS.
#  2. audio: a 10 min 48 kHz stereo WAV → 64 kbit/s mono 44.1 kHz AAC .m4a, as × real time.
#  3. memory: the video stage on a long low-res clip (LONG_MIN minutes, ~GiB-class packet count) vs a ~20 MB
#     one: peak RSS must not grow with the length of the input.
# Usage: bash Benchmarks/transcode.sh [WORKDIR]   (WORKDIR defaults to a temp dir, removed afterwards)
#        ONLY=video|audio|memory runs one section; LONG_MIN sets the long clip's minutes (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product ingest >/dev/null
INGEST="$(swift build -c release --show-bin-path)/ingest"
WORK="${1:-$(mktemp -d /tmp/ingest-transcode-bench.XXXXXX)}"
trap 'rm -rf "$WORK"' EXIT
LONG_MIN="${LONG_MIN:-10}"
ff=(ffmpeg -nostdin -hide_banner -loglevel error -y)
mkdir -p "$WORK/in"

# Runs a command under /usr/bin/time; sets wall (s), cpu (user + sys s: steadier than wall on a shared machine)
# and rss (peak resident KiB).
measure() {
    /usr/bin/time -f '%e %M %U %S' -o "$WORK/time.txt" "$@" >"$WORK/stdout.txt" 2>"$WORK/stderr.txt" || {
        cat "$WORK/stdout.txt" "$WORK/stderr.txt" >&2
        exit 1
    }
    wall=$(awk '{print $1}' "$WORK/time.txt")
    rss=$(awk '{print $2}' "$WORK/time.txt")
    cpu=$(awk '{print $3 + $4}' "$WORK/time.txt")
}
# Runs `ingest run` with a one-stage pipeline on one file.
ingest_run() { # STAGE-YAML FILE
    # The local upload keeps the output: the runner clears a file's work outputs when it is done.
    printf 'version: 1\nname: bench\nstages:\n  - %s\n  - upload: { method: local, dir: "%s" }\n' \
        "$1" "$WORK/out" >"$WORK/pipeline.yml"
    rm -rf "$WORK/work" "$WORK/out"
    measure "$INGEST" run "$WORK/pipeline.yml" "$2" --concurrency 1 --quiet --no-journal --work-dir "$WORK/work"
    grep -q FAIL "$WORK/stdout.txt" && { cat "$WORK/stdout.txt" >&2; exit 1; } || true
}
duration() { ffprobe -v error -show_entries format=duration -of csv=p=0 "$1"; }

ONLY="${ONLY:-all}"
if [ "$ONLY" = all ] || [ "$ONLY" = video ]; then
echo "== video: 60 s 1080p30 → 720p H.264 CRF 23 veryfast + AAC =="
"${ff[@]}" -f lavfi -i "testsrc2=size=1920x1080:rate=30,noise=c0s=8:allf=t" \
    -f lavfi -i "sine=frequency=440:sample_rate=48000" -t 60 -ac 2 \
    -c:v libx264 -preset ultrafast -crf 20 -pix_fmt yuv420p -c:a aac -b:a 128k "$WORK/in/game.mov"
ls -l "$WORK/in/game.mov" | awk '{printf "input: %.1f MB\n", $5/1e6}'
measure "${ff[@]}" -i "$WORK/in/game.mov" -vf scale=1280:720 -c:v libx264 -preset veryfast -crf 23 \
    -c:a aac -b:a 128k -movflags +faststart "$WORK/ffmpeg.mp4"
ff_wall=$wall ff_rss=$rss ff_cpu=$cpu
ingest_run "video: { mode: transcode, max_width: 1280, max_height: 720, crf: 23, preset: veryfast }" "$WORK/in/game.mov"
in_wall=$wall in_rss=$rss in_cpu=$cpu
out=$(find "$WORK/out" -name '*.mp4')
printf '  ffmpeg  %6.2f s wall  %6.2f s CPU  %7d KiB peak RSS  %s bytes\n' "$ff_wall" "$ff_cpu" "$ff_rss" "$(stat -c %s "$WORK/ffmpeg.mp4")"
printf '  ingest  %6.2f s wall  %6.2f s CPU  %7d KiB peak RSS  %s bytes\n' "$in_wall" "$in_cpu" "$in_rss" "$(stat -c %s "$out")"
printf '  ratio ingest/ffmpeg: wall %.2fx, CPU %.2fx, peak RSS %.2fx\n' \
    "$(echo "$in_wall / $ff_wall" | bc -l)" "$(echo "$in_cpu / $ff_cpu" | bc -l)" "$(echo "$in_rss / $ff_rss" | bc -l)"

fi

if [ "$ONLY" = all ] || [ "$ONLY" = audio ]; then
echo "== audio: 10 min 48 kHz stereo WAV → AAC 64 kbit/s mono 44.1 kHz .m4a =="
"${ff[@]}" -f lavfi -i "sine=frequency=220:sample_rate=48000:duration=600" \
    -f lavfi -i "anoisesrc=color=pink:sample_rate=48000:duration=600:amplitude=0.1" \
    -filter_complex "[0][1]amerge=inputs=2" -c:a pcm_s16le "$WORK/in/visit.wav"
seconds=$(duration "$WORK/in/visit.wav")
measure "${ff[@]}" -i "$WORK/in/visit.wav" -c:a aac -b:a 64k -ac 1 -ar 44100 -movflags +faststart "$WORK/ffmpeg.m4a"
ff_wall=$wall ff_rss=$rss
ingest_run "audio: { bitrate: 64k, channels: 1, sample_rate: 44100 }" "$WORK/in/visit.wav"
in_wall=$wall in_rss=$rss
printf '  ffmpeg  %6.2f s wall  %6.0fx real time  %7d KiB peak RSS\n' "$ff_wall" "$(echo "$seconds / $ff_wall" | bc -l)" "$ff_rss"
printf '  ingest  %6.2f s wall  %6.0fx real time  %7d KiB peak RSS\n' "$in_wall" "$(echo "$seconds / $in_wall" | bc -l)" "$in_rss"

fi

if [ "$ONLY" = all ] || [ "$ONLY" = memory ]; then
echo "== memory: long low-res clip vs a ~20 MB one (video stage, 640×360 → H.264 veryfast, no resize) =="
"${ff[@]}" -f lavfi -i "testsrc2=size=640x360:rate=30" -f lavfi -i "sine=sample_rate=48000" -t $((LONG_MIN * 60)) \
    -c:v mpeg4 -q:v 3 -c:a pcm_s16le "$WORK/in/long.mov"
"${ff[@]}" -i "$WORK/in/long.mov" -t 45 -c copy "$WORK/in/short.mov"
ingest_run "video: { mode: transcode }" "$WORK/in/short.mov"
short_rss=$rss short_wall=$wall
ingest_run "video: { mode: transcode }" "$WORK/in/long.mov"
long_rss=$rss long_wall=$wall
measure "${ff[@]}" -i "$WORK/in/long.mov" -c:v libx264 -preset veryfast -crf 23 \
    -c:a aac -b:a 128k -movflags +faststart "$WORK/ffmpeg-long.mp4"
printf '  short %8.1f MB  %6.2f s  %7d KiB peak RSS\n' "$(echo "$(stat -c %s "$WORK/in/short.mov") / 1000000" | bc -l)" "$short_wall" "$short_rss"
printf '  long  %8.1f MB  %6.2f s  %7d KiB peak RSS   (ffmpeg on the long one: %d KiB, %.2f s)\n' \
    "$(echo "$(stat -c %s "$WORK/in/long.mov") / 1000000" | bc -l)" "$long_wall" "$long_rss" "$rss" "$wall"
printf '  peak RSS long - short: %d KiB\n' "$((long_rss - short_rss))"
fi
