#!/usr/bin/env bash
# How the HTML report scales: a batch of FILES files (10,000 by default: hard links to Samples/, every kind of file
# the contact sheet previews, and the four broken samples) written by `ingest validate --report x.html`, with the
# writer's peak RSS beside the same run writing JSON Lines (memory must not grow with the batch: the cards are
# spooled), then opened in headless Chromium. The page records performance.now() when its script has run (all
# cards parsed) and at the load event; the peer is a 100-file report of the same samples opened the same way, and
# Chromium's own start (about:blank) is printed for scale. Not a test: nothing here asserts a time.
# Usage: bash Benchmarks/html-open.sh [WORKDIR]   (FILES=10000; INGEST=path skips the release build)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${INGEST:-}" ]; then
    swift build -c release --product ingest >/dev/null
    INGEST="$(swift build -c release --show-bin-path)/ingest"
fi
WORK="${1:-$(mktemp -d /tmp/ingest-html-bench.XXXXXX)}"
trap 'rm -rf "$WORK"' EXIT
FILES="${FILES:-10000}"
CHROMIUM=(chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$WORK/profile")

# FILES hard links spread over folders of 100: good samples round-robin, the four bad ones once each.
make_batch() { # count folder
    local count="$1" dir="$2" i=0
    local samples=(Samples/good/*)
    mkdir -p "$dir"
    for bad in Samples/bad/*; do ln -f "$bad" "$dir/$(basename "$bad")"; done
    while [ $i -lt $((count - 4)) ]; do
        local sample="${samples[$((i % ${#samples[@]}))]}" sub="$dir/$((i / 100))"
        mkdir -p "$sub"
        ln -f "$sample" "$sub/$i-$(basename "$sample")"
        i=$((i + 1))
    done
}

# Runs a command under /usr/bin/time; sets wall and rss (KiB).
measure() {
    /usr/bin/time -f '%e %M' -o "$WORK/time.txt" "$@" >/dev/null 2>&1 || true
    read -r wall rss < <(tail -1 "$WORK/time.txt")
}

# Opens a page; prints "scripted loaded wall": the page's own performance.now() marks and the process's seconds.
open_page() {
    local start end dom
    start=$(date +%s.%N)
    dom=$("${CHROMIUM[@]}" --dump-dom "file://$1" 2>/dev/null | head -c 4000)
    end=$(date +%s.%N)
    local scripted loaded
    scripted=$(grep -o 'data-scripted="[0-9]*"' <<<"$dom" | grep -o '[0-9]*' || echo "?")
    loaded=$(grep -o 'data-loaded="[0-9]*"' <<<"$dom" | grep -o '[0-9]*' || echo "?")
    echo "$scripted $loaded $(echo "$end - $start" | bc -l)"
}

make_batch "$FILES" "$WORK/big"
make_batch 100 "$WORK/small"
measure "$INGEST" validate pipelines/preflight.yml "$WORK/big" --report "$WORK/big.jsonl" -q --work-dir "$WORK/w"
jsonl_wall=$wall jsonl_rss=$rss
measure "$INGEST" validate pipelines/preflight.yml "$WORK/big" --report "$WORK/big.html" -q --work-dir "$WORK/w"
html_wall=$wall html_rss=$rss
measure "$INGEST" validate pipelines/preflight.yml "$WORK/small" --report "$WORK/small.html" -q --work-dir "$WORK/w"
small_rss=$rss
printf 'write %d files: html %.1f s, peak RSS %d MiB | jsonl %.1f s, peak RSS %d MiB | 100-file html peak RSS %d MiB\n' \
    "$FILES" "$html_wall" "$((html_rss / 1024))" "$jsonl_wall" "$((jsonl_rss / 1024))" "$((small_rss / 1024))"
printf 'page: %d files, %.1f MiB (%d KiB per file)\n' "$FILES" "$(echo "$(stat -c %s "$WORK/big.html") / 1048576" | bc -l)" \
    "$(($(stat -c %s "$WORK/big.html") / 1024 / FILES))"

"${CHROMIUM[@]}" --dump-dom about:blank >/dev/null 2>&1 # warm the profile and the disk cache
blank_start=$(date +%s.%N)
"${CHROMIUM[@]}" --dump-dom about:blank >/dev/null 2>&1
blank=$(echo "$(date +%s.%N) - $blank_start" | bc -l)
for round in 1 2 3; do
    read -r big_scripted big_loaded big_wall < <(open_page "$WORK/big.html")
    read -r small_scripted small_loaded small_wall < <(open_page "$WORK/small.html")
    printf 'round %d: %d-file page: script ran at %s ms, loaded at %s ms (chromium process %.2f s) | 100-file page: %s ms, %s ms (%.2f s) | about:blank process %.2f s\n' \
        "$round" "$FILES" "$big_scripted" "$big_loaded" "$big_wall" "$small_scripted" "$small_loaded" "$small_wall" "$blank"
done
