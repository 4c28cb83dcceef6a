#!/usr/bin/env bash
# The browser dashboard following a fleet: N earshotd (release, CURVE on, as shipped) on loopback,
# each playing the demo's episode 2 with a cue every 4 s, one `earshot remote dashboard
# --servers-file` following them all, and headless Chromium showing its page. Measures how long an
# event takes from the daemon to the page's DOM (the page records it for every report that
# carries a newer event; read through the DevTools protocol) and the dashboard's memory.
# Prints a Markdown section for benchmarks/RESULTS.md ("Dashboard: following a fleet").
#
#   benchmarks/dashboard.sh [--boxes N] [--seconds S]    (defaults: 10 boxes, 60 s)
#
# Needs chromium and python3 with websocket-client (installed into a venv here); builds release.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="/opt/swift/usr/bin:$PATH"
boxes=10 seconds=60
while [ $# -gt 0 ]; do
    case "$1" in
        --boxes) boxes="${2:?--boxes needs a number}"; shift 2 ;;
        --seconds) seconds="${2:?--seconds needs a number}"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "dashboard: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
command -v chromium >/dev/null || { echo "dashboard: chromium is missing (scripts/setup.sh installs it)" >&2; exit 1; }
(cd "$repo" && swift build -c release --product earshotd >/dev/null && swift build -c release --product earshot >/dev/null)
bin="$repo/.build/release"

work="$(mktemp -d /tmp/earshot-dashboard.XXXXXX)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

# The DevTools client, installed before anything is measured.
python3 -m venv venv >/dev/null && venv/bin/pip install -q websocket-client >/dev/null

# The programme: the demo's episodes, a cue every 4 s on episode 2 (reference 2, 27 s), played looping.
source "$repo/scripts/lib/demo-episodes.sh"
demo_episodes >/dev/null
"$bin/earshot" catalog create -o demo.earcat intro.wav episode1.wav episode2.wav --media-items items.csv -q >/dev/null
{ echo "id,start,duration"; for s in $(seq 3 4 23); do echo "c$s,$s,2"; done; } > cues.csv
"$bin/earshot" catalog cues import -c demo.earcat --reference 2 cues.csv >/dev/null
"$bin/earshot" keygen -o client | tail -1 > allow.txt

# N boxes on ports 7600, 7602, … (events on the port + 1).
: > fleet.txt
for ((k = 0; k < boxes; k++)); do
    port=$((7600 + 2 * k))
    mkdir -p "box$k/catalogs"
    cp demo.earcat "box$k/catalogs/"
    cp allow.txt "box$k/clients.allow"
    "$bin/earshotd" --daemon.state_directory="$work/box$k" --audio.source=file --audio.file="$work/episode2.wav" --audio.loop=true \
        --rpc.listen="tcp://127.0.0.1:$port" --events.listen="tcp://127.0.0.1:$((port + 1))" --daemon.name="box $k" \
        > "box$k.log" 2>&1 &
    pids+=($!)
done
for ((k = 0; k < boxes; k++)); do
    for _ in $(seq 100); do [ -s "box$k/server.public" ] && break; sleep 0.1; done
    echo "tcp://127.0.0.1:$((7600 + 2 * k)) $work/box$k/server.public" >> fleet.txt
done

"$bin/earshot" remote dashboard --servers-file fleet.txt --key client.key --listen 127.0.0.1:0 > dashboard.out 2>dashboard.err &
dashboard_pid=$!
pids+=($dashboard_pid)
for _ in $(seq 100); do grep -q '^dashboard: ' dashboard.out 2>/dev/null && break; sleep 0.1; done
url="$(sed -n 's/^dashboard: //p' dashboard.out)"
[ -n "$url" ] || { echo "dashboard: it did not start: $(cat dashboard.err)" >&2; exit 1; }

chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/chromium" \
    --remote-debugging-port=9333 "$url" >/dev/null 2>&1 &
pids+=($!)

sleep "$seconds"
rss_kib=$(awk '/^VmRSS/ { print $2 }' "/proc/$dashboard_pid/status")
hwm_kib=$(awk '/^VmHWM/ { print $2 }' "/proc/$dashboard_pid/status")
cpu_ticks=$(awk '{ print $14 + $15 }' "/proc/$dashboard_pid/stat")
hz=$(getconf CLK_TCK)

venv/bin/python - "$boxes" "$seconds" "$rss_kib" "$hwm_kib" "$cpu_ticks" "$hz" "$(git -C "$repo" rev-parse --short HEAD)" <<'PY'
import json, sys, urllib.request, websocket, datetime
boxes, seconds, rss, hwm, ticks, hz, commit = sys.argv[1:]
pages = json.load(urllib.request.urlopen("http://127.0.0.1:9333/json"))
page = next(p for p in pages if p.get("type") == "page")
ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=10)
ws.send(json.dumps({"id": 1, "method": "Runtime.evaluate",
                    "params": {"expression": "JSON.stringify({l: window.earshotLatencies, c: document.querySelectorAll('.fleet-line[data-connection=connected]').length})",
                               "returnByValue": True}}))
while True:
    reply = json.loads(ws.recv())
    if reply.get("id") == 1: break
value = json.loads(reply["result"]["result"]["value"])
lat = sorted(value["l"])
def pct(p): return lat[min(len(lat) - 1, int(p / 100 * len(lat)))] if lat else float("nan")
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
print("## Dashboard: following a fleet\n")
print(f"_Run {now}, `benchmarks/dashboard.sh --boxes {boxes} --seconds {seconds}` on {commit} (release builds)._\n")
print(f"{boxes} earshotd on loopback (CURVE on), each playing the demo's episode 2 with a cue every 4 s; one `earshot remote dashboard --servers-file` following them all; headless Chromium showing the page. "
      f"Latency is from the daemon's publishing of an event (its envelope's time) to the page's DOM holding the report that carries it, for every report the page drew; all on one machine and clock.\n")
print("| measure | value | target |")
print("|---|---|---|")
print(f"| boxes shown connected | {value['c']} of {boxes} | all |")
print(f"| events drawn | {len(lat)} | |")
print(f"| event to DOM p50 / p95 / max (ms) | {pct(50)} / {pct(95)} / {lat[-1] if lat else 'n/a'} | p95 ≤ 100 ms {'PASS' if lat and pct(95) <= 100 else '**FAIL**'} |")
print(f"| dashboard RSS now / peak (MiB) | {int(rss) / 1024:.1f} / {int(hwm) / 1024:.1f} | |")
print(f"| dashboard CPU over the run | {int(ticks) / int(hz):.1f} s in {seconds} s | |")
PY
