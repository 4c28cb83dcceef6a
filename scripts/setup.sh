#!/usr/bin/env bash
# Installs the Debian packages Earshot builds and tests with. Safe to run again: it installs
# only what is missing. Needs root (or sudo) for apt-get.
set -euo pipefail

packages=(
  pkg-config
  libfftw3-dev      # FFT (single precision)
  libsndfile1-dev   # WAV/FLAC/Ogg/MP3 decoding
  libopus-dev       # Ogg Opus decoding (straight to 16 kHz mono for signatures)
  libsoxr-dev       # sample-rate conversion
  libasound2-dev    # ALSA capture (live listening); tests use its file/null PCM plugins, no sound card
  sox libsox-fmt-all  # test fixtures in other formats, tempo changes in the benchmark
  lame              # MP3 round trips in the benchmark
  libzmq3-dev libsodium-dev  # ZeroMQ RPC and events (CURVE needs libsodium)
  libsqlite3-dev    # the clients' libraries (SQLite, WAL)
  libavformat-dev libavcodec-dev libswresample-dev  # FFmpeg: video and broadcast files in the CLI's authoring path
  ffmpeg            # the ffmpeg tool makes the tests' video fixtures
  chromium          # the dashboard's tests read its page in a real (headless) browser
  libavahi-client-dev  # DNS-SD: the daemon announces the box, `earshot remote discover` finds it
  protobuf-compiler # protoc: the tests check proto/ compiles and matches the generated code
  python3 python3-venv  # the Python client's tests: clients/python/run-tests.sh makes a venv
  libprotobuf-c-dev protobuf-c-compiler  # the C client (clients/c): protobuf-c runtime and protoc-c
  valgrind          # the C client's tests run under memcheck
  gdb               # a test whose earshotd hangs prints its threads' stacks
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all Debian packages present"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
