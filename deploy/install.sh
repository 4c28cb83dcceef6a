#!/usr/bin/env bash
# Installs earshotd on Debian / Raspberry Pi OS: dependencies, a release build, the binaries, the
# configuration (kept if already there), the state folder, a system user in group audio and the
# systemd unit. Safe to run again: it changes only what is missing or out of date.
#
#   sudo deploy/install.sh            # install, enable and (re)start earshotd
#   sudo deploy/install.sh --no-start # install and enable, do not start
#
# For packaging and tests:
#   deploy/install.sh --root DIR --skip-build --bin-dir .build/debug --no-systemctl
#     --root DIR      install under DIR instead of / (no user is created, nothing is started)
#     --skip-build    use binaries already built, from --bin-dir (default: the release build)
#     --no-systemctl  do not call systemctl
set -euo pipefail

root=""
build=1
bin_dir=""
systemctl_ok=1
start=1
while [ $# -gt 0 ]; do
    case "$1" in
        --root) root="${2:?--root needs a folder}"; shift 2 ;;
        --skip-build) build=0; shift ;;
        --bin-dir) bin_dir="${2:?--bin-dir needs a folder}"; shift 2 ;;
        --no-systemctl) systemctl_ok=0; shift ;;
        --no-start) start=0; shift ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "install: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
say() { echo "install: $*"; }

if [ -z "$root" ] && [ "$(id -u)" -ne 0 ]; then
    echo "install: run as root (sudo deploy/install.sh), or use --root DIR for a staging install" >&2
    exit 1
fi

if [ "$build" -eq 1 ]; then
    say "Debian packages"
    "$src/scripts/setup.sh"
    export PATH="/opt/swift/usr/bin:$PATH"
    command -v swift >/dev/null || { echo "install: swift not found (expected in /opt/swift/usr/bin)" >&2; exit 1; }
    say "building release (a few minutes on a Raspberry Pi)"
    (cd "$src" && swift build -c release --product earshotd && swift build -c release --product earshot)
    bin_dir="$(cd "$src" && swift build -c release --show-bin-path)"
fi
[ -n "$bin_dir" ] || bin_dir="$src/.build/release"
for b in earshotd earshot; do
    [ -x "$bin_dir/$b" ] || { echo "install: $bin_dir/$b is missing; build first or drop --skip-build" >&2; exit 1; }
done

# install FILE DEST MODE: copy only when different (keeps mtimes of unchanged files).
put() {
    local from="$1" to="$2" mode="$3"
    mkdir -p "$(dirname "$to")"
    if [ -f "$to" ] && cmp -s "$from" "$to"; then return 0; fi
    install -m "$mode" "$from" "$to.new.$$" && mv -f "$to.new.$$" "$to"
    say "wrote $to"
}

put "$bin_dir/earshotd" "$root/usr/local/bin/earshotd" 0755
put "$bin_dir/earshot" "$root/usr/local/bin/earshot" 0755
put "$src/deploy/earshotd.service" "$root/etc/systemd/system/earshotd.service" 0644
put "$src/deploy/asoundrc.sample" "$root/usr/local/share/doc/earshot/asoundrc.sample" 0644
put "$src/deploy/earshotd.toml" "$root/usr/local/share/doc/earshot/earshotd.toml" 0644
if [ -f "$root/etc/earshot/earshotd.toml" ]; then
    say "kept $root/etc/earshot/earshotd.toml (the shipped one is in /usr/local/share/doc/earshot)"
else
    put "$src/deploy/earshotd.toml" "$root/etc/earshot/earshotd.toml" 0644
fi
mkdir -p "$root/var/lib/earshot/catalogs"

if [ -z "$root" ]; then
    if ! id earshot >/dev/null 2>&1; then
        useradd --system --home-dir /var/lib/earshot --no-create-home --shell /usr/sbin/nologin --user-group earshot
        say "created user earshot"
    fi
    usermod -a -G audio earshot
    chown -R earshot:earshot /var/lib/earshot
    chmod 0750 /var/lib/earshot
fi

if [ -z "$root" ] && [ "$systemctl_ok" -eq 1 ] && command -v systemctl >/dev/null; then
    systemctl daemon-reload
    systemctl enable earshotd.service >/dev/null
    if [ "$start" -eq 1 ]; then
        # It serves without a catalog too (matches answer an error until one is installed).
        systemctl restart earshotd.service
        say "earshotd (re)started: journalctl -u earshotd -f"
        ls /var/lib/earshot/catalogs/*.earcat >/dev/null 2>&1 ||
            say "no catalog yet: push one (earshot remote catalog push) or copy a .earcat into /var/lib/earshot/catalogs"
    fi
fi
say "done"
