#!/usr/bin/env bash
# The whole test suite, as CI runs it (after scripts/setup.sh on a fresh machine):
#   1. swift test — core, audio, ALSA (file PCM), live sessions, transport, the daemon as a
#      process driven by the Swift client, the CLI end to end;
#   2. the Python client's tests — unit tests, then integration tests against the real earshotd
#      (plain mode for the protocol tests, CURVE with generated keys for test_security.py)
#      (a catalog and a programme made here from synthetic audio with sox and the CLI).
# Arguments are passed to `swift test` (e.g. --filter Daemon).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="/opt/swift/usr/bin:$PATH"

scripts/setup.sh
swift build
swift test "$@"

bin="$(swift build --show-bin-path)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Two short pieces of plucked notes (seeded: the same every run).
notes=(A2 C3 D3 E3 G3 A3 C4 D4 E4 G4 A4 C5 D5 E5)
piece() {
  local name=$1 seed=$2 parts=()
  RANDOM=$seed
  for i in $(seq 1 60); do
    local n=${notes[$((RANDOM % ${#notes[@]}))]} m=${notes[$((RANDOM % ${#notes[@]}))]}
    sox -q -n -r 16000 -c 1 "$work/p$i.wav" synth "0.$((15 + RANDOM % 30))" pluck "$n" pluck mix "$m" vol 0.8
    parts+=("$work/p$i.wav")
  done
  sox -q "${parts[@]}" "$work/$name.wav"
  rm -f "$work"/p*.wav
}
piece first 101
piece second 202
"$bin/earshot" catalog create --quiet -o "$work/test.earcat" "$work/first.wav" "$work/second.wav"

EARSHOTD="$bin/earshotd" EARSHOT_TEST_CATALOG="$work/test.earcat" EARSHOT_TEST_AUDIO="$work/second.wav" \
  clients/python/run-tests.sh
