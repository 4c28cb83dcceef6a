#!/usr/bin/env bash
# kill -9 at random points of catalog uploads, commits and swaps, many rounds: after every restart
# the catalogs folder must hold only whole catalogs and the daemon must serve. The test command
# runs 4 rounds of the same test; this runs as many as asked.
#
#   scripts/kill-loop.sh          # 100 rounds (a few minutes)
#   scripts/kill-loop.sh 1000
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
rounds="${1:-100}"
swift build --build-tests 2>&1 | tail -1
EARSHOT_KILL_LOOPS="$rounds" swift test --skip-build --filter 'killedAtAnyPointOfUploadAndSwap'
