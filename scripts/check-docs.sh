#!/usr/bin/env bash
# Builds the DocC reference of the `Ingest` product (Sources/Ingest/Ingest.docc and the DocC comments of the public
# API) with swift-docc-plugin, and fails on any warning DocC gives (a link to a symbol that is not there, a
# parameter documented that the function does not have …). `make docs` runs it; .ci/run runs it beside `make test`
# (it builds the targets and extracts their symbol graphs, too slow to add to `make test`). SWIFT_BUILD_FLAGS are
# make's, so that build is the one `make test` reuses. Arguments go to the plugin (`--output-path DIR`). The
# archive: .build/plugins/Swift-DocC/outputs/Ingest.doccarchive.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
started=$(date +%s)
status=0
flags=${SWIFT_BUILD_FLAGS-"-Xswiftc -warnings-as-errors"}
# shellcheck disable=SC2086 # the flags are separate words
"${SWIFT:-swift}" package $flags generate-documentation --target Ingest "$@" >"$log" 2>&1 || status=$?
grep -E "warning:|error:" "$log" || true
warnings=$(grep -c "warning:" "$log" || true)
echo "docs: generate-documentation exited $status with $warnings warning(s) in $(($(date +%s) - started)) s"
if [ "$status" -ne 0 ]; then tail -n 40 "$log"; fi
[ "$status" -eq 0 ] && [ "$warnings" -eq 0 ]
