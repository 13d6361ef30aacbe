#!/usr/bin/env bash
# Regenerates Samples/: small real media for tests and the README demo
#   ingest validate pipelines/preflight.yml Samples/
# good/ must pass the preflight pipeline; bad/ must each fail with a clear rule.
#
# Needs the Debian packages ffmpeg (5.1), libimage-exiftool-perl and libheif-examples (heif-enc).
# Output is deterministic where the tools allow it: bitexact muxing/encoding, no inherited metadata, fixed
# timestamps, lavfi test sources instead of anything random, one encoder thread.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
good="$here/good"
bad="$here/bad"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for tool in ffmpeg exiftool heif-enc; do
    command -v "$tool" >/dev/null || { echo "make-samples: $tool is missing (apt-get install ffmpeg libimage-exiftool-perl libheif-examples)" >&2; exit 1; }
done

rm -rf "$good" "$bad"
mkdir -p "$good" "$bad"

ff=(ffmpeg -hide_banner -loglevel error -y)
exact=(-map_metadata -1 -fflags +bitexact -flags:v +bitexact -flags:a +bitexact)
# A 160×120 25 fps test pattern with a 440 Hz tone, H.264 (ultrafast, one thread) + AAC 64 kb/s.
av_clip() { # duration output [extra args...]
    local duration="$1" output="$2"
    shift 2
    "${ff[@]}" -f lavfi -i "testsrc=size=160x120:rate=25:duration=$duration" \
        -f lavfi -i "sine=frequency=440:duration=$duration:sample_rate=44100" \
        "${exact[@]}" -c:v libx264 -preset ultrafast -threads 1 -pix_fmt yuv420p -c:a aac -b:a 64k -shortest \
        "$@" "$output"
}

# A phone-style clip located in Stockholm, as an iPhone writes it: the mdta key
# com.apple.quicktime.location.ISO6709 (use_metadata_tags keeps the key verbatim).
av_clip 2 "$good/located.mov" -movflags use_metadata_tags \
    -metadata "com.apple.quicktime.location.ISO6709=+59.3293+018.0686+012.000/" \
    -metadata creation_time=2024-05-01T12:34:56.000000Z

# The same place in the older udta ©xyz atom (ffmpeg's `location` key), in degrees and decimal minutes:
# 59°19.758' N, 18°04.116' E.
av_clip 2 "$good/located-udta.mov" -metadata "location=+5919.758+01804.116/"

# No location, no creation time.
av_clip 2 "$good/plain.mov"

# Portrait: the encoder drops a `rotate` tag, so encode first and then stream-copy with it, which makes the
# mov muxer write a display matrix (ffprobe shows side_data rotation).
av_clip 1 "$work/landscape.mov"
"${ff[@]}" -i "$work/landscape.mov" -c copy -map_metadata -1 -fflags +bitexact -metadata:s:v:0 rotate=90 \
    "$good/portrait.mov"

# Voice memo: AAC mono 44.1 kHz, 1.5 s.
"${ff[@]}" -f lavfi -i "sine=frequency=440:duration=1.5:sample_rate=44100" -map_metadata -1 -fflags +bitexact \
    -flags:a +bitexact -ac 1 -ar 44100 -c:a aac -b:a 48k "$good/voice.m4a"

# Photo 320×240 with EXIF orientation 6 (rotate 90° CW), DateTimeOriginal and GPS (Stockholm, 12 m).
"${ff[@]}" -f lavfi -i testsrc=size=320x240 -frames:v 1 "${exact[@]}" -q:v 5 "$good/photo.jpg"
exiftool -q -overwrite_original -Orientation#=6 "-DateTimeOriginal=2024:05:01 12:34:56" \
    -GPSLatitude=59.3293 -GPSLatitudeRef=N -GPSLongitude=18.0686 -GPSLongitudeRef=E \
    -GPSAltitude=12 -GPSAltitudeRef=0 "$good/photo.jpg"

# A PNG without metadata.
"${ff[@]}" -f lavfi -i testsrc=size=200x150 -frames:v 1 "${exact[@]}" "$good/graphic.png"

# HEIC from the photo: heif-enc carries the JPEG's EXIF (orientation, GPS, date) into the HEIF Exif item.
heif-enc -q 40 -o "$good/photo.heic" "$good/photo.jpg" >/dev/null

# --- bad: each must fail preflight with a clear rule ---

# The first 4 KiB of a clip whose moov atom is at the end: FFmpeg says "moov atom not found" (rule corrupt).
head -c 4096 "$good/plain.mov" >"$bad/truncated.mov"

# Zero bytes (rule min_bytes).
: >"$bad/empty.mov"

# A JPEG renamed .mov (rule content).
cp "$good/photo.jpg" "$bad/photo-named.mov"

# An HLS playlist renamed .mov whose segments point at another local file and at a local port (rule content;
# the probe must never hand it to FFmpeg's HLS demuxer, which would open both).
cat >"$bad/playlist.mov" <<'M3U'
#EXTM3U
#EXT-X-VERSION:3
#EXT-X-TARGETDURATION:2
#EXT-X-MEDIA-SEQUENCE:0
#EXTINF:2.0,
../good/plain.mov
#EXTINF:2.0,
http://127.0.0.1:9/x.ts
#EXT-X-ENDLIST
M3U

du -sh "$here" | cut -f1 | xargs echo "make-samples: Samples/ is"
