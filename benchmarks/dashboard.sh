#!/usr/bin/env bash
# The browser dashboard following a fleet: N earshotd (release, CURVE on, as shipped) on loopback,
# each playing the demo's episode 2 with a cue every 4 s, one `earshot remote dashboard
# --servers-file` following them all, and headless Chromium showing its page with every box's
# view open. Measures how long an event takes from the daemon to the page's DOM (the page records
# it for every report that carries a newer event; read through the DevTools protocol), how long
# a cue's STARTED event takes to turn its mark to started (the events as the Python client hears
# them from each box, against the page's own record of each mark it drew), and the dashboard's
# memory.
# Prints a Markdown section for benchmarks/RESULTS.md ("Dashboard: following a fleet").
#
#   benchmarks/dashboard.sh [--boxes N] [--seconds S]    (defaults: 10 boxes, 60 s)
#
# Needs chromium and python3 with websocket-client (installed into a venv here) and the Python
# client's venv (made by clients/python/run-tests.sh); builds release.
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

# Every box's cue events, as a client of its own hears them: (box, cue, published ms) per STARTED.
(cd "$repo" && clients/python/run-tests.sh -q tests/test_follower.py >/dev/null)
"$repo/clients/python/.venv/bin/python" - "$work" "$boxes" "$((seconds + 10))" > started.jsonl <<'PY' &
import json, sys, time
from earshot_client import Subscriber, Topics, pb
work, boxes, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
subscribers = [(f"127.0.0.1:{7600 + 2 * k}",
                Subscriber(f"tcp://127.0.0.1:{7601 + 2 * k}", Topics.CUE, server_key=f"{work}/box{k}/server.public",
                           client_key=f"{work}/client.key")) for k in range(boxes)]
end = time.monotonic() + seconds
while time.monotonic() < end:
    for box, subscriber in subscribers:
        while (event := subscriber.recv(timeout=0)) is not None:
            if event.WhichOneof("body") == "cue" and event.cue.kind == pb.CueEvent.KIND_STARTED:
                print(json.dumps({"box": box, "cue": event.cue.cue.id, "atMs": event.ts_unix_ms}), flush=True)
    time.sleep(0.005)
PY
pids+=($!)

"$bin/earshot" remote dashboard --servers-file fleet.txt --key client.key --listen 127.0.0.1:0 > dashboard.out 2>dashboard.err &
dashboard_pid=$!
pids+=($dashboard_pid)
for _ in $(seq 100); do grep -q '^dashboard: ' dashboard.out 2>/dev/null && break; sleep 0.1; done
url="$(sed -n 's/^dashboard: //p' dashboard.out)"
[ -n "$url" ] || { echo "dashboard: it did not start: $(cat dashboard.err)" >&2; exit 1; }

chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/chromium" \
    --remote-debugging-port=9333 "$url" >/dev/null 2>&1 &
pids+=($!)

# Every box's view open, as an operator watching them all: their cue marks are in the DOM.
venv/bin/python - "$boxes" <<'PY'
import json, sys, time, urllib.request, websocket
boxes = int(sys.argv[1])
for _ in range(100):
    try:
        page = next(p for p in json.load(urllib.request.urlopen("http://127.0.0.1:9333/json")) if p.get("type") == "page")
        break
    except Exception:
        time.sleep(0.1)
ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=10)
for attempt in range(100):
    ws.send(json.dumps({"id": attempt, "method": "Runtime.evaluate", "params": {"returnByValue": True, "expression":
        "typeof report === 'undefined' ? 0 : (report.boxes.length === %d && (report.boxes.forEach(b => open.add(b.name)), render(), true)"
        " ? document.querySelectorAll('section.box').length : 0)" % boxes}}))
    while (reply := json.loads(ws.recv())).get("id") != attempt: pass
    if reply["result"]["result"].get("value") == boxes: break
    time.sleep(0.1)
else:
    sys.exit("dashboard: the page never listed every box")
PY
live_ms=$(date +%s%3N)

sleep "$seconds"
rss_kib=$(awk '/^VmRSS/ { print $2 }' "/proc/$dashboard_pid/status")
hwm_kib=$(awk '/^VmHWM/ { print $2 }' "/proc/$dashboard_pid/status")
cpu_ticks=$(awk '{ print $14 + $15 }' "/proc/$dashboard_pid/stat")
hz=$(getconf CLK_TCK)

venv/bin/python - "$boxes" "$seconds" "$rss_kib" "$hwm_kib" "$cpu_ticks" "$hz" "$(git -C "$repo" rev-parse --short HEAD)" "$live_ms" <<'PY'
import json, sys, urllib.request, websocket, datetime
boxes, seconds, rss, hwm, ticks, hz, commit, live_ms = sys.argv[1:]
pages = json.load(urllib.request.urlopen("http://127.0.0.1:9333/json"))
page = next(p for p in pages if p.get("type") == "page")
ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=10)
ws.send(json.dumps({"id": 1, "method": "Runtime.evaluate",
                    "params": {"expression": "JSON.stringify({now: Date.now(), l: window.earshotLatencies, m: window.earshotCueChanges, v: document.querySelectorAll('section.box').length, c: document.querySelectorAll('.fleet-line[data-connection=connected]').length})",
                               "returnByValue": True}}))
while True:
    reply = json.loads(ws.recv())
    if reply.get("id") == 1: break
value = json.loads(reply["result"]["result"]["value"])
lat = sorted(value["l"])
def pct(values, p): return values[min(len(values) - 1, int(p / 100 * len(values)))] if values else float("nan")
# Each STARTED published once the views were open (and early enough to be drawn before the end),
# against the first time the page drew that cue's mark started after it and before the cue's next
# STARTED (the programme loops): none in between is a mark not drawn.
changes = [c for c in value["m"] if c["status"] == "started"]
started = [json.loads(line) for line in open("started.jsonl") if line.endswith("\n")]
read_at = value["now"]
cue_lat, undrawn = [], 0
for s in started:
    if s["atMs"] <= int(live_ms) or s["atMs"] > read_at - 2000: continue
    following = [x["atMs"] for x in started if x["box"] == s["box"] and x["cue"] == s["cue"] and x["atMs"] > s["atMs"]]
    until = min(following, default=float("inf"))
    drawn = [c["atMs"] for c in changes if c["box"] == s["box"] and c["cue"] == s["cue"] and s["atMs"] <= c["atMs"] < until]
    if drawn: cue_lat.append(min(drawn) - s["atMs"])
    else: undrawn += 1
cue_lat.sort()
# Episode 2 (27 s) holds 6 cues: fewer than 80 % of those the run should see means cues went unheard.
expected = int(boxes) * (int(seconds) - 3) * 6 / 27
cues_ok = cue_lat and not undrawn and cue_lat[-1] <= 1000 and len(cue_lat) >= 0.8 * expected
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
print("## Dashboard: following a fleet\n")
print(f"_Run {now}, `benchmarks/dashboard.sh --boxes {boxes} --seconds {seconds}` on {commit} (release builds)._\n")
print(f"{boxes} earshotd on loopback (CURVE on), each playing the demo's episode 2 with a cue every 4 s; one `earshot remote dashboard --servers-file` following them all; headless Chromium showing the page with every box's view open. "
      f"Event latency is from the daemon's publishing of an event (its envelope's time) to the page's DOM holding the report that carries it, for every report the page drew. "
      f"Cue latency is from each STARTED event's publishing (as the Python client heard it from the box) to the page drawing that cue's mark started; all on one machine and clock.\n")
print("| measure | value | target |")
print("|---|---|---|")
print(f"| boxes shown connected, views open | {value['c']} of {boxes}, {value['v']} | all{'' if int(value['c']) == int(boxes) == int(value['v']) else ' **FAIL**'} |")
print(f"| events drawn | {len(lat)} | |")
print(f"| event to DOM p50 / p95 / max (ms) | {pct(lat, 50)} / {pct(lat, 95)} / {lat[-1] if lat else 'n/a'} | p95 ≤ 100 ms {'PASS' if lat and pct(lat, 95) <= 100 else '**FAIL**'} |")
print(f"| cue STARTED to mark drawn started: cues, p50 / p95 / max (ms) | {len(cue_lat)} drawn, {undrawn} not; {pct(cue_lat, 50)} / {pct(cue_lat, 95)} / {cue_lat[-1] if cue_lat else 'n/a'} | each ≤ 1,000 ms {'PASS' if cues_ok else '**FAIL**'} |")
print(f"| dashboard RSS now / peak (MiB) | {int(rss) / 1024:.1f} / {int(hwm) / 1024:.1f} | |")
print(f"| dashboard CPU over the run | {int(ticks) / int(hz):.1f} s in {seconds} s | |")
PY
