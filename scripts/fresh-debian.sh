#!/usr/bin/env bash
# First contact on a stock machine: the README's two commands in a minimal Debian 12 with only the Swift toolchain.
#
#   sudo bash scripts/fresh-debian.sh [root|user|deb ...]   (default: root user)
#
# Builds a minimal Debian 12 root once (`debootstrap --variant=minbase bookworm`, kept in $STOCK_DIR/base), then for
# each mode runs in a fresh copy of it:
# - root: as root, `git clone` of this repository's HEAD, `make demo`, `make test` (what CI does).
# - user: the same as a non-root user `dev` who has sudo (apt-get goes through sudo).
# - deb:  no Swift toolchain; `apt-get install ./ingest_*.deb` (made beforehand by `make deb`, found in the repository
#   root or given as $DEB), then `ingest --version`, `ingest validate pipelines/preflight.yml Samples/` and
#   `systemd-analyze verify` of the unit (systemd installed after the package, to see what the package alone pulls).
# "Only the Swift toolchain added" means: /opt/swift bound read-only into the root, plus the packages swift.org lists
# for Debian 12 (binutils-gold, gcc, git, libcurl4-openssl-dev, libedit-dev, libicu-dev, libncurses-dev,
# libpython3-dev, libsqlite3-dev, libstdc++-12-dev, libxml2-dev, pkg-config, tzdata, uuid-dev), and make and sudo.
# Swift packages: where this machine keeps its copies of GitHub's packages (/opt/swift-packages, read through git's
# url.insteadOf as on the host), they are bound and git in the root is told the same; elsewhere git reaches GitHub.
#
# Not part of `make test` (it takes the better part of an hour). Each step's time goes to $STOCK_DIR/<mode>/times
# and to the output; docs/development.md keeps the figures. Everything mounted is unmounted on the way out, failed or
# not; processes left in a root (PostgreSQL, SeaweedFS…) are ended first.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "fresh-debian.sh: run as root (debootstrap, chroot, mount)" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
STOCK_DIR=${STOCK_DIR:-/var/tmp/ingest-stock}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
SWIFT_DIR=${SWIFT_DIR:-$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")}
PACKAGES_DIR=${PACKAGES_DIR:-/opt/swift-packages}
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(root user)
SWIFT_PREREQUISITES="binutils-gold gcc git libcurl4-openssl-dev libedit-dev libicu-dev libncurses-dev libpython3-dev \
    libsqlite3-dev libstdc++-12-dev libxml2-dev pkg-config tzdata uuid-dev make sudo ca-certificates"

mounted=()
current_root=""
cleanup() {
    local status=$?
    if [ -n "$current_root" ]; then
        # Processes whose root is this root (servers the tests started and left behind): ended by their ids.
        for proc in /proc/[0-9]*; do
            [ "$(readlink "$proc/root" 2>/dev/null)" = "$current_root" ] && kill -9 "${proc#/proc/}" 2>/dev/null
        done
        sleep 1
    fi
    # Every mount under the root, deepest first, as /proc/mounts has them: add_swift's are made in a step's
    # background subshell, so $mounted (this shell's) does not list them.
    local target
    for target in $( (printf '%s\n' "${mounted[@]}"; [ -z "$current_root" ] \
        || awk -v root="$current_root/" 'index($2, root) == 1 {print $2}' /proc/mounts) | sort -ru); do
        grep -q " $target " /proc/mounts || continue
        umount "$target" 2>/dev/null || umount -l "$target" 2>/dev/null \
            || echo "fresh-debian.sh: could not unmount $target" >&2
    done
    mounted=()
    return $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# rm -rf of a root with something still bound in it (/dev, /opt/swift-packages) would delete the host's files.
refuse_if_mounted() {
    if grep -q " $(readlink -m "$1")/" /proc/mounts; then
        echo "fresh-debian.sh: something is still mounted under $1 (another run?); not removing it" >&2
        exit 1
    fi
}

mount_into() {  # mount_into TARGET MOUNT-ARGUMENTS...
    local target=$1
    shift
    mkdir -p "$target"
    mount "$@" "$target"
    mounted+=("$target")
}

# A step, timed: its seconds go to the mode's `times` file and the output.
step() {  # step NAME COMMAND...
    local name=$1 start end
    shift
    start=$(date +%s)
    echo "=== $name"
    # In the background, waited for: a TERM or Ctrl-C then reaches the trap at once, not after the step.
    "$@" &
    if wait $!; then
        end=$(date +%s)
        echo "$name: $((end - start)) s" | tee -a "$STOCK_DIR/$mode/times"
    else
        end=$(date +%s)
        echo "$name: FAILED after $((end - start)) s" | tee -a "$STOCK_DIR/$mode/times"
        return 1
    fi
}

in_root() { chroot "$current_root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/opt/swift/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin bash -euo pipefail -c "cd; $1"; }

make_base() {
    [ -e "$STOCK_DIR/base/.complete" ] && return 0
    rm -rf "$STOCK_DIR/base"
    mkdir -p "$STOCK_DIR"
    debootstrap --variant=minbase bookworm "$STOCK_DIR/base" "$MIRROR"
    # As an installed Debian 12 has them: the point release's updates and the security archive.
    printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s-security bookworm-security main\n' \
        "$MIRROR" "$MIRROR" "$MIRROR" >"$STOCK_DIR/base/etc/apt/sources.list"
    touch "$STOCK_DIR/base/.complete"
}

# A fresh copy of the base, with /proc, /sys, /dev (and a tmpfs /dev/shm), the host's resolv.conf, and the clone's
# source: a bundle of this repository's HEAD.
enter_fresh_root() {
    current_root="$STOCK_DIR/$mode/root"
    refuse_if_mounted "$STOCK_DIR/$mode"
    rm -rf "$STOCK_DIR/$mode"
    mkdir -p "$STOCK_DIR/$mode"
    cp -a "$STOCK_DIR/base" "$current_root"
    rm -f "$current_root/.complete"
    cp /etc/resolv.conf "$current_root/etc/resolv.conf"
    printf '127.0.0.1 localhost\n127.0.1.1 %s\n::1 localhost ip6-localhost ip6-loopback\n' "$(hostname)" \
        >"$current_root/etc/hosts"
    mount_into "$current_root/proc" -t proc proc
    mount_into "$current_root/sys" -t sysfs sys
    mount_into "$current_root/dev" --bind /dev
    mount_into "$current_root/dev/pts" --bind /dev/pts
    mount_into "$current_root/dev/shm" -t tmpfs -o mode=1777 shm
    chmod 1777 "$current_root/tmp"
    git -C "$repo" bundle create "$current_root/tmp/ingest.bundle" HEAD 2>/dev/null
}

add_swift() {
    mount_into "$current_root/opt/swift" --bind "$SWIFT_DIR" || return 1
    mount -o remount,bind,ro "$current_root/opt/swift" || return 1
    if [ -d "$PACKAGES_DIR" ]; then
        mount_into "$current_root$PACKAGES_DIR" --bind "$PACKAGES_DIR" || return 1
        mount -o remount,bind,ro "$current_root$PACKAGES_DIR" || return 1
        # The copies belong to the host's root: git would call them dubious for `dev` without safe.directory.
        printf '[url "%s/"]\n\tinsteadOf = https://github.com/\n[safe]\n\tdirectory = *\n' "$PACKAGES_DIR" \
            >"$current_root/etc/gitconfig"
    fi
    in_root "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        $SWIFT_PREREQUISITES >/dev/null && swift --version" || return 1
    trust_host_authorities
}

# Where the host reaches PyPI through a TLS proxy whose authority it added to its own trust (certificates in
# /usr/local/share/ca-certificates, as in this workplace), the root trusts it too, and pip reads the system's store
# (its own bundle would not have it). On a machine that reaches PyPI directly there is nothing to copy.
trust_host_authorities() {
    compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null || return 0
    cp /usr/local/share/ca-certificates/*.crt "$current_root/usr/local/share/ca-certificates/"
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$current_root/etc/pip.conf"
    in_root "update-ca-certificates >/dev/null"
}

# The README's commands, in a login shell of root or of dev (a user with sudo) in its home; the clone is what a user
# gets.
readme_commands() {  # readme_commands root|dev
    local run="git -c advice.detachedHead=false clone -q /tmp/ingest.bundle ingest && cd ingest && git log --oneline -1"
    local dpkg_before
    dpkg_before=$(in_root "dpkg-query -W -f='\${Package}\n' | wc -l")
    if [ "$1" = dev ]; then
        in_root "useradd -m -s /bin/bash dev && echo 'dev ALL=(ALL) NOPASSWD: ALL' >/etc/sudoers.d/dev"
        as_user() { chroot "$current_root" /usr/bin/env -i TERM=dumb LANG=C.UTF-8 /usr/sbin/runuser -l dev -c \
            "export PATH=/opt/swift/usr/bin:\$PATH; set -euo pipefail; $1"; }
    else
        as_user() { in_root "$1"; }
    fi
    step "clone" as_user "$run" && step "make demo" as_user "cd ingest && make demo" \
        && step "make test" as_user "cd ingest && make test" || return 1
    echo "apt packages: $dpkg_before before the README's commands, $(in_root "dpkg-query -W -f='\${Package}\n' \
        | wc -l") after" | tee -a "$STOCK_DIR/$mode/times"
}

# The package alone: what apt pulls for it is listed, then systemd (for systemd-analyze) comes after.
install_deb() {
    local deb=${DEB:-$(ls -t "$repo"/ingest_*_amd64.deb 2>/dev/null | head -1)}
    [ -f "$deb" ] || { echo "no ingest_*_amd64.deb: run \`make deb\` first, or set DEB" >&2; return 1; }
    cp "$deb" "$current_root/tmp/"
    mkdir -p "$current_root/root/ingest"
    git -C "$repo" archive HEAD pipelines Samples | tar -x -C "$current_root/root/ingest"
    in_root "apt-get update -qq && dpkg-query -W -f='\${Package}\n' | sort >/tmp/before"
    step "apt-get install ./$(basename "$deb")" in_root "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends /tmp/$(basename "$deb") >/dev/null" || return 1
    in_root "dpkg-query -W -f='\${Package}\n' | sort | comm -13 /tmp/before - | tr '\n' ' ' \
        | sed 's/^/installed with it: /'; echo; dpkg-query -W -f='Depends: \${Depends}\n' ingest" \
        | tee -a "$STOCK_DIR/$mode/times"
    in_root "cd /root/ingest && ingest --version && { ingest validate pipelines/preflight.yml Samples/ \
        >/tmp/validate.out; status=\$?; echo \"validate: exit code \$status (1: the bad samples)\"; \
        tail -2 /tmp/validate.out; [ \$status -le 1 ]; } \
        && dpkg -L ingest | grep -v '/\.$' | grep -E 'bin/|man|completion|systemd|doc'" || return 1
    step "apt-get install systemd" in_root "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends systemd >/dev/null" || return 1
    # Each unit file, and the template once more by an instance's name (as `systemctl enable ingest-watch@NAME`
    # would load it, from the unit path).
    in_root "getent passwd ingest; status=0; \
        for unit in \$(dpkg -L ingest | grep '^/lib/systemd/system/.*\.service$'); do \
            names=\$unit; \
            case \$unit in *@.service) names=\"\$unit \$(basename \$unit .service)example.service\" ;; esac; \
            for name in \$names; do \
                if systemd-analyze verify \$name; then echo \"systemd-analyze verify \$name: ok\"; else status=1; fi; \
            done; \
        done; exit \$status"
}

step_mode() {
    echo "##### $mode (in $STOCK_DIR/$mode/root)"
    enter_fresh_root
    case $mode in
        root) step "swift toolchain" add_swift && readme_commands root ;;
        user) step "swift toolchain" add_swift && readme_commands dev ;;
        deb) install_deb ;;
        *) echo "unknown mode $mode (root, user, deb)" >&2; return 2 ;;
    esac
}

make_base
failed=()
for mode in "${modes[@]}"; do
    step_mode || failed+=("$mode")
    cleanup
    current_root=""
    # A failed mode's root stays for a look (its mounts are gone); a passed one is removed (a build is gigabytes).
    [[ " ${failed[*]} " == *" $mode "* ]] || { refuse_if_mounted "$STOCK_DIR/$mode"; rm -rf "$STOCK_DIR/$mode/root"; }
done
for mode in "${modes[@]}"; do echo "--- $mode"; cat "$STOCK_DIR/$mode/times" 2>/dev/null; done
[ ${#failed[@]} = 0 ] || { echo "failed: ${failed[*]}" >&2; exit 1; }
echo "passed: ${modes[*]}"
