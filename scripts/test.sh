#!/usr/bin/env bash
# The whole test suite, as CI runs it (after scripts/setup.sh on a fresh machine):
#   1. swift test — core, audio, ALSA (file PCM), live sessions, transport, the daemon as a
#      process driven by the Swift client, the CLI end to end;
#   2. the Python client's tests — unit tests, then integration tests against the real earshotd
#      (plain mode for the protocol tests, CURVE with generated keys for test_security.py)
#      (a catalog and a programme made here from synthetic audio with sox and the CLI);
#   3. the C client's tests (clients/c/tests/run-tests.sh): the same daemon over CURVE, under valgrind.
# Arguments are passed to `swift test` (e.g. --filter Daemon) instead of the three default runs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="/opt/swift/usr/bin:$PATH"

scripts/setup.sh
swift build
if (($#)); then
    swift test "$@"
else
    # Processes one after the other: swift-testing starts every test of a process at once on a
    # pool of one thread per core, so on a small machine hundreds of CPU-bound unit tests (DSP,
    # catalogs, the CLI) would hold it for a minute while the sessions, servers and daemon tests
    # wait there for their handlers and timers, and time out.
    cpu='EarshotCoreTests|EarshotWireTests|EarshotAudioTests|EarshotMediaTests|EarshotCLITests|EarshotAuthoringTests|EarshotStoreTests|EarshotClientTests|EarshotDashboardTests|EarshotSystemTests|EarshotCryptoTests|SQLiteTests|RepositoryRuleTests'
    swift test --filter "$cpu"
    swift test --filter 'EarshotLiveTests'
    # The daemon run inside the test process (EarshotServiceTests' InProcessDaemonTests): its
    # handlers and timers run on that pool, which the tests of earshotd processes and of the CLI
    # block while they wait for their children.
    inprocess='InProcessDaemonTests'
    swift test --filter "$inprocess"
    # The flood tests measure how fast the daemon still answers under a flood, and their floods
    # take both cores for minutes: each alone, not beside the daemon tests that start and kill -9
    # daemons in a loop with 10-second deadlines.
    # The dashboard's browser tests start Chromium again and again, which takes both cores too.
    alone='DaemonHostileLANTests|DaemonLibraryFairnessTests|DashboardBrowserTests'
    swift test --filter 'DaemonHostileLANTests'
    swift test --filter 'DaemonLibraryFairnessTests'
    swift test --filter 'DashboardBrowserTests'
    swift test --skip "$cpu|EarshotLiveTests|$inprocess|$alone"  # transport, earshotd processes and any other
fi

bin="$(swift build --show-bin-path)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Two short pieces of plucked notes (seeded: the same every run).
source scripts/lib/synth-music.sh
(cd "$work" && synth_piece first 101 60 16000 && synth_piece second 202 60 16000)
"$bin/earshot" catalog create --quiet -o "$work/test.earcat" "$work/first.wav" "$work/second.wav"

EARSHOTD="$bin/earshotd" EARSHOT_TEST_CATALOG="$work/test.earcat" EARSHOT_TEST_AUDIO="$work/second.wav" \
  clients/python/run-tests.sh

# 3. The C client (clients/c): built with -Werror, its tests against the real earshotd over CURVE
#    under valgrind, and a short fuzz of its decoders.
EARSHOTD="$bin/earshotd" EARSHOT_CLI="$bin/earshot" EARSHOT_TEST_CATALOG="$work/test.earcat" EARSHOT_TEST_AUDIO="$work/second.wav" \
  clients/c/tests/run-tests.sh
