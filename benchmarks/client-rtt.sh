#!/usr/bin/env bash
# The clients side by side against one earshotd on loopback with CURVE (the default security):
#   1. Match round trip (prepared session, one client, N sequential calls) from the C client
#      (clients/c/build/match-rtt), the Python client (clients/python, its venv) and the Swift
#      client (`earshot-bench _rtt`, from a release build: `swift build -c release --product
#      earshot-bench`; without one its figure is quoted from RESULTS.md's daemon section);
#   2. stripped sizes of libearshot-client.so and earshot-c;
#   3. RSS of `earshot-c watch` following every topic, sampled every 10 s for RSS_MINUTES
#      (default 10) while Match calls (5/s) drive match/ events and the daemon publishes
#      100 synthetic events/s (events.load_test_rate).
# Usage: EARSHOTD=… EARSHOT_CLI=… benchmarks/client-rtt.sh   (CALLS=300 RSS_MINUTES=10)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
: "${EARSHOTD:?EARSHOTD: path of earshotd}" "${EARSHOT_CLI:?EARSHOT_CLI: path of the earshot CLI}"
calls="${CALLS:-300}"
minutes="${RSS_MINUTES:-10}"
work="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
# Everything printed is also the section "clients" of benchmarks/RESULTS.md (written at the end).
exec > >(tee "$work/out.txt")

make -s -C clients/c all >/dev/null
c="clients/c/build"
source scripts/lib/synth-music.sh
(cd "$work" && synth_piece first 101 60 16000 && synth_piece second 202 60 16000)
"$EARSHOT_CLI" catalog create --quiet -o "$work/test.earcat" "$work/first.wav" "$work/second.wav"
mkdir -p "$work/state/catalogs"
cp "$work/test.earcat" "$work/state/catalogs/"
# Each NAME.pub holds its allow-list line, with the role given to keygen.
for name in operator viewer; do "$EARSHOT_CLI" keygen -o "$work/$name" --role "$name" >/dev/null; done
grep -hv '^#' "$work/operator.pub" "$work/viewer.pub" > "$work/state/clients.allow"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rpc="tcp://127.0.0.1:$(port)"; events="tcp://127.0.0.1:$(port)"
"$EARSHOTD" --daemon.state_directory="$work/state" --audio.source=file --audio.file="$work/second.wav" \
    --audio.loop=true --session.prepare_on_start=true --session.follow=true --events.load_test_rate=100 \
    --rpc.listen="[\"$rpc\"]" --events.listen="[\"$events\"]" > "$work/earshotd.log" 2>&1 &
daemon=$!
pids+=("$daemon")
keys=("$work/state/server.public" "$work/operator.key")
for _ in $(seq 100); do
    [ -f "$work/state/server.public" ] && "$c/earshot-c" ping --server "$rpc" --server-key "${keys[0]}" --key "${keys[1]}" --timeout 1 >/dev/null 2>&1 && break
    sleep 0.2
done
sleep 4 # ≥ 3 s heard: Match answers from the prerecorded window

echo "== conditions"
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git describe --always --dirty 2>/dev/null || echo ?); $(nproc) cores, $(uname -m);" \
     "earshotd $("$EARSHOTD" --version 2>/dev/null || echo ?) with CURVE on loopback, catalog of 2 references (36 s)," \
     "file source looping, session prepared; $calls sequential Match calls per client after 10 warm-up calls"
echo
c_line="$("$c/match-rtt" "$rpc" "${keys[@]}" "$calls" 10)"
venv="${EARSHOT_PY_VENV:-clients/python/.venv}"
clients/python/run-tests.sh --version >/dev/null 2>&1 || { echo "client-rtt: the Python venv could not be made" >&2; exit 1; }
py_line="$("$venv/bin/python" - "$rpc" "${keys[@]}" "$calls" <<'PY'
import sys, time
from earshot_client import Client, pb
rpc, server_key, client_key, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with Client(rpc, timeout=10.0, server_key=server_key, client_key=client_key) as client:
    client.prepare()
    for _ in range(10):
        client.match()
    ms, matched = [], 0
    for _ in range(calls):
        t0 = time.perf_counter()
        result = client.match()
        ms.append((time.perf_counter() - t0) * 1000)
        matched += result.outcome == pb.MATCH_OUTCOME_MATCH
ms.sort()
rank = lambda p: ms[max(0, min(len(ms) - 1, -(-len(ms) * p // 100) - 1))]
print(f"calls {calls} matched {matched} errors 0 p50_ms {rank(50):.3f} p99_ms {rank(99):.3f} max_ms {ms[-1]:.3f}")
PY
)"
# The Swift client (RpcClient), against the same daemon: `earshot-bench _rtt` (a release build,
# as benchmarks/run.sh makes it), else the figure of RESULTS.md's daemon section, quoted.
bench="${EARSHOT_BENCH:-.build/release/earshot-bench}"
if [ -x "$bench" ]; then
    read -r s50 s99 < <("$bench" _rtt --server "$rpc" --server-key "${keys[0]}" --key "${keys[1]}" --calls "$calls")
    swift_line="p50_ms $s50 p99_ms $s99"
    swift_label="Swift (RpcClient, earshot-bench _rtt)"
else
    swift_line="$(grep -m1 'Match` round trip with CURVE' benchmarks/RESULTS.md | sed -E 's/.*\| p50 ([0-9.]+) ms, p99 ([0-9.]+) ms.*/p50_ms \1 p99_ms \2/')"
    swift_label="Swift (RpcClient; quoted from RESULTS.md, earshot-bench daemon: no release earshot-bench here)"
fi
field() { echo "$1" | sed -E "s/.*$2 ([0-9.]+).*/\1/"; }
echo "== Match round trip, CURVE, loopback"
echo "| client | calls | matched | p50 | p99 | max |"
echo "|---|---|---|---|---|---|"
echo "| C (libearshot-client, match-rtt) | $(field "$c_line" calls) | $(field "$c_line" matched) | $(field "$c_line" p50_ms) ms | $(field "$c_line" p99_ms) ms | $(field "$c_line" max_ms) ms |"
echo "| Python (earshot_client) | $(field "$py_line" calls) | $(field "$py_line" matched) | $(field "$py_line" p50_ms) ms | $(field "$py_line" p99_ms) ms | $(field "$py_line" max_ms) ms |"
echo "| $swift_label | $calls | — | $(field "$swift_line" p50_ms) ms | $(field "$swift_line" p99_ms) ms | — |"
echo

strip -o "$work/lib.so" "$c/libearshot-client.so.0.1.0"
strip -o "$work/earshot-c" "$c/earshot-c"
echo "== sizes (stripped)"
echo "| file | bytes |"
echo "|---|---|"
echo "| libearshot-client.so (beyond libzmq and libprotobuf-c) | $(stat -c %s "$work/lib.so") |"
echo "| earshot-c (static libearshot-client inside) | $(stat -c %s "$work/earshot-c") |"
echo

# RSS of `earshot-c watch` while events flow.
"$c/earshot-c" watch --server "$rpc" --events "$events" --server-key "${keys[0]}" --key "$work/viewer.key" \
    --duration $((minutes * 60 + 5)) > "$work/watch.out" 2> "$work/watch.err" &
watcher=$!
pids+=("$watcher")
"$c/match-rtt" "$rpc" "${keys[@]}" $((minutes * 60 * 5 + 100)) 0 200 > "$work/driver.out" 2>&1 &
pids+=("$!")
samples=()
for i in $(seq 0 $((minutes * 6))); do
    [ "$i" -eq 0 ] || sleep 10
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$watcher/status" 2>/dev/null || echo 0)
    samples+=("$rss")
done
lines=$(wc -l < "$work/watch.out")
echo "== RSS of earshot-c watch over $minutes min (every 10 s, kB): ${samples[*]}"
printf '%s\n' "${samples[@]}" | sort -n | awk -v n="${#samples[@]}" -v first="${samples[0]}" -v last="${samples[-1]}" -v lines="$lines" \
    'NR==1{min=$1} {max=$1} END {printf "first %d kB, last %d kB, min %d kB, max %d kB over %d samples; %d updates printed\n", first, last, min, max, n, lines}'

# The section of RESULTS.md: what was printed, headings for the "==" lines.
python3 - "$work/out.txt" benchmarks/RESULTS.md <<'PY'
import sys
out, results = sys.argv[1], sys.argv[2]
lines = [l.rstrip("\n") for l in open(out) if not l.startswith("/")]
body = ["## Clients side by side (C, Python, Swift)", "",
        "_Written by `benchmarks/client-rtt.sh` (see its header for what each number is)._", ""]
for l in lines:
    if l.startswith("== "):
        body += ["", "### " + l[3:].split(":")[0], ""] + ([l[3:].split(":", 1)[1].strip(), ""] if ":" in l[3:] else [])
    elif l.strip():
        body.append(l)
section = "<!-- begin:clients -->\n" + "\n".join(body).replace("\n\n\n", "\n\n").strip() + "\n<!-- end:clients -->\n"
text = open(results).read()
if "<!-- begin:clients -->" in text:
    a = text.index("<!-- begin:clients -->"); b = text.index("<!-- end:clients -->") + len("<!-- end:clients -->\n")
    text = text[:a] + section + text[b:]
else:
    text = text.rstrip("\n") + "\n\n" + section
open(results, "w").write(text)
PY
echo "client-rtt: wrote the section \"clients\" of benchmarks/RESULTS.md"
