#!/usr/bin/env bash
# Fetches the recognition benchmark's audio corpus from Debian packages and lists it.
#
#   scripts/fetch-benchmark-corpus.sh [CACHE_DIR]      (default: benchmarks/cache, git-ignored)
#   EARSHOT_CORPUS_PACKAGES="wesnoth-1.16-music xmoto-data" scripts/fetch-benchmark-corpus.sh DIR
#                                                      (another corpus, for `earshot-bench --corpus DIR`)
#
# Packages by default: warzone2100-music (30 Opus music tracks, GPL/CC) and boswars-data (mostly
# unit sound effects of a few seconds, plus a few spoken tutorial lines; its only long Ogg file is
# a Theora video). EARSHOT_CORPUS_PACKAGES names others (Debian 12's names); every .deb in
# CACHE_DIR/debs is unpacked, so give another corpus its own folder. Everything is unpacked with `dpkg-deb -x` into CACHE_DIR/root; nothing is installed.
# Audio files shorter than MIN_SECONDS (default 15) and files that are not audio (video Ogg) are
# left out. The kept files are written, one "seconds<TAB>path" per line, to CACHE_DIR/corpus.tsv,
# which earshot-bench reads. Running it again reuses what is already there.
#
# The cache must never be committed (it is in .gitignore).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${1:-$here/benchmarks/cache}"
min_seconds="${MIN_SECONDS:-15}"
read -r -a packages <<<"${EARSHOT_CORPUS_PACKAGES:-warzone2100-music boswars-data}"
((${#packages[@]})) || { echo "EARSHOT_CORPUS_PACKAGES names no package" >&2; exit 1; }

mkdir -p "$cache/debs" "$cache/root"
cache="$(cd "$cache" && pwd)"

# 1. Download the .deb files (once). `apt-get update` only when a download fails.
missing=()
for p in "${packages[@]}"; do
    compgen -G "$cache/debs/${p}_*.deb" >/dev/null || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "downloading: ${missing[*]}"
    # apt-get download writes into the current directory; _apt may not be able to write there,
    # which apt only warns about.
    if ! (cd "$cache/debs" && apt-get download "${missing[@]}"); then
        echo "download failed; running apt-get update and retrying"
        apt-get update -qq
        (cd "$cache/debs" && apt-get download "${missing[@]}")
    fi
else
    echo "packages already downloaded in $cache/debs"
fi

# 2. Unpack (once per .deb; a stamp file records it).
for deb in "$cache"/debs/*.deb; do
    stamp="$cache/root/.unpacked-$(basename "$deb")"
    if [[ ! -e $stamp ]]; then
        echo "unpacking $(basename "$deb")"
        dpkg-deb -x "$deb" "$cache/root"
        touch "$stamp"
    fi
done

# 3. Find audio files and their durations.
#    soxi reads WAV/FLAC/Vorbis/MP3 but not Opus (Debian's sox has no Opus handler), so Ogg files
#    are measured from their last page's granule position (python3, when available).
ogg_info() {  # prints "seconds codec" of an Ogg file, or nothing
    command -v python3 >/dev/null || return 0
    python3 - "$1" <<'EOF' 2>/dev/null || true
import struct, sys
data = open(sys.argv[1], "rb").read()
if not data.startswith(b"OggS"):
    sys.exit(0)
head = data[28:36]
if data[28:36] == b"OpusHead":
    codec, rate = "opus", 48000
    preskip = struct.unpack_from("<H", data, 28 + 10)[0]
elif data[29:35] == b"vorbis":
    codec, rate, preskip = "vorbis", struct.unpack_from("<I", data, 28 + 12)[0], 0
elif data[28:32] == b"fLaC" or data[29:33] == b"FLAC":
    codec, rate, preskip = "flac", 0, 0
else:
    print("0 other")      # Theora video, Speex, ...
    sys.exit(0)
last = data.rfind(b"OggS")
granule = struct.unpack_from("<q", data, last + 6)[0]
if rate and granule > 0:
    print("%.3f %s" % ((granule - preskip) / rate, codec))
EOF
}

duration_of() {  # prints seconds, "?" if unknown, "0" if not audio
    local f="$1" d info
    case "${f,,}" in
    *.ogg | *.oga | *.opus)
        info="$(ogg_info "$f")"
        if [[ -n $info ]]; then
            echo "${info%% *}"
            return
        fi
        ;;
    esac
    if command -v soxi >/dev/null && d="$(soxi -D "$f" 2>/dev/null)"; then
        echo "$d"
    else
        echo "?"
    fi
}

manifest="$cache/corpus.tsv"
tmp="$manifest.tmp"
: >"$tmp"
found=0 kept=0 short=0 notaudio=0
while IFS= read -r -d '' f; do
    found=$((found + 1))
    d="$(duration_of "$f")"
    if [[ $d == "0" ]]; then
        notaudio=$((notaudio + 1))
        continue
    fi
    if [[ $d != "?" ]] && awk -v d="$d" -v m="$min_seconds" 'BEGIN { exit !(d < m) }'; then
        short=$((short + 1))
        continue
    fi
    printf '%s\t%s\n' "$d" "$f" >>"$tmp"
    kept=$((kept + 1))
done < <(find "$cache/root" -type f \( -iname '*.ogg' -o -iname '*.oga' -o -iname '*.opus' -o -iname '*.wav' \
    -o -iname '*.flac' -o -iname '*.mp3' -o -iname '*.aif' -o -iname '*.aiff' \) -print0 | sort -z)
sort -t $'\t' -k2 "$tmp" >"$manifest"
rm -f "$tmp"

echo
echo "audio files found: $found; kept $kept (>= ${min_seconds}s), skipped $short shorter, $notaudio not audio (video)"
awk -F'\t' '{ printf "  %8s s  %s\n", $1, $2 }' "$manifest" | sed "s|$cache/root/||"
awk -F'\t' -v n="$kept" '
    $1 != "?" { total += $1; known++ }
    END { printf "total: %d files, %.1f minutes (%.2f hours)%s\n", n, total / 60, total / 3600,
          (known < n ? sprintf(" of %d files with a known duration", known) : "") }' "$manifest"
echo "manifest: $manifest"
