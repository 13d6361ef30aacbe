#!/usr/bin/env bash
# `make deb`: writes ingest_<version>_<arch>.deb in the repository root.
#
# In it: the release binary (/usr/bin/ingest, the Swift runtime linked in with --static-swift-stdlib, so the package
# needs no Swift toolchain and dpkg-shlibdeps sees every shared library it does need), the systemd unit(s) of
# contrib/ (ExecStart pointed at /usr/bin/ingest) with a sysusers.d entry for their `ingest` user, bash/zsh/fish
# completions (`ingest --generate-completion-script`), the man page that swift-argument-parser's generate-manual
# plugin writes from the command's help, and docs/service.md, which the unit names as its documentation.
# `Depends:` comes from dpkg-shlibdeps (libavformat59, libturbojpeg0, libcurl4…), not from a list kept by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
# release; debug packages the debug build (to try the packaging itself without a release build's minutes).
configuration=${CONFIGURATION:-release}
out=.build/deb

# The man page first: the plugin builds every product (not statically), then runs generate-manual on `ingest`.
rm -rf "$out"
mkdir -p "$out"
find .build/plugins -path '*GenerateManual*' -name '*.1' -delete 2>/dev/null || true
"$swift" package plugin generate-manual --configuration "$configuration" --date "$(date -u -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)" \
    +%F)" >"$out/manual.log" 2>&1 || { cat "$out/manual.log" >&2; exit 1; }
manual=$(find .build/plugins -path '*GenerateManual*' -name ingest.1 | head -1)
[ -n "$manual" ] || { echo "make-deb.sh: generate-manual wrote no ingest.1" >&2; cat "$out/manual.log" >&2; exit 1; }

"$swift" build -c "$configuration" --product ingest --static-swift-stdlib
binary="$("$swift" build -c "$configuration" --show-bin-path)/ingest"
version=$("$binary" --version | head -1 | awk '{print $NF}')
arch=$(dpkg --print-architecture)
root="$out/ingest_${version}_${arch}"

install -D -m 0755 "$binary" "$root/usr/bin/ingest"
strip --strip-unneeded "$root/usr/bin/ingest"
for unit in contrib/*.service; do
    install -D -m 0644 "$unit" "$root/lib/systemd/system/$(basename "$unit")"
    sed -i 's|/usr/local/bin/ingest|/usr/bin/ingest|g' "$root/lib/systemd/system/$(basename "$unit")"
done
install -d "$root/usr/lib/sysusers.d"
printf 'u ingest - "ingest watch" /var/lib/ingest\n' >"$root/usr/lib/sysusers.d/ingest.conf"
install -d "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d" "$root/usr/share/man/man1" "$root/usr/share/doc/ingest"
"$binary" --generate-completion-script bash >"$root/usr/share/bash-completion/completions/ingest"
"$binary" --generate-completion-script zsh >"$root/usr/share/zsh/vendor-completions/_ingest"
"$binary" --generate-completion-script fish >"$root/usr/share/fish/vendor_completions.d/ingest.fish"
gzip -9n <"$manual" >"$root/usr/share/man/man1/ingest.1.gz"
install -m 0644 docs/service.md "$root/usr/share/doc/ingest/service.md"

# dpkg-shlibdeps reads a debian/control; it prints shlibs:Depends for the binary.
mkdir -p "$out/src/debian"
printf 'Source: ingest\n\nPackage: ingest\nArchitecture: any\n' >"$out/src/debian/control"
depends=$(cd "$out/src" && dpkg-shlibdeps -O "$OLDPWD/$root/usr/bin/ingest" | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "make-deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

mkdir -p "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<EOF
Package: ingest
Version: $version
Architecture: $arch
Maintainer: ingest developers <ingest@localhost>
Section: video
Priority: optional
Depends: $depends
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Description: media ingest pipelines: validate, probe, transcode, upload, notify
 ingest takes folders of recordings and photos through a declarative YAML
 pipeline on the real C libraries (FFmpeg, libjpeg-turbo, libheif, libcurl,
 SQLite, libpq). `ingest watch` runs it as a service (ingest-watch.service).
EOF
# The unit's user, where systemd is there to make it; the unit is not enabled (it needs /etc/ingest/pipeline.yml).
cat >"$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ] && command -v systemd-sysusers >/dev/null 2>&1; then
    systemd-sysusers ingest.conf
fi
if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
EOF
chmod 0755 "$root/DEBIAN/postinst"
dpkg-deb --root-owner-group -Zxz --build "$root" "ingest_${version}_${arch}.deb" >/dev/null
echo "ingest_${version}_${arch}.deb: $(du -h "ingest_${version}_${arch}.deb" | cut -f1); Depends: $depends"
