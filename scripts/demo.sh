#!/usr/bin/env bash
# Earshot appliance demo, on a machine with no sound card: installs what it needs, builds
# `earshotd` and `earshot`, synthesises three short "episodes" with sox and builds a catalog,
# then starts the daemon with a file played in real time standing in for the TV (episode 2,
# 4 % fast like a PAL broadcast, with noise) and shows a LAN client asking what is on.
#
#   scripts/demo.sh          # runs the demo, then stops the daemon
#   scripts/demo.sh --keep   # leaves the daemon running (Ctrl-C stops it); try
#                            #   earshot remote watch (the demo prints the key settings)
# Writes only to a temporary folder; uses ports 7400 (RPC) and 7401 (events) on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
repo="$PWD"
keep=0
[ "${1:-}" = "--keep" ] && keep=1

scripts/setup.sh
echo "demo: building earshotd and earshot (release; the first build takes a few minutes)…"
swift build -c release --product earshotd 2>&1 | tail -1
swift build -c release --product earshot 2>&1 | tail -1
bin="$PWD/.build/release"

work="$(mktemp -d)"
daemon_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

source "$repo/scripts/lib/demo-episodes.sh"
demo_episodes
mkdir -p state/catalogs
"$bin/earshot" catalog create -o state/catalogs/demo.earcat intro.wav episode1.wav episode2.wav --media-items items.csv

# The "TV": episode 2 played 4 % fast with white noise, looping.
sox -q episode2.wav fast.wav speed 1.04
sox -q -n -r 44100 noise.wav synth "$(soxi -D fast.wav)" whitenoise vol 0.05
sox -q -m fast.wav noise.wav tv.wav

# CURVE is on by default: a key for this demo's client, allowed as an operator.
echo
echo "\$ earshot keygen -o demo-client   # then its line goes into the daemon's allow-list"
"$bin/earshot" keygen -o demo-client | tail -1 | tee state/clients.allow
export EARSHOT_CLIENT_KEY="$work/demo-client.key"

echo
echo "\$ earshotd --daemon.state_directory=… --audio.source=file --audio.file=tv.wav &"
"$bin/earshotd" --daemon.state_directory="$work/state" --audio.source=file --audio.file="$work/tv.wav" \
  > earshotd.log 2>&1 &
daemon_pid=$!
for _ in $(seq 1 100); do
  grep -q "listening on" earshotd.log 2>/dev/null && break
  kill -0 "$daemon_pid" 2>/dev/null || { cat earshotd.log; exit 1; }
  sleep 0.1
done
sed 's/^/  | /' earshotd.log
export EARSHOT_SERVER_KEY="$work/state/server.public"   # the daemon made its key pair on first start
sleep 4   # let it hear a few seconds of the programme (it prerecords from the start)

echo; echo "\$ earshot remote match          # a LAN client asks: what is on, and where?"
"$bin/earshot" remote match || true
echo; echo "\$ earshot remote state"
"$bin/earshot" remote state
echo; echo "\$ earshot remote stream --duration 5 --repeats   # results as the programme plays (from 5 s the quiz item too)"
"$bin/earshot" remote stream --duration 5 --repeats || true
echo; echo "\$ earshot remote library add --from-last-match   # keep it in this client's library (SQLite on the box)"
"$bin/earshot" remote library add --from-last-match || true
echo; echo "\$ earshot remote library"
"$bin/earshot" remote library || true

if [ "$keep" -eq 1 ]; then
  echo; echo "demo: earshotd keeps running (pid $daemon_pid). In another terminal:"
  echo "  EARSHOT_SERVER_KEY=$EARSHOT_SERVER_KEY EARSHOT_CLIENT_KEY=$EARSHOT_CLIENT_KEY $bin/earshot remote watch"
  echo "demo: Ctrl-C stops it."
  wait "$daemon_pid"
fi
echo; echo "demo: daemon log:"; sed 's/^/  | /' earshotd.log | tail -5
