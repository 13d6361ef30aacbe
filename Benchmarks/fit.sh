#!/usr/bin/env bash
# `video: { fit: { max_bytes } }` beside ffmpeg's own two passes at the same target, in the same run (not a test:
# nothing here asserts a time or a quality).
#
# For every clip (SIZES × DURATIONS: testsrc2 plus temporal noise, so it does not compress to nothing, made as a
# phone would store it: H.264 at a high rate with AAC) and every limit in LIMITS:
#   ingest  one `video` stage, `fit: { max_bytes: LIMIT }`, preset PRESET (x264's fast first pass, as libx264's
#           `fastfirstpass` default; rc-lookahead=10, the stage's bound);
#   ffmpeg  `-pass 1 -an -f null` then `-pass 2`, the same preset, x264-params and picture size, at the video bit
#           rate ingest chose (from its report), audio copied as ingest copies it: the hand-made command.
# Each prints: output bytes and whether they are within the limit, SSIM and PSNR of the output against the source
# (ffmpeg's ssim/psnr filters, the source scaled to the output's size with the same bicubic scaler for both), wall
# and CPU time, peak RSS. The summary counts outputs over the limit on each side and the ratios.
#
# Knobs (environment):
#   SIZES="1080p 4k"          picture sizes (1080p = 1920×1080, 4k = 3840×2160, 720p)
#   DURATIONS="60 180 600"    clip lengths in seconds (the issue's matrix: 1, 3 and 10 minutes)
#   LIMITS="100MB 25MB"       fit limits (ingest's size syntax: MB = 10^6 bytes)
#   FPS=30                    frame rate of the clips
#   PRESET=veryfast           x264 preset on both sides
#   PEERS=yes                 no: ingest alone, without the quality measure (peak RSS against duration)
#   CLIPS=dir                 keep the generated clips there and reuse them (default: made in WORKDIR, removed)
#   INGEST=path               an ingest binary to use instead of building a release one
# Each cell runs ingest and, right after it, ffmpeg at the rate ingest chose, so a load that changes during the run
# hits both alike; every cell prints the load average when it starts. A cell that cannot fit (video.cannot_fit)
# prints ingest's message and has no peer (there is no rate to give ffmpeg).
# Usage: bash Benchmarks/fit.sh [WORKDIR]      (WORKDIR defaults to a temp dir, removed afterwards)
#   The full matrix: bash Benchmarks/fit.sh    (hours on a 2-core machine: 4K 10-minute clips, two passes per side)
#   A subset:        SIZES=1080p DURATIONS=20 LIMITS="32MB 8MB" bash Benchmarks/fit.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES="${SIZES:-1080p 4k}"
DURATIONS="${DURATIONS:-60 180 600}"
LIMITS="${LIMITS:-100MB 25MB}"
FPS="${FPS:-30}"
PRESET="${PRESET:-veryfast}"
PEERS="${PEERS:-yes}"
if [ -z "${INGEST:-}" ]; then
    swift build -c release --product ingest >/dev/null
    INGEST="$(swift build -c release --show-bin-path)/ingest"
fi
WORK="${1:-$(mktemp -d /tmp/ingest-fit-bench.XXXXXX)}"
trap 'rm -rf "$WORK"' EXIT
ff=(ffmpeg -nostdin -hide_banner -loglevel error -y)
CLIPS="${CLIPS:-$WORK/in}"
mkdir -p "$WORK"
mkdir -p "$CLIPS"

# Runs a command under /usr/bin/time; sets wall (s), cpu (user + sys s) and rss (peak resident KiB). A failure ends
# the script unless MAY_FAIL is set (ingest's run of a file that cannot fit).
measure() {
    /usr/bin/time -f '%e %M %U %S' -o "$WORK/time.txt" "$@" >"$WORK/stdout.txt" 2>"$WORK/stderr.txt" || {
        [ -n "${MAY_FAIL:-}" ] || { cat "$WORK/stdout.txt" "$WORK/stderr.txt" >&2; exit 1; }
    }
    # The last line: /usr/bin/time puts "Command exited with non-zero status N" before it when the command failed.
    read -r wall rss user sys < <(tail -n 1 "$WORK/time.txt")
    cpu=$(echo "$user + $sys" | bc -l)
}
bytes_of() { # "100MB" → 100000000 (MB/GB = 10^n, MiB = 2^20)
    python3 -c "import re,sys; m=re.fullmatch(r'([0-9.]+)\s*(MiB|MB|GB|KB|)', sys.argv[1]); \
f={'':1,'KB':1e3,'MB':1e6,'GB':1e9,'MiB':1<<20}[m.group(2)]; print(int(float(m.group(1))*f))" "$1"
}
dimensions() { case "$1" in 4k) echo 3840x2160 ;; 1080p) echo 1920x1080 ;; 720p) echo 1280x720 ;; *) echo "$1" ;; esac; }
# SSIM (All) and PSNR (average) of OUTPUT against SOURCE scaled to OUTPUT's size, in one decode of each (ssim passes
# its main input on to psnr unchanged).
quality() { # OUTPUT SOURCE WIDTH HEIGHT
    local log
    log=$(ffmpeg -nostdin -hide_banner -i "$1" -i "$2" \
        -lavfi "[1:v]scale=$3:$4:flags=bicubic,split[r1][r2];[0:v][r1]ssim[m];[m][r2]psnr" -f null - 2>&1)
    ssim=$(echo "$log" | sed -n 's/.*SSIM .* All:\([0-9.]*\).*/\1/p' | tail -1)
    psnr=$(echo "$log" | sed -n 's/.*PSNR .* average:\([0-9.inf]*\).*/\1/p' | tail -1)
}
# Reads one number from the fit fact of ingest's JSON Lines report.
fit_fact() { python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; \
print([x for x in r if 'facts' in x][0]['facts']['video']['fit'][sys.argv[2]])" "$WORK/report.jsonl" "$1"; }

over_ingest=0 over_ffmpeg=0 cells=0
row='%-6s %5s %6s | %-7s %10s %5s %7s %7s %8s %8s %9s'
printf "$row\n" size sec limit side bytes under SSIM PSNR wall cpu RSS_KiB
# Prints every failure of ingest's report: rule and message.
failures() { python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; \
print('; '.join(f['rule'] + ': ' + f['message'] for x in r for f in x.get('failures', [])))" "$WORK/report.jsonl"; }
for size in $SIZES; do
    dims=$(dimensions "$size")
    for seconds in $DURATIONS; do
        source="$CLIPS/$size-$seconds-$FPS.mov"
        [ -s "$source" ] || nice -n 5 "${ff[@]}" -f lavfi -i "testsrc2=size=$dims:rate=$FPS,noise=c0s=12:allf=t" \
            -f lavfi -i "sine=frequency=440:sample_rate=48000" -t "$seconds" -ac 2 \
            -c:v libx264 -preset ultrafast -crf 16 -pix_fmt yuv420p -c:a aac -b:a 128k "$source"
        for limit in $LIMITS; do
            max=$(bytes_of "$limit")
            cells=$((cells + 1))
            echo "-- $size ${seconds} s to $limit, load average $(cut -d' ' -f1-3 /proc/loadavg)"
            # ingest
            printf 'version: 1\nname: fit-bench\nstages:\n  - video: { preset: %s, fit: { max_bytes: %s } }\n  - upload: { method: local, dir: "%s" }\n' \
                "$PRESET" "$max" "$WORK/out" >"$WORK/pipeline.yml"
            rm -rf "$WORK/work" "$WORK/out"
            MAY_FAIL=1 measure "$INGEST" run "$WORK/pipeline.yml" "$source" --concurrency 1 --quiet --no-journal \
                --work-dir "$WORK/work" --report "$WORK/report.jsonl"
            out=$(find "$WORK/out" -name '*.mp4' 2>/dev/null | head -1 || true)  # no out/: nothing was sent
            if [ -z "$out" ]; then
                printf "$row   %s\n" "$size" "$seconds" "$limit" ingest - - - - "$wall" "$cpu" "$rss" "$(failures)"
                continue
            fi
            rate=$(fit_fact video_bit_rate) width=$(fit_fact width) height=$(fit_fact height) step=$(fit_fact step)
            attempts=$(python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; \
print(len([x for x in r if 'facts' in x][0]['facts']['video']['fit']['attempts']))" "$WORK/report.jsonl")
            bytes=$(stat -c %s "$out")
            under=yes; [ "$bytes" -le "$max" ] || { under=NO; over_ingest=$((over_ingest + 1)); }
            in_wall=$wall in_cpu=$cpu in_rss=$rss in_bytes=$bytes in_under=$under
            if [ "$PEERS" = no ]; then
                printf "$row   (%s, %s bit/s, %s attempt(s))\n" "$size" "$seconds" "$limit" ingest "$bytes" "$under" - - \
                    "$wall" "$cpu" "$rss" "$step" "$rate" "$attempts"
                continue
            fi
            # ffmpeg: the same target, two passes by hand, right after ingest.
            common=(-i "$source" -s "${width}x${height}" -c:v libx264 -preset "$PRESET" -x264-params rc-lookahead=10
                -b:v "$rate" -passlogfile "$WORK/ffpass")
            {
                echo 'set -e'
                printf '%q ' "${ff[@]}" "${common[@]}" -pass 1 -an -f null /dev/null
                echo
                printf '%q ' "${ff[@]}" "${common[@]}" -pass 2 -c:a copy -movflags +faststart "$WORK/ffmpeg.mp4"
                echo
            } >"$WORK/ffmpeg2pass.sh"
            measure bash "$WORK/ffmpeg2pass.sh"
            ff_wall=$wall ff_cpu=$cpu ff_rss=$rss
            quality "$out" "$source" "$width" "$height"
            in_ssim=$ssim in_psnr=$psnr
            printf "$row   (%s, %s bit/s, %s attempt(s))\n" "$size" "$seconds" "$limit" ingest "$in_bytes" "$in_under" \
                "$ssim" "$psnr" "$in_wall" "$in_cpu" "$in_rss" "$step" "$rate" "$attempts"
            quality "$WORK/ffmpeg.mp4" "$source" "$width" "$height"
            bytes=$(stat -c %s "$WORK/ffmpeg.mp4")
            under=yes; [ "$bytes" -le "$max" ] || { under=NO; over_ffmpeg=$((over_ffmpeg + 1)); }
            printf "$row\n" "$size" "$seconds" "$limit" ffmpeg "$bytes" "$under" "$ssim" "$psnr" "$ff_wall" "$ff_cpu" \
                "$ff_rss"
            printf '%26s ingest/ffmpeg wall %.2fx, CPU %.2fx, PSNR %+.3f dB, SSIM %+.5f\n' "" \
                "$(echo "$in_wall / $ff_wall" | bc -l)" "$(echo "$in_cpu / $ff_cpu" | bc -l)" \
                "$(echo "$in_psnr - $psnr" | bc -l)" "$(echo "$in_ssim - $ssim" | bc -l)"
            rm -f "$WORK"/ffpass* "$WORK/ffmpeg.mp4"
        done
        [ "$CLIPS" != "$WORK/in" ] || rm -f "$source"
    done
done
echo "cells: $cells; over the limit: ingest $over_ingest, ffmpeg $over_ffmpeg"
