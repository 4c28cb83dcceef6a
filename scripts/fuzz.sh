#!/bin/bash
# Builds and runs the libFuzzer harnesses (fuzz/README.md).
#
#   scripts/fuzz.sh <harness|all> [seconds] [-- libFuzzer arguments]
#   scripts/fuzz.sh signature 60
#   scripts/fuzz.sh all 0 -- -runs=1000000      # a fixed number of executions instead of a time
#
# Harnesses: envelope signature catalog csv config cues. The harnesses are executable targets that
# Package.swift declares only when EARSHOT_FUZZ is set; they and everything they test are built
# with -sanitize=fuzzer,address into $FUZZ_SCRATCH (default /tmp/fuzz-build). Each harness writes
# its seed corpus (valid inputs made with the package's own encoders) into
# $FUZZ_WORK/corpus/<harness> (default /tmp/earshot-fuzz), which also keeps what libFuzzer finds;
# crashes land in $FUZZ_WORK/artifacts/<harness>/.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH

all=(envelope signature catalog csv config cues)
[ $# -ge 1 ] || { echo "usage: $0 <${all[*]// /|}|all> [seconds] [-- libFuzzer arguments]" >&2; exit 2; }
which=$1; shift
seconds=60
if [ $# -ge 1 ] && [ "$1" != "--" ]; then seconds=$1; shift; fi
[ $# -ge 1 ] && [ "$1" = "--" ] && shift
extra=("$@")
scratch=${FUZZ_SCRATCH:-/tmp/fuzz-build}
work=${FUZZ_WORK:-/tmp/earshot-fuzz}

if [ "$which" = all ]; then harnesses=("${all[@]}"); else harnesses=("$which"); fi
for h in "${harnesses[@]}"; do
    [[ " ${all[*]} " == *" $h "* ]] || { echo "unknown harness $h (${all[*]})" >&2; exit 2; }
done

for h in "${harnesses[@]}"; do
    EARSHOT_FUZZ=1 swift build --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer,address --product "fuzz-$h" 2>&1 \
        | grep -v -e "Cannot export local symbol" -e "prohibited flag" >&2
    bin=$(EARSHOT_FUZZ=1 swift build --scratch-path "$scratch" --show-bin-path)/fuzz-$h
    corpus=$work/corpus/$h
    artifacts=$work/artifacts/$h
    mkdir -p "$corpus" "$artifacts"
    EARSHOT_FUZZ_SEEDS=$corpus "$bin"
    dict=()
    [ -f "fuzz/dictionaries/$h.dict" ] && dict=("-dict=fuzz/dictionaries/$h.dict")
    time_limit=()
    [ "$seconds" != 0 ] && time_limit=("-max_total_time=$seconds")
    # Largest input libFuzzer makes. 64 KB for the binary formats (a catalog or signature with
    # many sections and entries). CSV text needs far less: a header of every column is ~170
    # bytes, and further bytes only add rows and cells that run the same code again, while each
    # row costs the harness a parse, three assigns, a 14-column render and a parse of that, so
    # long inputs only slow it down (the length limit grows during a run: ~1.5 KB -> ~4 KB over
    # 550 000 executions, with exec/s falling from ~2 000 to ~1 400).
    # The same holds for cue playlists and CSV (fuzz-cues).
    max_len=65536
    case $h in csv | cues) max_len=4096 ;; esac
    echo "== fuzz-$h: ${seconds}s ${extra[*]:-}" >&2
    # -rss_limit_mb: the catalog harness maps whole inputs; leaks are reported at exit (ASan).
    "$bin" "$corpus" "${dict[@]}" "${time_limit[@]}" -timeout=10 -max_len=$max_len -rss_limit_mb=2048 \
        -artifact_prefix="$artifacts/" -print_final_stats=1 "${extra[@]}"
done
