#!/usr/bin/env bash
# Build speed of catalogs from video: `earshot` on a 1-hour Matroska file (MPEG-4 video, an AC-3
# main track and an AAC second track) against the same hour as WAV, and whether the catalog made
# from the film recognises clips of the WAV. Prints a Markdown section for benchmarks/RESULTS.md
# ("Authoring from video: a 1-hour MKV").
#
#   benchmarks/video-authoring.sh [--minutes N] [--runs N] [--keep DIR]
#
#   --minutes N   the length of the film (default 60)
#   --runs N      timed runs of each command; the median is reported (default 3)
#   --keep DIR    make the inputs in DIR and keep them (default: a temporary folder, removed)
#
# The audio is the benchmark corpus's music (scripts/fetch-benchmark-corpus.sh), end to end and
# repeated up to the length, at 48 kHz stereo. Needs ffmpeg and GNU time; builds the release CLI.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="/opt/swift/usr/bin:$PATH"
minutes=60 runs=3 keep=""
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) minutes="${2:?--minutes needs a number}"; shift 2 ;;
        --runs) runs="${2:?--runs needs a number}"; shift 2 ;;
        --keep) keep="${2:?--keep needs a folder}"; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "video-authoring: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
for tool in ffmpeg /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "video-authoring: $tool is missing (scripts/setup.sh installs ffmpeg; apt-get install time)" >&2; exit 1; }
done
seconds=$((minutes * 60))

(cd "$repo" && swift build -c release --product earshot >/dev/null)
cli="$repo/.build/release/earshot"
"$repo/scripts/fetch-benchmark-corpus.sh" "$repo/benchmarks/cache" >/dev/null

if [ -n "$keep" ]; then mkdir -p "$keep"; work="$(cd "$keep" && pwd)"; else work="$(mktemp -d /tmp/earshot-video.XXXXXX)"; trap 'rm -rf "$work"' EXIT; fi
cd "$work"

# The inputs: the corpus's music tracks (those over a minute), repeated to the length.
if [ ! -s film.mkv ] || [ ! -s film.wav ]; then
    echo "making $minutes minutes of audio and the film (a few minutes) …" >&2
    : > list.txt
    total=0
    grep -qE '^(6[0-9]|[7-9][0-9]|[0-9]{3,})' "$repo/benchmarks/cache/corpus.tsv" ||
        { echo "video-authoring: the corpus holds no track of a minute or more" >&2; exit 1; }
    while [ "$total" -lt "$seconds" ]; do
        while IFS=$'\t' read -r length path; do
            [ "${length%.*}" -ge 60 ] || continue
            printf "file '%s'\n" "$path" >> list.txt
            total=$((total + ${length%.*}))
            [ "$total" -lt "$seconds" ] || break
        done < "$repo/benchmarks/cache/corpus.tsv"
    done
    ffmpeg -hide_banner -loglevel error -nostdin -y -f concat -safe 0 -i list.txt -t "$seconds" -ar 48000 -ac 2 -c:a pcm_s16le film.wav
    ffmpeg -hide_banner -loglevel error -nostdin -y -f lavfi -i "color=c=black:s=320x180:r=25:d=$seconds" -i film.wav -i film.wav \
        -map 0:v -map 1:a -map 2:a -c:v mpeg4 -q:v 31 -c:a:0 ac3 -b:a:0 384k -c:a:1 aac -b:a:1 128k \
        -metadata:s:a:0 language=eng -metadata:s:a:1 language=eng -metadata:s:a:1 title=Commentary \
        -disposition:a:0 default -disposition:a:1 0 film.mkv
fi

# Median of `runs` runs of a command: "wall-seconds user-seconds max-RSS-KiB".
measure() {
    local out=()
    for ((k = 0; k < runs; k++)); do
        /usr/bin/time -f "%e %U %M" -o time.txt "$@" >/dev/null 2>&1 || { echo "video-authoring: failed: $*" >&2; exit 1; }
        out+=("$(cat time.txt)")
    done
    printf '%s\n' "${out[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p"
}
row() {  # name, then the command
    local name="$1" result; shift
    result="$(measure "$@")" || exit 1
    read -r wall user rss <<<"$result"
    awk -v n="$name" -v w="$wall" -v u="$user" -v r="$rss" -v s="$seconds" \
        'BEGIN { printf "| %s | %.1f | %.1f | %.0f× | %.0f |\n", n, w, u, s / w, r / 1024 }'
}

commit="$(git -C "$repo" rev-parse --short HEAD)"
echo "## Authoring from video: a 1-hour MKV"
echo
echo "_Run $(date -u '+%Y-%m-%d %H:%M UTC'), \`benchmarks/video-authoring.sh --minutes $minutes --runs $runs\` on $commit (release CLI). $(nproc) cores._"
echo
echo "The film: $minutes minutes of the benchmark corpus's music, MPEG-4 video 320×180 at 25 fps, an AC-3 track at 384 kbit/s (the default) and an AAC track at 128 kbit/s, 48 kHz stereo; $(du -m film.mkv | cut -f1) MB. The same audio as 16-bit WAV: $(du -m film.wav | cut -f1) MB. Median of $runs runs each; \"speed\" is audio seconds per wall second."
echo
echo "| command | wall (s) | user CPU (s) | speed | max RSS (MiB) |"
echo "|---|---|---|---|---|"
row "\`earshot signature film.wav\` (libsndfile)" "$cli" signature film.wav -o wav.earsig -q
row "\`earshot signature film.mkv\` (FFmpeg, AC-3 track)" "$cli" signature film.mkv -o mkv.earsig -q
row "\`earshot signature film.mkv --audio-track 2\` (AAC track)" "$cli" signature film.mkv --audio-track 2 -o aac.earsig -q
row "\`earshot catalog create film.mkv\`" "$cli" catalog create -o film.earcat film.mkv -q
row "\`ffmpeg\` decoding the AC-3 track alone, for scale" ffmpeg -nostdin -v error -i film.mkv -map 0:a:0 -f null -

# Recognition: clips of the WAV against the catalog made from the film.
found=0 clips=20 worst=0
for ((k = 0; k < clips; k++)); do
    start=$(( (k * (seconds - 20)) / clips + 5 ))
    ffmpeg -hide_banner -loglevel error -nostdin -y -ss "$start" -t 10 -i film.wav clip.wav
    if offset=$("$cli" match -c film.earcat clip.wav --json -q | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["matchOffset"])' 2>/dev/null); then
        error=$(awk -v o="$offset" -v s="$start" 'BEGIN { e = o - s; if (e < 0) e = -e; printf "%d", e * 1000 }')
        if [ "$error" -le 100 ]; then found=$((found + 1)); fi
        [ "$error" -le "$worst" ] || worst=$error
    fi
done
echo
echo "Clips of the WAV (10 s from $clips places) against the catalog made from the film: $found of $clips found at their place (within 100 ms; largest offset error $worst ms)."
