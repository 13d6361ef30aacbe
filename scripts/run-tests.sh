#!/usr/bin/env bash
# `make test`'s runner: builds the tests and runs the test bundle `swift test` runs, as two processes at once, each
# with part of the suites; every test runs exactly once (the first process takes the suites FIRST names, the second
# skips them).
#
# Why two processes: Swift Testing runs a process's tests on Swift's cooperative thread pool, one thread per core,
# and a test holds its thread while it waits for `ingest`, ffmpeg or a server. On CI's 2 cores one process runs two
# tests at a time and leaves the CPU idle while they wait; two processes run four.
#
# FIRST: the suites that start SeaweedFS or PostgreSQL (each test process starts its own, so they stay in one), then
# tus, HTTP/2, watch, no-leak and journal runs, so that both processes take about as long. One suite alone, as before:
# `swift test --filter SuiteName`.
set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
# As `make test`: the project's Swift warnings are errors (the Makefile says why); SWIFT_BUILD_FLAGS= turns that off.
read -r -a flags <<<"${SWIFT_BUILD_FLAGS--Xswiftc -warnings-as-errors}"
"$swift" build --build-tests "${flags[@]}" || exit $?
bundle="$("$swift" build --show-bin-path)/ingestPackageTests.xctest"

first='S3|Seed|Upload|Postgres|VerifiedCall|VerboseS3|URLEncoding|Tus|HTTP2|NoLeak|Watch|Journal'
# A test's id is Module.Suite/test: the suites are named in any of the test targets (one per layer, Package.swift).
FIRST="^\\w+Tests\\.(${first})\\w*/"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# XCTest's tests, as `swift test` runs them first (the package has none today; any added later still run).
"$bundle" >/dev/null 2>&1 || "$bundle"
xctest=$?
"$bundle" --testing-library swift-testing --filter "$FIRST" >"$log" 2>&1 &
pid=$!
"$bundle" --testing-library swift-testing --skip "$FIRST"
second=$?
wait "$pid"
first=$?
echo "--- run alongside in a second process: the suites with SeaweedFS or PostgreSQL, tus, HTTP/2, watch, journal ---"
cat "$log"
[ "$xctest" = 0 ] && [ "$first" = 0 ] && [ "$second" = 0 ]
