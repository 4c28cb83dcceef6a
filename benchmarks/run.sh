#!/usr/bin/env bash
# Runs the Earshot benchmarks end to end and writes the sections they measure into
# benchmarks/RESULTS.md (each run replaces its own sections and keeps the others).
#
#   benchmarks/run.sh                 # `all`: every benchmark but hotload and board
#   benchmarks/run.sh recognition     # or: scale, live, daemon, hostile, hotload, cues; any
#   benchmarks/run.sh all --quick     #     earshot-bench options may follow, e.g. --queries 200,
#                                     #     --seed 7; --quick writes benchmarks/cache/RESULTS-quick.md
#   benchmarks/run.sh library         # the Library service alone (under a minute; no corpus needed)
#   benchmarks/run.sh scale --scale-hours 1000   # the scale benchmark at 1,000 hours, in a section of its
#                                     # own beside the 100-hour one (~7 minutes, 4.2 GB of memory)
#   benchmarks/run.sh second-corpus   # recognition on other music (Wesnoth, LinCity-NG, X-Moto), a check
#                                     # that what holds on the first corpus holds elsewhere (~7 minutes)
#   sudo benchmarks/run.sh board      # earshotd inside cgroup v1 limits at a Raspberry Pi 3 / Zero 2 W and a
#                                     # Pi 4 CPU budget (~14 minutes, --quick ~3; root, cgroup v1, sysbench;
#                                     # --earshotd PATH runs another build, e.g. a static one)
#
# Installs what is missing (lame, sox, libsox-fmt-all, espeak-ng, festival and two of its voices;
# sysbench for board; from Debian), fetches the corpus into
# benchmarks/cache (git-ignored), builds earshot-bench in release mode and runs it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mkdir -p "$root/benchmarks/cache"

# `second-corpus`: the recognition benchmark on music of other albums and genres than the first
# corpus's, in its own cache folder; its tables go to benchmarks/cache/RESULTS-second-corpus.md.
second_corpus="$root/benchmarks/cache/second-corpus"
second_corpus_packages="wesnoth-1.16-music lincity-ng-data xmoto-data"

# `library` measures earshotd's database, not recognition: no tools, no corpus.
if [[ "${1:-}" != library ]]; then
    need=()
    command -v lame >/dev/null || need+=(lame)
    command -v sox >/dev/null || need+=(sox)
    dpkg -s libsox-fmt-all >/dev/null 2>&1 || need+=(libsox-fmt-all)
    command -v espeak-ng >/dev/null || need+=(espeak-ng)   # people talking over the programme:
    command -v text2wave >/dev/null || need+=(festival)     # espeak-ng's and Festival's voices
    dpkg -s festvox-us-slt-hts >/dev/null 2>&1 || need+=(festvox-us-slt-hts)
    dpkg -s festvox-kallpc16k >/dev/null 2>&1 || need+=(festvox-kallpc16k)
    [[ "${1:-}" == board ]] && ! command -v sysbench >/dev/null && need+=(sysbench)   # the host's single-core speed
    if ((${#need[@]})); then
        echo "installing: ${need[*]}"
        sudo=""
        [[ $(id -u) -ne 0 ]] && sudo="sudo"
        $sudo apt-get install -y "${need[@]}" || { $sudo apt-get update && $sudo apt-get install -y "${need[@]}"; }
    fi

    # The second corpus is also the recognition benchmark's other music: negatives never in its catalog.
    EARSHOT_CORPUS_PACKAGES="$second_corpus_packages" scripts/fetch-benchmark-corpus.sh "$second_corpus"
    if [[ "${1:-}" != second-corpus ]]; then
        EARSHOT_CORPUS_PACKAGES= scripts/fetch-benchmark-corpus.sh "$root/benchmarks/cache"
    fi
fi

swift build -c release --product earshot-bench
swift build -c release --product earshotd
swift build -c release --product earshot   # `catalog create` is timed as authors run it
bin="$(swift build -c release --product earshot-bench --show-bin-path)/earshot-bench"

args=("$@")
((${#args[@]})) || args=(all)
results="$root/benchmarks/RESULTS.md (or benchmarks/cache/RESULTS-quick.md with --quick)"
details="$root/benchmarks/cache/last-run-queries.tsv"
if [[ ${args[0]} == second-corpus ]]; then
    results="$root/benchmarks/cache/RESULTS-second-corpus.md"
    [[ " ${args[*]} " == *" --quick "* ]] && results="$root/benchmarks/cache/RESULTS-second-corpus-quick.md"
    details="$root/benchmarks/cache/second-corpus-queries.tsv"
    args=(recognition --corpus "$second_corpus" --results "$results" --details "$details" "${args[@]:1}")
elif [[ ${args[0]} == recognition || ${args[0]} == all ]] && [[ " ${args[*]} " != *" --negative-corpus "* ]]; then
    args+=(--negative-corpus benchmarks/cache/second-corpus)   # relative: the results name it so
fi
"$bin" "${args[@]}" 2>&1 | tee "$root/benchmarks/cache/last-run.log"

echo
echo "results:           $results"
echo "log of this run:   $root/benchmarks/cache/last-run.log"
echo "per-query details: $details"
