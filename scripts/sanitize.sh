#!/bin/bash
# The Swift test suite under a sanitizer (fuzz/README.md).
#
#   scripts/sanitize.sh address [swift test arguments]    # AddressSanitizer (+ LeakSanitizer)
#   scripts/sanitize.sh thread  [swift test arguments]    # ThreadSanitizer
#
# Builds into /tmp/asan-build or /tmp/tsan-build (SANITIZE_SCRATCH overrides). The executables the
# tests run as processes (earshot, earshotd) are built with the same sanitizer and found next to
# the test bundle. Suppressions: scripts/sanitizers/<kind>.supp (each entry says why).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH

kind=${1:-}
case "$kind" in
    address) scratch=${SANITIZE_SCRATCH:-/tmp/asan-build} ;;
    thread) scratch=${SANITIZE_SCRATCH:-/tmp/tsan-build} ;;
    *) echo "usage: $0 address|thread [swift test arguments]" >&2; exit 2 ;;
esac
shift
suppressions() { [ -f "scripts/sanitizers/$1.supp" ] && echo ":suppressions=$PWD/scripts/sanitizers/$1.supp" || true; }

# halt_on_error: the first report fails the run (its test crashes), so nothing is missed.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-print_suppressions=0$(suppressions leak)}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1$(suppressions thread)}

# Under TSan the tests run one at a time (`--parallel` after the kind overrides it): as fast here as
# in parallel, and it keeps the tests' wall-clock deadlines (RPC calls: 60 s, 120 s) clear of
# other tests slowed 5-20x by TSan. Before the tests kept blocking work off the shared task pool,
# a parallel run failed 20 tests that way (no TSan report); see fuzz/README.md.
serial=()
[ "$kind" = thread ] && serial=(--no-parallel)

for product in earshot earshotd; do
    swift build --scratch-path "$scratch" --sanitize="$kind" --product "$product"
done
swift test --scratch-path "$scratch" --sanitize="$kind" ${serial[@]+"${serial[@]}"} "$@"
