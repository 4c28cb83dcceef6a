#!/bin/bash
# Checks what EarshotSync's `Locked` tells ThreadSanitizer (scripts/sanitizers/locked-check/main.swift):
# a plain Mutex under contention is reported (TSan cannot see the futex hand-over), the same code
# under `Locked` is not, and an access made without the lock is still reported, whether or not the
# other side holds it. Exit status 0 when all four behave so.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/opt/swift/usr/bin:$PATH
out=${TMPDIR:-/tmp}/earshot-locked-check
swiftc -sanitize=thread -g -Onone Sources/EarshotSync/Locked.swift scripts/sanitizers/locked-check/main.swift -o "$out" || exit 2
status=0
for mode in mutex locked half unlocked; do
    report=$(TSAN_OPTIONS=halt_on_error=1 "$out" "$mode" 2>&1)
    if grep -q "WARNING: ThreadSanitizer" <<<"$report"; then got=reported; else got=clean; fi
    if [ "$mode" = locked ]; then want=clean; else want=reported; fi
    echo "$mode: $got (expected $want)"
    [ "$got" = "$want" ] || { status=1; echo "$report" | head -30; }
done
exit $status
