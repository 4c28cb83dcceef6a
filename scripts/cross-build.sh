#!/usr/bin/env bash
# Cross-builds Earshot for Debian 13 "trixie" on arm64 (aarch64; Raspberry Pi OS trixie too) and
# amd64, from Debian packages only:
#
#   earshotd, earshot   Swift, release, --static-swift-stdlib (no Swift runtime needed on the target)
#   earshot-c           the C client program (links libearshot-client statically)
#   libearshot-client   shared (libearshot-client.so.0.1.0) and static (.a)
#
#   scripts/cross-build.sh                    # arm64 into .build-cross/arm64/
#   scripts/cross-build.sh --arch all --check # arm64 and amd64, then a smoke test of each
#   scripts/cross-build.sh --tests            # only: 6.2 debug build of everything, tests included
#   scripts/cross-build.sh --clean            # removes the cache and .build-cross/, nothing else
#   scripts/cross-build.sh --help
#
# How. The compiler is Debian sid's `swiftlang` (trixie's is too old), whose amd64 build needs a
# newer glibc than this machine's, so it runs in a sid amd64 chroot made by debootstrap. For each
# target architecture a Swift SDK bundle (the .artifactbundle layout of swift-sdk-generator: info.json,
# swift-sdk.json, toolset.json) is made whose sysroot is trixie's -dev packages for that
# architecture and their dependency closure, unpacked with dpkg-deb, plus the Swift runtime and
# modules of that architecture's `swiftlang` / `libswiftlang` from sid, of exactly the chroot
# compiler's version. `swift build --swift-sdk` builds against it; the chroot's clang and lld
# (shipped in swiftlang) build the C client with `--target --sysroot` through clients/c/Makefile.
# The binaries link against trixie's libraries (glibc 2.41; they need glibc >= 2.38, so bookworm
# cannot run them).
#
# Output (default <repo>/.build-cross/<arch>/, replaced whole on every successful run):
#   bin/earshotd bin/earshot bin/earshot-c          stripped executables
#   lib/libearshot-client.so.0.1.0                  stripped shared library (SONAME libearshot-client.so.0)
#   lib/libearshot-client.so.0, lib/libearshot-client.so   symbolic links to it
#   lib/libearshot-client.a                         static library, debug info stripped
#   debug/.build-id/NN/REST.debug                   detached debug info of each ELF file above, named by
#                                                   build id as in Debian's -dbgsym packages
#                                                   (usr/lib/debug/.build-id/); the stripped files carry a
#                                                   .gnu_debuglink to it
#   BUILDINFO                                       architecture, triple, compiler, source commit, the
#                                                   shared libraries each file needs (for Depends:) and
#                                                   the newest glibc symbol version it uses
#   sysroot-packages.txt                            the exact trixie packages linked against
#   SHA256SUMS                                      of everything above
# A packaging script copies bin/ to usr/bin, lib/ to usr/lib/<multiarch>, debug/ to usr/lib/debug.
#
# Cache (default /var/cache/earshot-cross; about 6 GB with both architectures; --cache DIR):
#   chroot/                   the sid amd64 build root with swiftlang (about 3.6 GB)
#   work/sdks/                one SDK bundle per architecture, its sysroot inside
#   work/apt/                 private apt state for the downloads (removed after each stage)
#   work/src/                 a copy of the repository (rsync; the chroot never writes to the repo)
#   work/scratch/<arch>/      SwiftPM's build folder: incremental across runs (never the repo's .build/,
#                             which belongs to the host's own Swift)
#   work/c/<arch>/            the C client's objects
#   stamps/                   one file per finished stage; a stage whose stamp is missing or names
#                             other inputs is done again, the others are skipped
#   logs/                     each stage's full output (printed in part when a stage fails)
# Everything the chroot needs is bind-mounted inside a private mount namespace, so the mounts are
# gone when the script ends, however it ends; the script also unmounts them itself on exit. A lock
# (flock on <cache>/lock) keeps a second run from starting while one is running.
#
# Needs: root (debootstrap, chroot, mounts), debootstrap, qemu-user-static (for --check on arm64),
# sox (for --check), network access to the Debian archive (EARSHOT_CROSS_MIRROR, default
# http://deb.debian.org/debian) on the first run. The Swift packages come from /opt/swift-packages
# through the host's /etc/gitconfig `url.<dir>.insteadOf` rules, which the chroot gets a copy of.
set -euo pipefail

mirror="${EARSHOT_CROSS_MIRROR:-http://deb.debian.org/debian}"
build_suite=sid        # where swiftlang is new enough (6.2); the chroot and the target runtime come from it
target_suite=trixie    # what the binaries are for
# Stamps carry this too: changing what a stage does below invalidates the stages built before.
layout_version=1

# The -dev packages the package and the C client link against (Package.swift's .systemLibrary
# targets, clients/c/Makefile's pkg-config names) and what Swift's link step needs from the
# target: C library, libgcc (crt files) and libstdc++ (the static Swift runtime uses it). gcc 14
# is trixie's default compiler.
sysroot_packages=(
  libc6-dev libgcc-14-dev libstdc++-14-dev
  libfftw3-dev libsndfile1-dev libopus-dev libsoxr-dev libasound2-dev
  libzmq3-dev libsodium-dev libsqlite3-dev libavahi-client-dev
  libavformat-dev libavcodec-dev libswresample-dev
  libcurl4-openssl-dev
  libprotobuf-c-dev
)
# Tools in the chroot beside swiftlang: git (SwiftPM fetches), rsync (the repository copy),
# pkg-config (the C client's Makefile), make, libc6-dev (the manifest is compiled for the chroot).
chroot_base_packages=git,rsync,pkg-config,make
chroot_packages=(swiftlang libc6-dev)
# What --tests installs in the chroot: the same libraries for amd64, natively, from sid.
test_packages=(libfftw3-dev libsndfile1-dev libopus-dev libsoxr-dev libasound2-dev libzmq3-dev libsodium-dev libsqlite3-dev libavahi-client-dev
               libavformat-dev libavcodec-dev libswresample-dev ffmpeg)

usage() {
  cat <<'EOF'
usage: scripts/cross-build.sh [--arch arm64|amd64|all] [--cache DIR] [--out DIR] [--check] [--tests] [--clean]

Builds earshotd, earshot (Swift, release, static Swift runtime), earshot-c and libearshot-client
(.so.0.1.0 and .a) for Debian 13 trixie, with Debian sid's swiftlang in a sid chroot and a Swift SDK
made of trixie's packages. Needs root. The first run downloads about 1.2 GB per architecture set and
takes about 10 minutes for arm64; later runs rebuild only what changed.

  --arch A     arm64 (default), amd64, or all (both)
  --cache DIR  chroot, SDKs and build folders (default /var/cache/earshot-cross, ~6 GB)
  --out DIR    where the results go (default <repo>/.build-cross); each architecture in DIR/<arch>/
               with bin/, lib/, debug/.build-id/, BUILDINFO, sysroot-packages.txt, SHA256SUMS
  --check      afterwards, run the results: --help of each, then a smoke test. arm64 runs under
               qemu-aarch64-static -L <sysroot>, amd64 through the sysroot's own loader: keygen and
               catalog create with the built earshot, the built earshotd on a synthesised file on
               127.0.0.1:17400/17401 with CURVE, and a match from the host's earshot (swift build
               here, in .build/) and from the built earshot-c
  --tests      instead of cross-building: a native amd64 debug build of the whole package, tests
               included, with the chroot's Swift 6.2 (the package must build on 6.2 and 6.3 alike)
  --clean      remove the cache and the output folder, then stop (a following run starts from nothing)
  -h, --help   this text

Environment: EARSHOT_CROSS_MIRROR (Debian mirror, default http://deb.debian.org/debian).
The script's header (sed -n 2,60p scripts/cross-build.sh) describes the output layout and the cache.
EOF
}

say() { printf 'cross-build: %s\n' "$*" >&3; }
die() { printf 'cross-build: error: %s\n' "$*" >&2; exit 1; }
duration() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

exec 3>&1

# --- Options -------------------------------------------------------------------------------------
arguments=("$@")
arch_choice=arm64 cache=/var/cache/earshot-cross out="" check=0 tests=0 clean=0
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) [ $# -ge 2 ] || die "--arch needs arm64, amd64 or all"; arch_choice=$2; shift 2 ;;
    --arch=*) arch_choice=${1#--arch=}; shift ;;
    --cache) [ $# -ge 2 ] || die "--cache needs a folder"; cache=$2; shift 2 ;;
    --cache=*) cache=${1#--cache=}; shift ;;
    --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --check) check=1; shift ;;
    --tests) tests=1; shift ;;
    --clean) clean=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
  esac
done
case "$arch_choice" in
  arm64) archs=(arm64) ;;
  amd64) archs=(amd64) ;;
  all) archs=(arm64 amd64) ;;
  *) die "--arch: arm64, amd64 or all, not '$arch_choice'" ;;
esac

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${out:-$repo/.build-cross}"
case "$cache" in /*) ;; *) cache="$PWD/$cache" ;; esac
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
cache="${cache%/}" out="${out%/}"
[ "$cache" != "" ] && [ "$cache" != "/" ] || die "--cache: not /"

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and bind mounts): sudo $0 $*"

# Everything from here runs in a private mount namespace: the chroot's bind mounts are invisible
# to the rest of the system and disappear with the script, even if it is killed.
if [ "${EARSHOT_CROSS_NAMESPACE:-}" != 1 ]; then
  command -v unshare >/dev/null || die "unshare (util-linux) is missing"
  exec unshare --mount --propagation private env EARSHOT_CROSS_NAMESPACE=1 bash "${BASH_SOURCE[0]}" "${arguments[@]}"
fi

mkdir -p "$cache" || die "cannot create the cache folder $cache"
exec 9>"$cache/lock"
flock -n 9 || die "another cross-build is running with the cache $cache (lock $cache/lock)"

chroot_dir="$cache/chroot"
work="$cache/work"          # bind-mounted at /cross in the chroot
stamps="$cache/stamps"
logs="$cache/logs"

# --- Cleanup on every exit path --------------------------------------------------------------------
mounts=()
daemon_pid=""
runner=()
check_dir=""
cleanup() {
  local status=$? i
  if [ -n "$daemon_pid" ]; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  [ -n "$check_dir" ] && rm -rf "$check_dir"
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" 2>/dev/null || true
  done
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Refuses to delete anything under which something is still mounted (a chroot's /dev, say).
assert_nothing_mounted_under() {
  local dir=$1
  if findmnt -rn -o TARGET | grep -q "^${dir%/}/"; then
    die "something is mounted under $dir (findmnt | grep $dir); unmount it first"
  fi
}

if [ $clean -eq 1 ]; then
  assert_nothing_mounted_under "$cache"
  say "removing $cache (keeping its lock file) and $out"
  find "$cache" -mindepth 1 -maxdepth 1 ! -name lock -exec rm -rf {} +
  rm -rf "$out"
  exit 0
fi

mkdir -p "$work" "$stamps" "$logs"

# --- Stages ------------------------------------------------------------------------------------------
# A stage's stamp holds the text of its inputs; the stage is skipped while the stamp holds the same.
stamp_matches() { [ -f "$stamps/$1" ] && [ "$(cat "$stamps/$1")" = "$2" ]; }
stamp_write() { printf '%s' "$2" > "$stamps/$1.tmp" && mv "$stamps/$1.tmp" "$stamps/$1"; }
stamp_drop() { rm -f "$stamps/$1"; }

# Runs a function with its output in logs/<name>.log; says how long it took, or shows the end of
# the log and the error lines and stops. (set -e holds inside: the function runs in a subshell
# that is not part of a condition.)
run_stage() {
  local id=$1 name=$2 start status; shift 2
  local log="$logs/$id.log"
  start=$(date +%s)
  say "$name …"
  : > "$log"
  set +e
  ( set -e; "$@" ) >>"$log" 2>&1
  status=$?
  set -e
  if [ $status -ne 0 ]; then
    printf '\n--- last lines of %s ---\n' "$log" >&2
    tail -n 40 "$log" >&2
    if grep -qiE '(^|[ :])error[: ]' "$log"; then
      printf -- '--- error lines ---\n' >&2
      grep -iE '(^|[ :])error[: ]' "$log" | sort -u | head -n 20 >&2
    fi
    explain_failure "$log"
    die "$name failed (exit $status); full output in $log"
  fi
  say "$name: done in $(duration $(($(date +%s) - start)))"
}

# Turns the usual causes of a failed download or write into one clear line.
explain_failure() {
  local log=$1
  if grep -qiE 'No space left on device' "$log"; then
    printf 'cross-build: the disk is full: %s\n' "$(df -h --output=avail,target "$cache" | tail -1)" >&2
  elif grep -qiE "Temporary failure resolving|Could not resolve|Failed to fetch|Connection (timed out|refused)|Network is unreachable|Couldn't download|Unable to connect" "$log"; then
    printf 'cross-build: could not reach the Debian archive %s (no network? set EARSHOT_CROSS_MIRROR)\n' "$mirror" >&2
  fi
}

# Stops early, with a clear message, when a stage that downloads will run without a network.
require_archive() {
  local url="$mirror/dists/$1/InRelease"
  if command -v curl >/dev/null; then
    curl -fsS --max-time 30 -o /dev/null "$url" 2>/dev/null ||
      die "cannot reach $url (no network, or the mirror is wrong: EARSHOT_CROSS_MIRROR)"
  fi
}

# Stops early when the cache's disk has less than $1 GB free.
require_space() {
  local need_gb=$1 what=$2 avail_kb
  avail_kb=$(df -Pk "$cache" | awk 'NR == 2 { print $4 }')
  [ "$avail_kb" -ge $((need_gb * 1024 * 1024)) ] ||
    die "$what needs about $need_gb GB free in $cache; $((avail_kb / 1024 / 1024)) GB are free"
}

# Runs a command in the chroot with a clean environment.
in_chroot() {
  chroot "$chroot_dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin "$@"
}

# Mounts what the chroot needs: /proc (Swift finds itself through /proc/self/exe), /dev, the
# Swift package mirror (read-only, same path), the repository (read-only, /srv/earshot) and the
# work folder (/cross). All inside this script's own mount namespace.
mount_chroot() {
  [ ${#mounts[@]} -eq 0 ] || return 0
  local repo_mount="$chroot_dir/srv/earshot"
  mkdir -p "$chroot_dir/proc" "$chroot_dir/dev" "$chroot_dir/cross" "$repo_mount"
  mount -t proc proc "$chroot_dir/proc"; mounts+=("$chroot_dir/proc")
  mount --bind /dev "$chroot_dir/dev"; mounts+=("$chroot_dir/dev")
  if [ -d /opt/swift-packages ]; then
    mkdir -p "$chroot_dir/opt/swift-packages"
    mount --bind /opt/swift-packages "$chroot_dir/opt/swift-packages"; mounts+=("$chroot_dir/opt/swift-packages")
    mount -o remount,bind,ro "$chroot_dir/opt/swift-packages"
  fi
  mount --bind "$repo" "$repo_mount"; mounts+=("$repo_mount")
  mount -o remount,bind,ro "$repo_mount"
  mount --bind "$work" "$chroot_dir/cross"; mounts+=("$chroot_dir/cross")
  cp -L /etc/resolv.conf "$chroot_dir/etc/resolv.conf" 2>/dev/null || true
}

# apt-get (or apt-cache) with a private state folder in /cross/apt/NAME: its own sources, lists,
# status (empty: nothing is installed, so "install --download-only" yields the whole dependency
# closure) and archives, for one architecture and suite. The chroot's own apt is not touched.
# Check-Valid-Until is off: mirrors that serve a frozen copy of sid or trixie still work.
private_apt() {
  local tool=$1 name=$2 arch=$3 suite=$4; shift 4
  local dir="/cross/apt/$name"
  mkdir -p "$work/apt/$name/lists/partial" "$work/apt/$name/archives/partial"
  touch "$work/apt/$name/status"
  printf 'deb [arch=%s signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
    "$arch" "$mirror" "$suite" > "$work/apt/$name/sources.list"
  # Runs in the archives folder: `apt-get download` writes there.
  in_chroot sh -c 'cd "$0" && exec "$@"' "$dir/archives" "$tool" -q \
    -o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null \
    -o Dir::State::Lists="$dir/lists" -o Dir::State::status="$dir/status" \
    -o Dir::Cache="$dir/cache" -o Dir::Cache::archives="$dir/archives" \
    -o APT::Architecture="$arch" -o APT::Architectures::="$arch" \
    -o APT::Install-Recommends=false -o Acquire::Check-Valid-Until=false \
    -o APT::Sandbox::User=root -o Debug::NoLocking=true "$@"
}

deb_arch_triplet() { case $1 in arm64) echo aarch64-linux-gnu ;; amd64) echo x86_64-linux-gnu ;; esac; }
sdk_id() { echo "earshot-$target_suite-$1"; }
sdk_bundle() { echo "$work/sdks/$(sdk_id "$1").artifactbundle"; }
# The sysroot of an architecture, on the host (add nothing) or in the chroot (/cross instead of $work).
sysroot_of() { echo "$(sdk_bundle "$1")/$(sdk_id "$1")/sysroot"; }
in_chroot_path() { echo "/cross${1#"$work"}"; }

# --- Stage: the sid chroot -------------------------------------------------------------------------
chroot_key="$layout_version $build_suite minbase $chroot_base_packages $mirror"
make_chroot() {
  rm -rf "$chroot_dir.partial"
  debootstrap --variant=minbase --include="$chroot_base_packages" "$build_suite" "$chroot_dir.partial" "$mirror"
  # No cached packages' languages, no recommends; tolerate a mirror's frozen sid (see private_apt).
  cat > "$chroot_dir.partial/etc/apt/apt.conf.d/90earshot-cross" <<'EOF'
APT::Install-Recommends "false";
Acquire::Languages "none";
Acquire::Check-Valid-Until "false";
EOF
  rm -rf "$chroot_dir"
  mv "$chroot_dir.partial" "$chroot_dir"
}

# The host's url.<dir>.insteadOf rules (the local Swift package mirror), copied into the chroot.
copy_git_rules() {
  local key value
  rm -f "$chroot_dir/etc/gitconfig"
  while read -r key value; do
    git config --file "$chroot_dir/etc/gitconfig" --add "$key" "$value"
  done < <(git config --system --get-regexp '^url\..*\.insteadof$' 2>/dev/null || true)
}

# --- Stage: swiftlang in the chroot ----------------------------------------------------------------
swift_key="$layout_version ${chroot_packages[*]}"
install_swiftlang() {
  in_chroot apt-get update
  in_chroot env DEBIAN_FRONTEND=noninteractive apt-get install -y "${chroot_packages[@]}"
  in_chroot apt-get clean
  in_chroot swift --version
}
swiftlang_version() { in_chroot dpkg-query -W -f='${Version}' swiftlang; }

# --- Stage: the trixie sysroot of one architecture ---------------------------------------------------
sysroot_key() { echo "$layout_version $1 $target_suite $mirror ${sysroot_packages[*]}"; }
make_sysroot() {
  local arch=$1 name="$target_suite-$1" sysroot partial deb link target
  sysroot=$(sysroot_of "$arch")
  partial="$sysroot.partial"
  rm -rf "$work/apt/$name/archives"
  private_apt apt-get "$name" "$arch" "$target_suite" update
  private_apt apt-get "$name" "$arch" "$target_suite" install -y --download-only "${sysroot_packages[@]}"
  rm -rf "$partial"
  # trixie's packages install under /usr only; the merged-/usr links make /lib/ld-linux-*.so.*
  # (the programs' interpreter) and /lib/<triplet> resolve as on an installed system.
  mkdir -p "$partial/usr/bin" "$partial/usr/lib" "$partial/usr/sbin"
  ln -s usr/bin "$partial/bin"; ln -s usr/lib "$partial/lib"; ln -s usr/sbin "$partial/sbin"
  if [ "$arch" = amd64 ]; then mkdir -p "$partial/usr/lib64"; ln -s usr/lib64 "$partial/lib64"; fi
  : > "$partial.packages"
  for deb in "$work/apt/$name/archives"/*.deb; do
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$partial" --keep-directory-symlink --no-same-owner
    dpkg-deb --show --showformat='${Package} ${Version} ${Architecture}\n' "$deb" >> "$partial.packages"
  done
  sort -o "$partial.packages" "$partial.packages"
  # Absolute links would point into the host when the linker or qemu follows them: make them
  # relative to the sysroot.
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    ln -sfn "$(realpath -s -m --relative-to="$(dirname "$link")" "$partial$target")" "$link"
  done < <(find "$partial" -type l -lname '/*' -print0)
  echo "$(wc -l < "$partial.packages") packages; $(find "$partial" -type l -lname '/*' | wc -l) absolute links left"
  rm -rf "$sysroot" "$sysroot.packages"
  mkdir -p "$(dirname "$sysroot")"
  mv "$partial" "$sysroot"
  mv "$partial.packages" "$sysroot.packages"
  rm -rf "${work:?}/apt/$name"
}

# --- Stage: the Swift SDK bundle of one architecture ------------------------------------------------
# Adds the Swift runtime of the target architecture, from sid's swiftlang and libswiftlang of the
# chroot compiler's exact version, into the sysroot's usr/lib/{swift,swift_static,clang} (where
# the Swift driver looks for swiftrt.o and the static runtime) and writes the bundle's JSON files.
sdk_key() { echo "$layout_version $1 swiftlang=$2 sysroot=$(cat "$stamps/sysroot-$1")"; }
make_sdk() {
  local arch=$1 version=$2 name="$build_suite-$1" sysroot bundle triple debs
  sysroot=$(sysroot_of "$arch")
  bundle=$(sdk_bundle "$arch")
  rm -rf "$work/apt/$name/archives"
  private_apt apt-get "$name" "$arch" "$build_suite" update
  if ! private_apt apt-cache "$name" "$arch" "$build_suite" show "swiftlang=$version" >/dev/null 2>&1; then
    echo "error: $build_suite has no swiftlang $version for $arch (it has:" \
      "$(private_apt apt-cache "$name" "$arch" "$build_suite" madison swiftlang | awk -F'|' '{print $2}' | xargs))."
    echo "error: the target runtime must be the chroot compiler's version: when sid has moved on, remove" \
      "$chroot_dir (or run --clean) to take sid's current swiftlang for both."
    return 1
  fi
  private_apt apt-get "$name" "$arch" "$build_suite" download "swiftlang=$version" "libswiftlang=$version"
  debs=("$work/apt/$name/archives/swiftlang_${version//:/%3a}_$arch.deb"
        "$work/apt/$name/archives/libswiftlang_${version//:/%3a}_$arch.deb")
  rm -rf "$sysroot/usr/lib/swift" "$sysroot/usr/lib/swift_static" "$sysroot/usr/lib/clang"
  # swiftlang: modules, static runtime, swiftrt.o, clang's resource headers. Not the compiler's
  # plugins (host), embedded-Swift modules or PackageDescription (the chroot's own are used).
  dpkg-deb --fsys-tarfile "${debs[0]}" | tar -x -C "$sysroot" --keep-directory-symlink --no-same-owner \
    --wildcards --transform='s,^\./usr/libexec/swift/lib/,./usr/lib/,' \
    --exclude='./usr/libexec/swift/lib/swift/host' --exclude='./usr/libexec/swift/lib/swift/embedded' \
    --exclude='./usr/libexec/swift/lib/swift/pm' --exclude='./usr/libexec/swift/lib/swift/migrator' \
    './usr/libexec/swift/lib/swift/*' './usr/libexec/swift/lib/swift_static/*' './usr/libexec/swift/lib/clang/*'
  # libswiftlang: the shared runtime (for dynamically linked programs and tests).
  dpkg-deb --fsys-tarfile "${debs[1]}" | tar -x -C "$sysroot" --keep-directory-symlink --no-same-owner \
    --wildcards --transform='s,^\./usr/libexec/swift/lib/,./usr/lib/,' \
    --exclude='./usr/libexec/swift/lib/swift/host' './usr/libexec/swift/lib/swift/linux/*'
  rm -rf "${work:?}/apt/$name"
  # The target triple is the one Debian built the runtime's modules for (amd64: x86_64-pc-linux-gnu).
  triple=$(basename "$(ls "$sysroot/usr/lib/swift/linux/Swift.swiftmodule/"*.swiftmodule | head -n 1)" .swiftmodule)
  [ -f "$sysroot/usr/lib/swift_static/linux/${triple%%-*}/swiftrt.o" ] || { echo "error: no swiftrt.o for $triple"; return 1; }
  cat > "$bundle/info.json" <<EOF
{
  "schemaVersion": "1.0",
  "artifacts": {
    "$(sdk_id "$arch")": {
      "type": "swiftSDK",
      "version": "$version",
      "variants": [ { "path": "$(sdk_id "$arch")" } ]
    }
  }
}
EOF
  cat > "$bundle/$(sdk_id "$arch")/swift-sdk.json" <<EOF
{
  "schemaVersion": "4.0",
  "targetTriples": {
    "$triple": {
      "sdkRootPath": "sysroot",
      "swiftResourcesPath": "sysroot/usr/lib/swift",
      "swiftStaticResourcesPath": "sysroot/usr/lib/swift_static",
      "toolsetPaths": [ "toolset.json" ]
    }
  }
}
EOF
  echo "$triple" > "$bundle/$(sdk_id "$arch")/triple"
  echo "SDK $(sdk_id "$arch") for $triple, Swift runtime $version"
}
# How the SDK's builds compile and link. Written on every run (not part of the stamped SDK
# stage), so that a change here takes effect without fetching the runtime again.
write_toolset() {
  local arch=$1
  # The chroot's clang links, with the lld that swiftlang ships (the chroot's GNU ld is x86-only).
  # --no-export-dynamic undoes the -export-dynamic of Swift's static-stdlib link: an executable
  # that exports every public symbol of its modules can drop none of them, and carries them all
  # in its dynamic symbol table. RELR (glibc >= 2.36) packs the relative relocations of the PIE.
  # Together: 3 MB less earshotd (benchmarks/RESULTS.md, "Footprint"). -z now: every symbol
  # is bound at start, so the relocated tables can be read-only from then on (as Debian builds).
  cat > "$(sdk_bundle "$arch")/$(sdk_id "$arch")/toolset.json" <<'EOF'
{
  "schemaVersion": "1.0",
  "swiftCompiler": { "extraCLIOptions": [ "-use-ld=lld" ] },
  "linker": { "extraCLIOptions": [ "--no-export-dynamic", "-z", "pack-relative-relocs", "-z", "now" ] }
}
EOF
}

sdk_triple() { cat "$(sdk_bundle "$1")/$(sdk_id "$1")/triple"; }

# --- Stage: the sources ----------------------------------------------------------------------------
# A copy, so that the chroot never writes into the repository and its .build/ stays the host's.
# rsync keeps modification times: SwiftPM and make rebuild only what changed.
sync_sources() {
  in_chroot rsync -a --delete \
    --exclude=/.build --exclude='/.build-*' --exclude='/.build_*' --exclude=/.git --exclude=/.swiftpm \
    --exclude=/benchmarks/cache --exclude='/clients/c/build' --exclude='/clients/c/build-*' \
    /srv/earshot/ /cross/src/
}

# --- Stage: Swift build ----------------------------------------------------------------------------
swift_build() {
  local arch=$1 sysroot triplet product
  sysroot=$(in_chroot_path "$(sysroot_of "$arch")")
  triplet=$(deb_arch_triplet "$arch")
  for product in earshotd earshot; do
    # pkg-config: SwiftPM reads the sysroot's .pc files and puts the sysroot in front of their paths.
    in_chroot env PKG_CONFIG_PATH="$sysroot/usr/lib/$triplet/pkgconfig:$sysroot/usr/share/pkgconfig" \
      PKG_CONFIG_SYSROOT_DIR="$sysroot" \
      swift build -c release --static-swift-stdlib --disable-local-rpath --package-path /cross/src \
      --swift-sdks-path /cross/sdks --swift-sdk "$(sdk_id "$arch")" \
      --scratch-path "/cross/scratch/$arch" --product "$product"
  done
}

# --- Stage: C client -------------------------------------------------------------------------------
c_build() {
  local arch=$1 sysroot triplet
  sysroot=$(in_chroot_path "$(sysroot_of "$arch")")
  triplet=$(deb_arch_triplet "$arch")
  in_chroot env PKG_CONFIG_SYSROOT_DIR="$sysroot" \
    PKG_CONFIG_LIBDIR="$sysroot/usr/lib/$triplet/pkgconfig:$sysroot/usr/share/pkgconfig" \
    make -C /cross/src/clients/c BUILD="/cross/c/$arch" \
    CC="/usr/libexec/swift/bin/clang --target=$triplet --sysroot=$sysroot" \
    AR=/usr/libexec/swift/bin/llvm-ar CPPFLAGS="-D_FORTIFY_SOURCE=2" \
    LDFLAGS="-fuse-ld=lld -Wl,--build-id=sha1 -Wl,-z,relro,-z,now" \
    lib "/cross/c/$arch/earshot-c"
}

# --- Stage: collect the results ---------------------------------------------------------------------
# Stripped copies, debug files named by build id, BUILDINFO, the package list, checksums: first
# into work/out/<arch>, then in place of <out>/<arch> in one move.
collect() {
  local arch=$1 stage="$work/out/$1" bin triple file id name strip commit
  triple=$(sdk_triple "$arch")
  bin="$work/scratch/$arch/$triple/release"
  rm -rf "$stage"
  mkdir -p "$stage/bin" "$stage/lib" "$stage/debug/.build-id"
  cp "$bin/earshotd" "$bin/earshot" "$work/c/$arch/earshot-c" "$stage/bin/"
  cp "$work/c/$arch/libearshot-client.so.0.1.0" "$work/c/$arch/libearshot-client.a" "$stage/lib/"
  ln -s libearshot-client.so.0.1.0 "$stage/lib/libearshot-client.so.0"
  ln -s libearshot-client.so.0.1.0 "$stage/lib/libearshot-client.so"
  local objcopy=/usr/libexec/swift/bin/llvm-objcopy
  for file in bin/earshotd bin/earshot bin/earshot-c lib/libearshot-client.so.0.1.0; do
    # Executables lose every symbol; the library keeps those it exports (as dh_strip does).
    case $file in lib/*) strip=--strip-unneeded ;; *) strip=--strip-all ;; esac
    id=$(readelf -n "$stage/$file" | awk '/Build ID:/ { print $3 }')
    [ -n "$id" ] || { echo "error: $file has no build id"; return 1; }
    name="debug/.build-id/${id:0:2}/${id:2}.debug"
    mkdir -p "$stage/$(dirname "$name")"
    in_chroot "$objcopy" --only-keep-debug "$(in_chroot_path "$stage/$file")" "$(in_chroot_path "$stage/$name")"
    in_chroot "$objcopy" "$strip" --add-gnu-debuglink="$(in_chroot_path "$stage/$name")" \
      "$(in_chroot_path "$stage/$file")"
    chmod 644 "$stage/$name"
  done
  in_chroot "$objcopy" --strip-debug "$(in_chroot_path "$stage/lib/libearshot-client.a")"
  cp "$(sysroot_of "$arch").packages" "$stage/sysroot-packages.txt"
  {
    echo "architecture: $arch"
    echo "triple: $triple"
    echo "target: Debian $target_suite ($arch); sysroot packages in sysroot-packages.txt"
    echo "compiler: $(in_chroot swift --version 2>/dev/null | head -n 1) (Debian $build_suite swiftlang $(swiftlang_version))"
    echo "c compiler: $(in_chroot /usr/libexec/swift/bin/clang --version | head -n 1)"
    if commit=$(git -C "$repo" rev-parse HEAD 2>/dev/null); then
      echo "source: $commit$(git -C "$repo" diff --quiet HEAD -- || echo ' with uncommitted changes')"
    else
      echo "source: $repo (not a git work tree)"
    fi
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    for file in bin/earshotd bin/earshot bin/earshot-c lib/libearshot-client.so.0.1.0; do
      echo "$file needs: $(readelf -d "$stage/$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | paste -sd' ')"
      echo "$file newest glibc symbol: $(readelf -V -W "$stage/$file" | grep -oE 'GLIBC_[0-9]+\.[0-9]+' | sort -Vu | tail -n 1)"
    done
  } > "$stage/BUILDINFO"
  (cd "$stage" && find . -type f ! -name SHA256SUMS -printf '%P\n' | sort | xargs sha256sum > SHA256SUMS)
  mkdir -p "$out"
  rm -rf "$out/$arch.new"
  cp -a "$stage" "$out/$arch.new"
  rm -rf "${out:?}/$arch"
  mv "$out/$arch.new" "$out/$arch"
  rm -rf "$stage"
}

# What `file` must say about each result, and the stripped sizes.
verify() {
  local arch=$1 dir="$out/$1" machine interp f desc
  case $arch in
    arm64) machine="ARM aarch64" interp=/lib/ld-linux-aarch64.so.1 ;;
    amd64) machine="x86-64" interp=/lib64/ld-linux-x86-64.so.2 ;;
  esac
  for f in bin/earshotd bin/earshot bin/earshot-c; do
    desc=$(file -b "$dir/$f")
    case $desc in
      *"ELF 64-bit LSB pie executable, $machine"*"dynamically linked, interpreter $interp"*"stripped"*) ;;
      *) die "$dir/$f is not what it should be: $desc" ;;
    esac
    case $desc in *"not stripped"*) die "$dir/$f is not stripped" ;; esac
  done
  desc=$(file -b "$dir/lib/libearshot-client.so.0.1.0")
  case $desc in
    *"ELF 64-bit LSB shared object, $machine"*) ;;
    *) die "$dir/lib/libearshot-client.so.0.1.0 is not what it should be: $desc" ;;
  esac
  if readelf -d "$dir/bin/earshotd" "$dir/bin/earshot" | grep -q 'NEEDED.*libswift'; then
    die "earshotd or earshot needs a shared Swift runtime (--static-swift-stdlib did not hold)"
  fi
  say "[$arch] file: ELF $machine, interpreter $interp"
  say "[$arch] stripped: earshotd $(stat -c %s "$dir/bin/earshotd") bytes, earshot $(stat -c %s "$dir/bin/earshot") bytes," \
    "earshot-c $(stat -c %s "$dir/bin/earshot-c"), libearshot-client.so.0.1.0 $(stat -c %s "$dir/lib/libearshot-client.so.0.1.0")"
  say "[$arch] $(grep 'earshotd newest glibc' "$dir/BUILDINFO")"
}

# --- --check: run the results ------------------------------------------------------------------------
check_port_rpc=17400
check_port_events=17401
# How a target program runs here (the array `runner`, put in front of the program): arm64 under
# qemu with the sysroot as its root for libraries, amd64 through the sysroot's own dynamic loader
# and libraries (so both use trixie's libraries). No binfmt_misc: nothing system-wide changes.
set_runner() {
  local sysroot
  sysroot=$(sysroot_of "$1")
  case $1 in
    arm64) runner=(qemu-aarch64-static -L "$sysroot") ;;
    amd64) runner=("$sysroot/usr/lib64/ld-linux-x86-64.so.2" --inhibit-cache
                   --library-path "$sysroot/usr/lib/x86_64-linux-gnu") ;;
  esac
}
run_target() { shift; "${runner[@]}" "$@"; }

# Retries `match` until it finds the piece (the daemon needs a few seconds of audio first).
match_until_found() {
  local what=$1 deadline=$(($(date +%s) + 120)) status; shift
  while :; do
    set +e
    "$@" > "$check_dir/$what.out" 2>&1
    status=$?
    set -e
    if [ $status -eq 0 ] && grep -q smoke "$check_dir/$what.out"; then
      sed 's/^/    /' "$check_dir/$what.out" | head -n 8 >&3
      return 0
    fi
    [ "$(date +%s)" -lt "$deadline" ] || {
      cat "$check_dir/$what.out" >&2; echo "--- earshotd log ---" >&2; tail -n 30 "$check_dir/earshotd.log" >&2
      die "$what found no match in 120 s (last exit status $status)"
    }
    kill -0 "$daemon_pid" 2>/dev/null || { tail -n 30 "$check_dir/earshotd.log" >&2; die "earshotd ended during the check"; }
    sleep 3
  done
}

smoke_test() {
  local arch=$1 dir="$out/$1/bin" host_earshot t
  t=$(date +%s)
  case $arch in
    arm64) command -v qemu-aarch64-static >/dev/null ||
             die "--check needs qemu-aarch64-static: apt-get install qemu-user-static" ;;
  esac
  command -v sox >/dev/null || die "--check needs sox: apt-get install sox"
  set_runner "$arch"
  if command -v ss >/dev/null && ss -ltnH | awk '{print $4}' | grep -qE ":($check_port_rpc|$check_port_events)\$"; then
    die "--check needs the ports $check_port_rpc and $check_port_events on 127.0.0.1, and something listens there"
  fi

  run_target "$arch" "$dir/earshotd" --help > /dev/null || die "[$arch] earshotd --help failed"
  run_target "$arch" "$dir/earshot" --help > /dev/null || die "[$arch] earshot --help failed"
  say "[$arch] check: earshotd --help and earshot --help run"

  # The host's own earshot, built with the host's Swift in the repository's .build/ (the debug
  # build scripts/test.sh makes: nothing to do when it is there).
  say "[$arch] check: the host's earshot (swift build --product earshot) …"
  (cd "$repo" && PATH="/opt/swift/usr/bin:$PATH" swift build --product earshot) > "$logs/host-earshot.log" 2>&1 ||
    { tail -n 30 "$logs/host-earshot.log" >&2; die "the host's swift build of earshot failed (log $logs/host-earshot.log)"; }
  host_earshot="$(cd "$repo" && PATH="/opt/swift/usr/bin:$PATH" swift build --show-bin-path)/earshot"

  check_dir=$(mktemp -d)
  (
    cd "$check_dir"
    source "$repo/scripts/lib/synth-music.sh"
    synth_piece smoke 5 40 44100
    printf 'file,id,title,artist\nsmoke.wav,smoke,Smoke Test,Earshot Cross-Build\n' > items.csv
  ) || die "[$arch] could not synthesise the test audio with sox"
  mkdir -p "$check_dir/state/catalogs"
  run_target "$arch" "$dir/earshot" catalog create -o "$check_dir/state/catalogs/smoke.earcat" \
    "$check_dir/smoke.wav" --media-items "$check_dir/items.csv" > "$check_dir/catalog.out" 2>&1 ||
    { cat "$check_dir/catalog.out" >&2; die "[$arch] earshot catalog create failed"; }
  run_target "$arch" "$dir/earshot" keygen -o "$check_dir/client" > "$check_dir/keygen.out" 2>&1 ||
    { cat "$check_dir/keygen.out" >&2; die "[$arch] earshot keygen failed"; }
  tail -n 1 "$check_dir/keygen.out" > "$check_dir/state/clients.allow"
  [ -s "$check_dir/client.key" ] || die "[$arch] earshot keygen wrote no client.key"
  say "[$arch] check: earshot keygen and earshot catalog create work"

  # Started directly (not through a function) so that $! is the daemon (or qemu) itself.
  "${runner[@]}" "$dir/earshotd" --daemon.state_directory="$check_dir/state" \
    --audio.source=file --audio.file="$check_dir/smoke.wav" \
    --rpc.listen="[\"tcp://127.0.0.1:$check_port_rpc\"]" --events.listen="[\"tcp://127.0.0.1:$check_port_events\"]" \
    > "$check_dir/earshotd.log" 2>&1 &
  daemon_pid=$!
  local deadline=$(($(date +%s) + 120))
  until grep -q "listening on" "$check_dir/earshotd.log" 2>/dev/null; do
    kill -0 "$daemon_pid" 2>/dev/null || { cat "$check_dir/earshotd.log" >&2; die "[$arch] earshotd did not start"; }
    [ "$(date +%s)" -lt "$deadline" ] || { cat "$check_dir/earshotd.log" >&2; die "[$arch] earshotd did not listen within 120 s"; }
    sleep 1
  done
  [ -s "$check_dir/state/server.public" ] || die "[$arch] earshotd made no server.public"
  say "[$arch] check: earshotd listens on 127.0.0.1:$check_port_rpc (CURVE), playing smoke.wav"

  export EARSHOT_SERVER_KEY="$check_dir/state/server.public" EARSHOT_CLIENT_KEY="$check_dir/client.key"
  say "[$arch] check: host (x86_64, Swift 6.3) earshot remote match:"
  match_until_found host-match "$host_earshot" remote match --server "tcp://127.0.0.1:$check_port_rpc"
  say "[$arch] check: $arch earshot-c match:"
  match_until_found c-match run_target "$arch" "$dir/earshot-c" match --server "tcp://127.0.0.1:$check_port_rpc"
  unset EARSHOT_SERVER_KEY EARSHOT_CLIENT_KEY

  kill -TERM "$daemon_pid"
  wait "$daemon_pid" 2>/dev/null || true
  daemon_pid=""
  rm -rf "$check_dir"; check_dir=""
  say "[$arch] check: passed in $(duration $(($(date +%s) - t)))"
}

# --- --tests: 6.2 debug build with tests ------------------------------------------------------------
test_key="$layout_version ${test_packages[*]}"
install_test_packages() {
  in_chroot env DEBIAN_FRONTEND=noninteractive apt-get install -y "${test_packages[@]}"
}
# sid's swiftlang ships the _Testing_Foundation module (the Testing-with-Foundation overlay,
# linked automatically into test bundles that import both) but not its library: an empty archive
# of that name lets the bundle link, which then proves nothing of ours needs the overlay.
tests_build() {
  in_chroot mkdir -p /cross/stubs
  in_chroot /usr/libexec/swift/bin/llvm-ar rc /cross/stubs/lib_Testing_Foundation.a
  in_chroot swift build --build-tests --package-path /cross/src --scratch-path /cross/scratch/tests-amd64 \
    -Xlinker -L/cross/stubs
}

# --- Main --------------------------------------------------------------------------------------------
for tool in debootstrap chroot flock findmnt dpkg-deb readelf file git; do
  command -v "$tool" >/dev/null || die "$tool is missing (apt-get install debootstrap binutils file git util-linux)"
done
started=$(date +%s)

if ! stamp_matches chroot "$chroot_key" || [ ! -x "$chroot_dir/usr/bin/apt-get" ]; then
  assert_nothing_mounted_under "$chroot_dir"
  require_space 8 "the sid chroot with swiftlang (and the rest of a first run)"
  require_archive "$build_suite"
  stamp_drop swiftlang
  run_stage chroot "sid chroot (debootstrap --variant=minbase)" make_chroot
  stamp_write chroot "$chroot_key"
else
  say "sid chroot: ready"
fi
copy_git_rules
mount_chroot

if ! stamp_matches swiftlang "$swift_key" || ! in_chroot dpkg-query -W -f='${Status}' swiftlang 2>/dev/null | grep -q 'ok installed'; then
  require_space 4 "swiftlang in the chroot"
  require_archive "$build_suite"
  run_stage swiftlang "swiftlang in the chroot (apt-get install ${chroot_packages[*]})" install_swiftlang
  stamp_write swiftlang "$swift_key"
else
  say "swiftlang in the chroot: ready"
fi
version=$(swiftlang_version)
say "compiler: $(in_chroot swift --version 2>/dev/null | head -n 1) (swiftlang $version)"

run_stage sources "copy of the sources (rsync)" sync_sources

if [ $tests -eq 1 ]; then
  if ! stamp_matches testdeps "$test_key"; then
    require_archive "$build_suite"
    run_stage testdeps "test libraries in the chroot (apt-get install ${test_packages[*]})" install_test_packages
    stamp_write testdeps "$test_key"
  fi
  run_stage tests-build "[amd64] Swift 6.2 debug build with tests (swift build --build-tests)" tests_build
  say "done in $(duration $(($(date +%s) - started))); compiler output in $logs/tests-build.log"
  exit 0
fi

for arch in "${archs[@]}"; do
  if ! stamp_matches "sysroot-$arch" "$(sysroot_key "$arch")" || [ ! -d "$(sysroot_of "$arch")/usr/include" ]; then
    require_space 2 "the $arch sysroot"
    require_archive "$target_suite"
    stamp_drop "sdk-$arch"
    run_stage "sysroot-$arch" "[$arch] $target_suite sysroot (${#sysroot_packages[@]} -dev packages and their dependencies)" make_sysroot "$arch"
    stamp_write "sysroot-$arch" "$(sysroot_key "$arch")"
  else
    say "[$arch] $target_suite sysroot: ready"
  fi
  if ! stamp_matches "sdk-$arch" "$(sdk_key "$arch" "$version")" || [ ! -f "$(sdk_bundle "$arch")/info.json" ]; then
    require_space 2 "the $arch Swift runtime"
    run_stage "sdk-$arch" "[$arch] Swift SDK (swiftlang $version runtime for $arch)" make_sdk "$arch" "$version"
    stamp_write "sdk-$arch" "$(sdk_key "$arch" "$version")"
  else
    say "[$arch] Swift SDK $(sdk_id "$arch"): ready"
  fi
  write_toolset "$arch"
  require_space 2 "the $arch build"
  run_stage "swift-$arch" "[$arch] swift build earshotd, earshot (release, static Swift runtime)" swift_build "$arch"
  run_stage "c-$arch" "[$arch] C client (make lib earshot-c)" c_build "$arch"
  run_stage "collect-$arch" "[$arch] strip, debug files, BUILDINFO into $out/$arch" collect "$arch"
  verify "$arch"
done

if [ $check -eq 1 ]; then
  for arch in "${archs[@]}"; do smoke_test "$arch"; done
fi
say "done in $(duration $(($(date +%s) - started))): ${archs[*]} in $out"
