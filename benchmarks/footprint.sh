#!/usr/bin/env bash
# The daemon's footprint: stripped size and memory of earshotd builds while prerecording and
# following a programme (the demo's catalog and "TV" file, CURVE on, as shipped), one build after
# the other on the same inputs. Prints a Markdown table for benchmarks/RESULTS.md ("Footprint").
#
#   benchmarks/footprint.sh NAME=PATH [NAME=PATH ...]
#   benchmarks/footprint.sh --root /var/tmp/earshot-trixie-amd64 packaged=.build-cross/amd64/bin/earshotd
#
#   --root DIR     run each daemon inside the root file system DIR (chroot; e.g. a Debian 13
#                  root with the runtime libraries installed), as the packaged binaries need
#   --seconds N    how long each daemon runs before it is measured (default 30)
#
# Per build: the stripped size of the file given; RSS, PSS and anonymous memory from
# /proc/PID/smaps_rollup after N seconds; and the working set: the pages referenced during the
# last 10 of those seconds (the referenced bits are cleared first, /proc/PID/clear_refs), i.e.
# what following the programme touches, as opposed to what start-up left mapped.
# Needs root (clear_refs, chroot), sox, and the host's earshot CLI (built if missing).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="/opt/swift/usr/bin:$PATH"
root="" seconds=30 builds=()
while [ $# -gt 0 ]; do
    case "$1" in
        --root) root="$(cd "${2:?--root needs a folder}" && pwd)"; shift 2 ;;
        --seconds) seconds="${2:?--seconds needs a number}"; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *=*) builds+=("$1"); shift ;;
        *) echo "footprint: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ ${#builds[@]} -gt 0 ] || { echo "footprint: name at least one build: NAME=PATH (see --help)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "footprint: run as root (clear_refs and chroot need it)" >&2; exit 1; }
[ "$seconds" -ge 15 ] || { echo "footprint: --seconds must be at least 15" >&2; exit 2; }

cli="$repo/.build/release/earshot"
[ -x "$cli" ] || (cd "$repo" && swift build -c release --product earshot >/dev/null)

# The demo's inputs, made once in a folder the daemons can reach (inside --root when given).
base="${root:-}/tmp/earshot-footprint.$$"
inside="/tmp/earshot-footprint.$$"    # the same folder as the daemon sees it
[ -n "$root" ] || inside="$base"
pid=""
cleanup() {
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    rm -rf "$base"
}
trap cleanup EXIT
mkdir -p "$base/inputs/catalogs"
(
    cd "$base/inputs"
    source "$repo/scripts/lib/demo-episodes.sh"
    demo_episodes >/dev/null
    "$cli" catalog create --quiet -o catalogs/demo.earcat intro.wav episode1.wav episode2.wav --media-items items.csv
    sox -q episode2.wav fast.wav speed 1.04
    sox -q -n -r 44100 noise.wav synth "$(soxi -D fast.wav)" whitenoise vol 0.05
    sox -q -m fast.wav noise.wav tv.wav
    "$cli" keygen -o client | tail -1 > clients.allow
)

kb() { awk -v k="$1:" '$1 == k { print $2 }' "$2"; }
mb() { awk -v v="$1" 'BEGIN { printf "%.1f", v / 1024 }'; }

echo "| build | stripped size (MB = 10⁶ bytes) | RSS (MiB) | PSS (MiB) | anonymous (MiB) | working set, last 10 s (MiB) |"
echo "|---|---|---|---|---|---|"
for build in "${builds[@]}"; do
    name="${build%%=*}" path="${build#*=}"
    [ -x "$path" ] || { echo "footprint: $path: not an executable" >&2; exit 1; }
    run="$base/$name"
    rm -rf "$run" && mkdir -p "$run/state"
    cp -r "$base/inputs/catalogs" "$run/state/" && cp "$base/inputs/clients.allow" "$run/state/"
    objcopy_tool="$(command -v llvm-objcopy || command -v objcopy)"
    "$objcopy_tool" --strip-all "$path" "$run/earshotd"
    # Written back before it runs: pages still being written back count as referenced.
    sync "$run/earshotd"
    size=$(stat -c %s "$run/earshotd")
    args=(--daemon.state_directory="$inside/$name/state" --audio.source=file --audio.file="$inside/inputs/tv.wav"
          --rpc.listen='["tcp://127.0.0.1:7490"]' --events.listen='["tcp://127.0.0.1:7491"]')
    if [ -n "$root" ]; then
        # A mount namespace of its own: /proc and /dev inside the root go when the daemon does.
        unshare -m --propagation private sh -c '
            mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" && shift && exec chroot "$@"' \
            sh "$root" "$root" "$inside/$name/earshotd" "${args[@]}" > "$run/log" 2>&1 &
    else
        "$run/earshotd" "${args[@]}" > "$run/log" 2>&1 &
    fi
    launcher=$!
    sleep 2
    # The daemon's pid: the launcher itself, or the chroot'ed process it exec'd into.
    pid=$launcher
    grep -q "listening on" "$run/log" || { cat "$run/log" >&2; echo "footprint: $name did not start" >&2; exit 1; }
    sleep $((seconds - 12))
    echo 1 > "/proc/$pid/clear_refs"
    sleep 10
    cp "/proc/$pid/smaps_rollup" "$run/rollup"
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=""
    grep -q "match: Episode 2" "$run/log" || echo "footprint: warning: $name never matched the programme" >&2
    echo "| $name | $(awk -v v="$size" 'BEGIN { printf "%.1f", v / 1e6 }') | $(mb "$(kb Rss "$run/rollup")") | $(mb "$(kb Pss "$run/rollup")") |" \
         "$(mb "$(kb Anonymous "$run/rollup")") | $(mb "$(kb Referenced "$run/rollup")") |"
done
