#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang from the Swift toolchain or PATH) and runs each for N
# executions (default 1 000 000), at low priority. A crash fails with the reproducer in
# build/fuzz-crashes/. Usage: fuzz/run-fuzz.sh [RUNS] [harness…]   (harnesses: reply event)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
export PATH="/opt/swift/usr/bin:$PATH"
runs="${1:-1000000}"
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(reply event)
command -v "${FUZZ_CC:-clang}" >/dev/null || { echo "run-fuzz: clang missing (the Swift toolchain has one in /opt/swift/usr/bin)" >&2; exit 1; }
mkdir -p build
make --no-print-directory -s fuzz FUZZ_CC="${FUZZ_CC:-clang}" >build/fuzz-build.log 2>&1 || { tail -30 build/fuzz-build.log >&2; exit 1; }
mkdir -p build/fuzz-crashes
for h in "${harnesses[@]}"; do
    corpus="build/fuzz-corpus/$h"
    mkdir -p "$corpus"
    log="build/fuzz-$h.log"
    start=$(date +%s)
    if ! nice -n 15 "build/fuzz-$h" -runs="$runs" -max_len=4096 -timeout=10 -rss_limit_mb=1024 \
        -artifact_prefix=build/fuzz-crashes/"$h"- -print_final_stats=1 "$corpus" >"$log" 2>&1; then
        tail -40 "$log" >&2
        echo "run-fuzz: $h: FAILED (log $log)" >&2
        exit 1
    fi
    execs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    echo "run-fuzz: $h: $execs executions, no crash ($(( $(date +%s) - start )) s)"
done
