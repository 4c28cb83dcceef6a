#!/usr/bin/env bash
# kill -9 at random moments while several clients add and remove library items, many cycles:
# after every restart each acknowledged change must be there, each batch and removal whole or
# absent, versions only going up, and at the end the database must pass quick_check. The test
# command runs 5 cycles of the same test; this runs as many as asked.
#
#   scripts/library-kill-loop.sh          # 200 cycles (about 90 s)
#   scripts/library-kill-loop.sh 1000
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
cycles="${1:-200}"
swift build --build-tests 2>&1 | tail -1
EARSHOT_LIBRARY_KILL_CYCLES="$cycles" swift test --skip-build --filter 'killedDuringAddsAndRemovesItLosesNoAcknowledgedChange'
