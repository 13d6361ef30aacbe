#!/usr/bin/env bash
# `make deb`: writes ingest_<version>_<arch>.deb in the repository root.
#
# In it: the release binary (/usr/bin/ingest, the Swift runtime linked in with --static-swift-stdlib, so the package
# needs no Swift toolchain and dpkg-shlibdeps sees every shared library it does need), the systemd units of contrib/
# (ingest-watch.service for one pipeline, ingest-watch@NAME.service for several; ExecStart pointed at /usr/bin/ingest)
# with a sysusers.d entry for their `ingest` user, bash/zsh/fish completions (`ingest --generate-completion-script`),
# the man page swift-argument-parser's generate-manual writes from the command's help, docs/service.md (the units'
# documentation), a copyright file and a changelog. `Depends:` comes from dpkg-shlibdeps (libavformat59,
# libturbojpeg0, libcurl4…), not from a list kept by hand.
#
# The build goes to its own scratch folder, $DEB_SCRATCH (.build-deb): --static-swift-stdlib is passed to every
# compile, so sharing .build with `make build`/`make release` would rebuild everything each way.
# CONFIGURATION=debug packages a debug build (to try the packaging without a release build's minutes).
# DEB_MAINTAINER overrides the Maintainer, by default the author of the repository's first commit.
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
configuration=${CONFIGURATION:-release}
scratch=${DEB_SCRATCH:-.build-deb}
out="$scratch/package"
maintainer=${DEB_MAINTAINER:-$(git log --reverse --format='%an <%ae>' 2>/dev/null | sed -n 1p)}
[ -n "$maintainer" ] || { echo "make-deb.sh: no git history to name a maintainer: set DEB_MAINTAINER" >&2; exit 1; }
# Dates from the last commit, so that two builds of one commit give the same package.
commit_time=$(git log -1 --format=%ct 2>/dev/null || date +%s)

# /usr/share/doc/ingest: copyright (ingest's own terms and those of what --static-swift-stdlib and the Swift packages
# put into the binary) and changelog.gz (a native package's: this build's commit; the history is the git log).
write_doc_files() {  # write_doc_files DIR
    local dir=$1 commit toolchain_license
    commit=$(git rev-parse --short HEAD)
    toolchain_license="$(dirname "$(dirname "$(readlink -f "$(command -v "$swift")")")")/share/swift/LICENSE.txt"
    {
        printf 'ingest %s, built from commit %s of the ingest repository.\n\n' "$version" "$commit"
        printf 'Copyright %s %s.\n' "$(date -u -d "@$commit_time" +%Y)" "$maintainer"
        printf 'The repository carries no license file: ask the maintainers above for the terms of use.\n\n'
        printf 'Linked into /usr/bin/ingest:\n'
        printf ' - the Swift runtime, Foundation and Dispatch (swift.org): Apache-2.0 with the Runtime Library\n'
        printf '   Exception (below); Foundation carries ICU (swift-foundation-icu): Unicode License v3,\n'
        printf '   https://www.unicode.org/license.txt\n'
        printf ' - swift-argument-parser, swift-crypto (with BoringSSL), swift-asn1, swift-log, swift-metrics,\n'
        printf '   swift-atomics, swift-prometheus: Apache-2.0, /usr/share/common-licenses/Apache-2.0\n'
        printf ' - Yams (with libyaml): MIT (below)\n'
        [ ! -f "$toolchain_license" ] \
            || printf '\n%s\n' "$(sed -n '/Runtime Library Exception/,$p' "$toolchain_license")"
        [ ! -f "$scratch/checkouts/Yams/LICENSE" ] || printf '\nYams:\n%s\n' "$(cat "$scratch/checkouts/Yams/LICENSE")"
    } >"$dir/copyright"
    {
        printf 'ingest (%s) unstable; urgency=medium\n\n' "$version"
        printf '  * Built from commit %s of the ingest repository (its git log is the\n' "$commit"
        printf '    history of changes).\n\n'
        printf ' -- %s  %s\n' "$maintainer" "$(date -u -R -d "@$commit_time")"
    } | gzip -9n >"$dir/changelog.gz"
}

# DEBIAN/: control, md5sums and the maintainer scripts (the units' user; systemd told of the units, none enabled:
# each needs its pipeline in /etc/ingest first).
write_control() {  # write_control DIR
    local dir=$1
    mkdir -p "$dir"
    cat >"$dir/control" <<CONTROL
Package: ingest
Version: $version
Architecture: $arch
Maintainer: $maintainer
Section: video
Priority: optional
Depends: $depends
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Description: media ingest pipelines: validate, probe, transcode, upload, notify
 ingest takes folders of recordings and photos through a declarative YAML
 pipeline on the real C libraries (FFmpeg, libjpeg-turbo, libheif, libcurl,
 SQLite, libpq). "ingest watch" runs it as a service: ingest-watch.service
 for one pipeline, ingest-watch@NAME.service for several.
CONTROL
    (cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\n' | LC_ALL=C sort | xargs md5sum) >"$dir/md5sums"
    cat >"$dir/postinst" <<'POSTINST'
#!/bin/sh
set -e
# The units' user: systemd-sysusers where systemd is installed (it also reads /usr/lib/sysusers.d/ingest.conf at
# boot), useradd where it is not.
if [ "$1" = configure ]; then
    if command -v systemd-sysusers >/dev/null 2>&1; then
        systemd-sysusers ingest.conf
    elif ! getent passwd ingest >/dev/null; then
        useradd --system --user-group --home-dir /var/lib/ingest --no-create-home --shell /usr/sbin/nologin \
            --comment "ingest watch" ingest
    fi
fi
if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
fi
POSTINST
    cat >"$dir/postrm" <<'POSTRM'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
fi
POSTRM
    chmod 0755 "$dir/postinst" "$dir/postrm"
}

# -z now: relocations resolved at start, then read-only (lintian's hardening-no-bindnow).
"$swift" build -c "$configuration" --product ingest --static-swift-stdlib --scratch-path "$scratch" \
    -Xlinker -z -Xlinker now
binary="$("$swift" build -c "$configuration" --scratch-path "$scratch" --show-bin-path)/ingest"
version=$("$binary" --version | head -1 | awk '{print $NF}')
arch=$(dpkg --print-architecture)
# Laid out as dpkg-shlibdeps expects: the package's tree in debian/ingest beside debian/control.
root="$out/src/debian/ingest"
rm -rf "$out"
mkdir -p "$out"

# The man page: swift-argument-parser's generate-manual tool (what its generate-manual plugin runs) on this binary.
# The plugin itself would first build every product again without --static-swift-stdlib: a second full build.
"$swift" build --package-path "$scratch/checkouts/swift-argument-parser" --scratch-path "$scratch/argument-parser" \
    --product generate-manual >"$out/manual.log" 2>&1 || { cat "$out/manual.log" >&2; exit 1; }
mkdir -p "$out/man"
"$scratch/argument-parser/debug/generate-manual" "$binary" --output-directory "$out/man" \
    --date "$(date -u -d "@$commit_time" +%F)" --authors "$maintainer" >>"$out/manual.log" 2>&1 \
    || { cat "$out/manual.log" >&2; exit 1; }
[ -s "$out/man/ingest.1" ] || { echo "make-deb.sh: generate-manual wrote no ingest.1" >&2; exit 1; }

install -D -m 0755 "$binary" "$root/usr/bin/ingest"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/ingest"
for unit in contrib/*.service; do
    install -D -m 0644 "$unit" "$root/lib/systemd/system/$(basename "$unit")"
    sed -i 's|/usr/local/bin/ingest|/usr/bin/ingest|g' "$root/lib/systemd/system/$(basename "$unit")"
done
install -d "$root/usr/lib/sysusers.d"
printf 'u ingest - "ingest watch" /var/lib/ingest\n' >"$root/usr/lib/sysusers.d/ingest.conf"
install -d "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d" "$root/usr/share/man/man1" "$root/usr/share/doc/ingest"
# Sourced by bash-completion, not run: no #! line (lintian's bash-completion-with-hashbang).
"$binary" --generate-completion-script bash | sed '1{/^#!/d}' >"$root/usr/share/bash-completion/completions/ingest"
"$binary" --generate-completion-script zsh >"$root/usr/share/zsh/vendor-completions/_ingest"
"$binary" --generate-completion-script fish >"$root/usr/share/fish/vendor_completions.d/ingest.fish"
gzip -9n <"$out/man/ingest.1" >"$root/usr/share/man/man1/ingest.1.gz"
install -m 0644 docs/service.md "$root/usr/share/doc/ingest/service.md"
write_doc_files "$root/usr/share/doc/ingest"

# Yams compiles its own copy of libyaml into the binary (its CYaml target); Debian's libyaml cannot replace it.
install -d "$root/usr/share/lintian/overrides"
printf 'ingest: embedded-library libyaml [usr/bin/ingest]\n' >"$root/usr/share/lintian/overrides/ingest"

# dpkg-shlibdeps reads debian/control; it prints shlibs:Depends for the binary.
mkdir -p "$root/DEBIAN"
printf 'Source: ingest\n\nPackage: ingest\nArchitecture: any\n' >"$out/src/debian/control"
depends=$(cd "$out/src" && dpkg-shlibdeps -O debian/ingest/usr/bin/ingest | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "make-deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# The one dependency that is not a shared library: postinst's useradd where systemd-sysusers is not there.
depends="$depends, passwd"

write_control "$root/DEBIAN"
dpkg-deb --root-owner-group -Zxz --build "$root" "ingest_${version}_${arch}.deb" >/dev/null
echo "ingest_${version}_${arch}.deb: $(du -h "ingest_${version}_${arch}.deb" | cut -f1); Depends: $depends"
