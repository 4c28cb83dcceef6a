#!/usr/bin/env bash
# Checks finding a box on the LAN end to end, with multicast kept off the real network: two
# network namespaces joined by a veth pair, each with its own D-Bus system bus and avahi-daemon
# (in a private mount namespace, so their /run does not meet the host's). earshotd runs in one,
# the CLI in the other, and the script shows:
#   discover     `earshot remote discover --json` lists the box with its announced server key,
#                and the Python client's discover() (python-zeroconf) finds it alike
#   by name      `earshot remote match --server NAME` matches the programme, with that key, and
#                `earshot remote dashboard` follows a fleet file that names the box
#   rename       a second box of the same name is announced as "NAME #2"
#   avahi gone   a box whose avahi-daemon stops says so, and is announced again when it is back
#   stop         a stopped box is withdrawn from the LAN, and a box whose avahi-daemon hangs
#                still stops at once
#
#   sudo scripts/discovery-check.sh           # about a minute after the build
# Needs root (network and mount namespaces). Installs what is missing (avahi-daemon, dbus,
# iproute2, sox). Set EARSHOT_BIN to a folder holding earshotd and earshot to skip the build
# (under sudo the build, and the Python client's venv, are otherwise made as root).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
export PATH="/opt/swift/usr/bin:$PATH"
[ "$(id -u)" -eq 0 ] || { echo "discovery-check: needs root (network namespaces): sudo $0" >&2; exit 2; }

scripts/setup.sh >/dev/null
extra=()
for p in avahi-daemon dbus iproute2 util-linux sox; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || extra+=("$p")
done
if [ ${#extra[@]} -gt 0 ]; then
  echo "discovery-check: installing ${extra[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${extra[@]}" >/dev/null ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${extra[@]}" >/dev/null; }
fi
# The Python client's virtual environment, with python-zeroconf (its test extra).
clients/python/run-tests.sh -q tests/test_discovery.py >/dev/null
python="$repo/clients/python/.venv/bin/python"
if [ -z "${EARSHOT_BIN:-}" ]; then
  swift build --product earshotd 2>&1 | tail -1
  swift build --product earshot 2>&1 | tail -1
  EARSHOT_BIN="$(swift build --show-bin-path)"
fi
bin="$EARSHOT_BIN"

work="$(mktemp -d)"
tag="es$$"
holders=()
daemons=()
cleanup() {
  for p in "${daemons[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${daemons[@]}"; do wait "$p" 2>/dev/null || true; done
  # Ending a namespace's holder ends its dbus-daemon and avahi-daemon (same mount namespace,
  # killed by pid: they are the namespace's only processes).
  for h in "${holders[@]}"; do
    for p in $(pgrep -f "^avahi-daemon|^dbus-daemon" 2>/dev/null); do
      [ "$(readlink /proc/$p/ns/mnt 2>/dev/null)" = "$(readlink /proc/$h/ns/mnt 2>/dev/null)" ] && kill "$p" 2>/dev/null || true
    done
    kill "$h" 2>/dev/null || true
  done
  ip netns del "${tag}a" 2>/dev/null || true
  ip netns del "${tag}b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "discovery-check: FAIL: $*" >&2; for f in "$work"/*.log; do echo "--- $f" >&2; tail -20 "$f" >&2; done; exit 1; }
pass() { echo "ok   $*"; }

# Two namespaces on one link.
ip netns add "${tag}a"; ip netns add "${tag}b"
ip link add "${tag}va" type veth peer name "${tag}vb"
ip link set "${tag}va" netns "${tag}a"; ip link set "${tag}vb" netns "${tag}b"
ip -n "${tag}a" addr add 10.231.0.1/24 dev "${tag}va"; ip -n "${tag}b" addr add 10.231.0.2/24 dev "${tag}vb"
for n in a b; do ip -n "$tag$n" link set lo up; ip -n "$tag$n" link set "$tag"v$n up; done

# In each: a private /run for D-Bus and Avahi, a system bus, avahi-daemon; the holder stays.
start_avahi='avahi-daemon -D --no-rlimits --no-chroot'
for n in a b; do
  ip netns exec "$tag$n" unshare -m --propagation private bash -c "
    set -e
    mkdir -p /run/dbus /run/avahi-daemon
    mount -t tmpfs tmpfs /run/dbus; mount -t tmpfs tmpfs /run/avahi-daemon
    dbus-daemon --system --fork --nopidfile
    $start_avahi
    exec sleep infinity" > "$work/ns-$n.log" 2>&1 &
  holders+=("$!")
done
in_a() { nsenter -t "${holders[0]}" -m -n "$@"; }
in_b() { nsenter -t "${holders[1]}" -m -n "$@"; }
# Each avahi-daemon is up once it has claimed its host name.
avahi_running() {  # holder pid
  for p in $(pgrep -f "^avahi-daemon: running"); do
    [ "$(readlink /proc/$p/ns/mnt)" = "$(readlink /proc/$1/ns/mnt)" ] && return 0
  done
  return 1
}
for h in "${holders[@]}"; do
  for _ in $(seq 300); do avahi_running "$h" && break; sleep 0.1; done
  avahi_running "$h" || fail "avahi-daemon did not start in a namespace: $(pgrep -fa 'avahi-daemon|dbus-daemon' | tr '\n' ';')"
done

# The programme: demo episodes, a catalog of them, and episode 2 playing.
cd "$work"
source "$repo/scripts/lib/demo-episodes.sh"
demo_episodes >/dev/null
mkdir -p a/catalogs b
"$bin/earshot" catalog create -o a/catalogs/demo.earcat intro.wav episode1.wav episode2.wav --media-items items.csv >/dev/null
"$bin/earshot" keygen -o "$work/tv" >/dev/null
config() {  # state folder, name
  cat <<TOML
[daemon]
state_directory = "$work/$1"
name = "$2"
[audio]
source = "file"
file = "$work/episode2.wav"
[rpc]
listen = ["tcp://0.0.0.0:7400"]
[events]
listen = ["tcp://0.0.0.0:7401"]
TOML
}
config a "Living room" > a.toml
config b "Living room" > b.toml
mkdir -p a && cat tv.pub >> a/clients.allow
# nsenter runs earshotd in its own process (no fork), so $! is the daemon.
nsenter -t "${holders[0]}" -m -n "$bin/earshotd" --config "$work/a.toml" > "$work/daemon-a.log" 2>&1 &
daemons+=("$!")
for _ in $(seq 100); do grep -q 'announced on the LAN as "Living room"' daemon-a.log && break; sleep 0.1; done
grep -q 'announced on the LAN as "Living room"' daemon-a.log || fail "box A did not announce itself"

# discover
listing="$(in_b "$bin/earshot" remote discover --json --timeout 3)" || fail "discover failed"
echo "$listing" > discover.log
key="$(grep -v '^#' a/server.public | head -1 | awk '{print $1}')"
python3 - "$listing" "$key" <<'PY' || fail "discover did not list box A as announced"
import json, sys
boxes = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
box = next(b for b in boxes if b["name"] == "Living room")
assert box["server"] == "tcp://10.231.0.1:7400", box
assert box["eventsPort"] == 7401 and box["protocolVersion"] == 1 and box["security"] == "curve", box
assert box["serverKey"] == sys.argv[2], (box["serverKey"], sys.argv[2])
PY
grep -q "server key fingerprint $(python3 -c 'import json,sys; print(next(json.loads(l)["serverKeyFingerprint"] for l in sys.argv[1].splitlines()))' "$listing")" daemon-a.log ||
  fail "the fingerprint discover prints is not the one box A logs"
pass "discover: \"Living room\" at tcp://10.231.0.1:7400, events 7401, with the key in its server.public"
in_b "$python" - "$listing" <<'PY' || fail "the Python client's discover() did not find box A as the CLI did"
import json, sys
from earshot_client import discover
cli = next(json.loads(l) for l in sys.argv[1].splitlines() if json.loads(l)["name"] == "Living room")
box = next(b for b in discover(timeout=3) if b.name == "Living room")
assert box.server == cli["server"] and box.events == cli["events"], (box, cli)
assert box.server_key == cli["serverKey"] and box.fingerprint == cli["serverKeyFingerprint"], (box, cli)
# The TXT strings go out in the documented order (txtvers first, RFC 6763 §6.7).
from zeroconf import Zeroconf
zc = Zeroconf()
info = zc.get_service_info("_earshot._tcp.local.", "Living room._earshot._tcp.local.", timeout=3000)
zc.close()
assert list(info.properties) == [b"txtvers", b"proto", b"events", b"security", b"key", b"name"], list(info.properties)
PY
pass "discover() in Python: the same box, endpoints and key fingerprint"

# by name (its announced key; only the client key is given)
sleep 4  # audio for a 3 s query
in_b "$bin/earshot" remote match --server "living room" --key "$work/tv.key" > match.log 2>&1 || fail "match by name failed"
grep -q "Episode 2" match.log || fail "match by name did not find Episode 2"
pass "match --server \"living room\": $(head -1 match.log)"
in_b "$bin/earshot" remote state --server "Kitchen" --key "$work/tv.key" > kitchen.log 2>&1 && fail "an unknown name was accepted"
grep -q 'no box called "Kitchen"' kitchen.log || fail "an unknown name did not say why: $(cat kitchen.log)"
pass "an unknown name: $(cat kitchen.log)"

# a fleet file that names the box: the dashboard follows it under its name, through its announced key
printf '# the fleet, by name\nLiving room\n' > fleet.txt
nsenter -t "${holders[1]}" -m -n "$bin/earshot" remote dashboard --servers-file "$work/fleet.txt" --key "$work/tv.key" --listen 127.0.0.1:8641 --duration 15 > dashboard.log 2>&1 &
dashboard=$!
followed=false
for _ in $(seq 50); do
  if in_b python3 - > fleet-state.json 2>/dev/null <<'PY'
import json, sys, urllib.request
state = json.load(urllib.request.urlopen("http://127.0.0.1:8641/state.json", timeout=2))
box = state["boxes"][0]
json.dump(box, sys.stdout)
sys.exit(0 if box["connection"] == "connected" and box.get("programme") else 1)
PY
  then followed=true; break; fi
  sleep 0.3
done
kill "$dashboard" 2>/dev/null || true
wait "$dashboard" 2>/dev/null || true
$followed || fail "the dashboard did not follow the box named in its fleet file: $(cat dashboard.log fleet-state.json 2>/dev/null)"
python3 -c 'import json,sys; b=json.load(open("fleet-state.json")); sys.exit(0 if b["name"] == "Living room" else 1)' ||
  fail "the dashboard did not name the box as announced: $(cat fleet-state.json)"
pass "dashboard --servers-file naming \"Living room\": $(python3 -c 'import json; b=json.load(open("fleet-state.json")); print(b["name"], b["connection"], b["programme"]["title"])')"

# rename: box B takes the same name
nsenter -t "${holders[1]}" -m -n "$bin/earshotd" --config "$work/b.toml" > "$work/daemon-b.log" 2>&1 &
daemons+=("$!")
for _ in $(seq 100); do grep -q 'announced on the LAN as' daemon-b.log && break; sleep 0.1; done
grep -q 'announced as "Living room #2" instead' daemon-b.log || fail "box B was not renamed"
in_a "$bin/earshot" remote discover > both.log
grep -q "^Living room  " both.log && grep -q "^Living room #2  tcp://10.231.0.2:7400" both.log || fail "both boxes not listed: $(cat both.log)"
pass "rename: a second \"Living room\" is announced as \"Living room #2\""

# avahi gone and back (box B's namespace)
in_b avahi-daemon -k
for _ in $(seq 50); do grep -q 'avahi-daemon is not running' daemon-b.log && break; sleep 0.1; done
grep -q 'avahi-daemon is not running' daemon-b.log || fail "box B did not say avahi-daemon went away"
in_b $start_avahi
for _ in $(seq 100); do [ "$(grep -c 'announced on the LAN as' daemon-b.log)" -ge 2 ] && break; sleep 0.1; done
[ "$(grep -c 'announced on the LAN as' daemon-b.log)" -ge 2 ] || fail "box B was not announced again"
pass "avahi gone: box B says so, serves on, and is announced again when avahi-daemon is back"

# stop: box A withdrawn
kill -TERM "${daemons[0]}"; wait "${daemons[0]}" || fail "box A did not stop cleanly"
for _ in $(seq 10); do
  in_b "$bin/earshot" remote discover --timeout 1 > after.log
  grep -q "^Living room  " after.log || break
done
grep -q "^Living room  " after.log && fail "box A still listed after its stop: $(cat after.log)"
pass "stop: box A is withdrawn from the LAN"

# A hung avahi-daemon (stopped with SIGSTOP) does not hold up box B's stop.
for p in $(pgrep -f "^avahi-daemon: running"); do
  [ "$(readlink /proc/$p/ns/mnt)" = "$(readlink /proc/${holders[1]}/ns/mnt)" ] && kill -STOP "$p"
done
started=$(date +%s.%N)
kill -TERM "${daemons[1]}"; wait "${daemons[1]}" || fail "box B did not stop cleanly"
took=$(python3 -c "print(f'{$(date +%s.%N) - $started:.1f}')")
python3 -c "import sys; sys.exit(0 if $took < 5 else 1)" || fail "box B took $took s to stop with avahi-daemon hung"
grep -q "did not withdraw the announcement within" daemon-b.log || fail "box B did not say avahi-daemon hung"
for p in $(pgrep -f "^avahi-daemon"); do kill -CONT "$p" 2>/dev/null || true; done
pass "avahi hung: box B stops in $took s and says why it did not wait"
echo "discovery-check: all passed"
