#!/usr/bin/env bash
# Earshot CLI demo (scripts/demo.sh is the daemon demo): installs what it needs, builds the `earshot` CLI, synthesises three short "songs"
# with sox, builds a catalog with media-item metadata, then recognises a noisy excerpt played 4 %
# fast (like a PAL broadcast) and prints the match: item, offset, skew, confidence.
# Needs nothing but this repository on Debian 12 with Swift; writes only to a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
repo="$PWD"

scripts/setup.sh
echo "demo: building earshot (release)…"
swift build -c release --product earshot 2>&1 | tail -1
earshot="$PWD/.build/release/earshot"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

source "$repo/scripts/lib/demo-episodes.sh"
demo_episodes

echo; echo "\$ earshot catalog create -o demo.earcat intro.wav episode1.wav episode2.wav --media-items items.csv"
"$earshot" catalog create -o demo.earcat intro.wav episode1.wav episode2.wav --media-items items.csv

# The "TV": 8 s of episode 2 from 6 s in, played 4 % fast, with white noise mixed in.
sox -q episode2.wav clean.wav trim 6 8.3 speed 1.04
sox -q -n -r 44100 noise.wav synth 8 whitenoise vol 0.08
sox -q -m clean.wav noise.wav query.wav trim 0 8

echo; echo "\$ earshot match --catalog demo.earcat query.wav    # episode 2 from 6 s, +4 % speed, noisy"
"$earshot" match --catalog demo.earcat query.wav
echo; echo "\$ earshot catalog display -c demo.earcat"
"$earshot" catalog display -c demo.earcat
