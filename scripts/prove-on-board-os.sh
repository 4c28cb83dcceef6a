#!/usr/bin/env bash
# Proves that Earshot's Debian packages work on the board's OS, as a new user's Raspberry Pi would
# run them: a Debian 13 "trixie" arm64 root file system (debootstrap; its arm64 programs run under
# qemu-user-static through binfmt_misc), the four packages installed there with that root's own
# apt, the daemon run as its systemd unit says, and driven over CURVE from this machine's x86 CLI
# and from the arm64 C client inside the root. Then stop, upgrade, purge.
#
#   scripts/prove-on-board-os.sh                  # arm64, emulated: about 6 minutes on 2 cores; the
#                                                 # first run adds the root file system, about 6 more
#                                                 # (debootstrap 4, apt-get update 1, gcc 1)
#   scripts/prove-on-board-os.sh --arch amd64     # the same proof natively in a trixie amd64 root
#                                                 # (about 3 minutes; the root: 40 s)
#   scripts/prove-on-board-os.sh --build          # first (re)build missing or stale packages
#   scripts/prove-on-board-os.sh --help
#
# Steps (each one PASS, FAIL or SKIP in the summary; the exit status is 0 only if none failed):
#   binfmt     arm64: binfmt_misc mounted (if it was not; in the private mount namespace, see below)
#              and an aarch64 handler registered as `update-binfmts --enable qemu-aarch64` would,
#              under the name earshot-qemu-aarch64, with the F flag (the interpreter is opened now,
#              so the root needs no qemu binary), unless an enabled aarch64 handler with F is there
#              already (then it is used and left alone). Undone on every exit path; the state
#              before and after, as the rest of the system sees it, is printed and compared (step
#              "binfmt restored", run by the outer process after the proof has ended).
#   root       debootstrap --variant=minbase trixie into <cache>/trixie-ARCH-root, reused while its
#              stamp matches and it runs (--fresh makes it again), then apt-get update and the tools
#              of the C step (gcc, libc6-dev, pkgconf) in it. The host's apt is never touched.
#   install    the packages of .build-cross/debs (earshotd, earshot, libearshot-client0,
#              libearshot-client-dev) copied in and installed with `apt-get install -y ./….deb`,
#              which pulls their Depends from the Debian archive; user, group, folders, unit checked.
#   media      a programme (episode 2 of scripts/lib/demo-episodes.sh, synthesised with sox) and two
#              catalogs made with the host's x86 CLI; the first installed in
#              /var/lib/earshot/catalogs (owner earshot); an admin key (host CLI) and an operator key
#              (the arm64 CLI in the root: `earshot keygen`) in /var/lib/earshot/clients.allow; the
#              arm64 CLI reads the catalog back (`earshot catalog display`).
#   daemon     ExecStart, User, Group, SupplementaryGroups, UMask, NoNewPrivileges, LimitNOFILE and
#              LimitRTPRIO read from the installed earshotd.service and applied (setpriv, ulimit,
#              umask; no systemd in a chroot), with the installed /etc/earshot/earshotd.toml and only
#              the overrides a file source on loopback needs: --audio.source=file --audio.file=…
#              --rpc.listen/--events.listen on two free ports. CURVE stays on: the daemon makes its
#              key pair in /var/lib/earshot on first start.
#   clients    from the host's x86 CLI (earshot remote … --server-key ROOT/var/lib/earshot/server.public
#              --key …): prepare, match (the programme's item), catalog push of the second catalog
#              and catalog list, cues set (a CSV on the programme's reference), cues schedule and
#              cues follow, library add --match and library list; from inside the root: the arm64
#              CLI (remote state), earshot-c match and watch, and a C program compiled there with
#              `pkg-config --cflags --libs earshot-client` that pings the daemon (--no-c-compile
#              skips it).
#   stop       SIGTERM, as systemctl stop; the daemon must exit 0.
#   upgrade    packages of a higher version (scripts/build-debs.sh --version-suffix +proof1, from
#              .build-cross/ARCH) installed over them: the edited configuration, the keys, the
#              allow-list, the catalogs and the library must be unchanged, and the upgraded daemon
#              must serve the old keys and still list the library item (--no-upgrade skips it).
#   purge      apt-get purge of the four packages: no /etc/earshot, /var/lib/earshot, user or group
#              earshot (nor in audio's members), no package of ours known to dpkg, no file named
#              *earshot* left in the root. Then the root goes back to its baseline (the packages it
#              had once made; <cache>/trixie-ARCH-root.baseline): autoremove --purge of the
#              dependencies, and a purge of adduser, which autoremove keeps (Priority important).
#              A run stopped half-way is cleaned up the same way at the start of the next one.
# Under emulation only function is checked, never time: timeouts are generous and each step
# prints what it got. Step logs and the daemon's log are in <cache>/prove-ARCH/ (kept; the work
# folder inside the root, /opt/earshot-proof, is removed at the end).
#
# Packages. By default the script requires them (and says how to make them): the newest complete
# set of the architecture in .build-cross/debs (or --debs DIR); it warns when
# .build-cross/ARCH/BUILDINFO names another commit than HEAD. With --build it runs
# `scripts/cross-build.sh --arch ARCH` and `scripts/build-debs.sh --arch ARCH` first when the
# packages are missing, older than .build-cross/ARCH, or built from another commit than HEAD.
#
# Options:
#   --arch arm64|amd64   the architecture of the root and packages (default arm64)
#   --cache DIR          where the root file system lives (default /var/cache/earshot-cross, shared
#                        with scripts/cross-build.sh, whose --clean removes it too)
#   --debs DIR           the packages (default <repo>/.build-cross/debs)
#   --version V          which version of the packages (default: the newest complete set)
#   --build              (re)build missing or stale packages first (see above)
#   --fresh              debootstrap the root again even if the cached one is valid
#   --host-earshot PATH  the host's CLI (default <repo>/.build/debug/earshot; built with
#                        `swift build --product earshot` when missing)
#   --port N             the daemon's RPC port (events: N+1); default a free one from 20000-59999
#   --no-upgrade         skip the upgrade step
#   --no-c-compile       skip compiling the C program (and installing gcc in the root)
#   --root-only          only make (or check) the root file system and its tools, then stop: no
#                        packages needed (to prepare the cache ahead)
#   -h, --help           this text
#
# Needs: root, debootstrap, qemu-user-static (arm64), sox, curl, util-linux (unshare, flock,
# findmnt), iproute2 (ss), network access to the Debian archive (EARSHOT_CROSS_MIRROR, default
# http://deb.debian.org/debian, as scripts/cross-build.sh). Everything mounted for the root
# (/proc, /dev, /sys, binfmt_misc) is mounted in a private mount namespace (unshare -m), so it is
# invisible to the rest of the system and gone when the script ends, however it ends; the script
# unmounts it itself too. The binfmt registration is not per namespace: it lives as long as some
# binfmt_misc mount does. When the host has none mounted, the kernel drops it with the private
# mount, so even a SIGKILL leaves nothing; when the host has one, the exit trap unregisters it,
# and if the proof was killed before its trap ran, the outer process removes it (and stops a
# daemon left running: <cache>/prove-ARCH/earshotd.pid).
set -euo pipefail

# The whole script is one compound command, read before it runs: editing the file during a run
# (a git pull) cannot change what the run does.
{
arguments=("$@")
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mirror="${EARSHOT_CROSS_MIRROR:-http://deb.debian.org/debian}"
suite=trixie
layout_version=1
binfmt_name=earshot-qemu-aarch64
binfmt_dir=/proc/sys/fs/binfmt_misc
packages=(earshotd earshot libearshot-client0 libearshot-client-dev)
root_tools=(gcc libc6-dev pkgconf)

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
say() { printf 'prove: %s\n' "$*"; }
die() { printf 'prove: error: %s\n' "$*" >&2; exit 1; }
duration() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

arch=arm64 cache=/var/cache/earshot-cross debs="" version_choice="" build=0 fresh=0
host_earshot="" port="" upgrade=1 c_compile=1 root_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) [ $# -ge 2 ] || die "--arch needs arm64 or amd64"; arch=$2; shift 2 ;;
    --arch=*) arch=${1#*=}; shift ;;
    --cache) [ $# -ge 2 ] || die "--cache needs a folder"; cache=$2; shift 2 ;;
    --cache=*) cache=${1#*=}; shift ;;
    --debs) [ $# -ge 2 ] || die "--debs needs a folder"; debs=$2; shift 2 ;;
    --debs=*) debs=${1#*=}; shift ;;
    --version) [ $# -ge 2 ] || die "--version needs a version"; version_choice=$2; shift 2 ;;
    --version=*) version_choice=${1#*=}; shift ;;
    --build) build=1; shift ;;
    --fresh) fresh=1; shift ;;
    --host-earshot) [ $# -ge 2 ] || die "--host-earshot needs a path"; host_earshot=$2; shift 2 ;;
    --host-earshot=*) host_earshot=${1#*=}; shift ;;
    --port) [ $# -ge 2 ] || die "--port needs a number"; port=$2; shift 2 ;;
    --port=*) port=${1#*=}; shift ;;
    --no-upgrade) upgrade=0; shift ;;
    --no-c-compile) c_compile=0; shift ;;
    --root-only) root_only=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option: $1 (see --help)" ;;
  esac
done
case "$arch" in
  arm64) triplet=aarch64-linux-gnu ;;
  amd64) triplet=x86_64-linux-gnu ;;
  *) die "--arch: arm64 or amd64, not '$arch'" ;;
esac
[ -z "$port" ] || { [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1024 ] && [ "$port" -le 65534 ]; } ||
  die "--port: a number from 1024 to 65534"
case "$cache" in /*) ;; *) cache="$PWD/$cache" ;; esac
cache="${cache%/}"
[ -n "$cache" ] || die "--cache: not /"
debs="${debs:-$repo/.build-cross/debs}"
case "$debs" in /*) ;; *) debs="$PWD/$debs" ;; esac
host_earshot="${host_earshot:-$repo/.build/debug/earshot}"
case "$host_earshot" in /*) ;; *) host_earshot="$PWD/$host_earshot" ;; esac

root="$cache/$suite-$arch-root"
state_dir="$cache/prove-$arch"       # logs, results, upgrade packages (outside the root)
logs="$state_dir/logs"
results="$state_dir/results.tsv"

# --- binfmt_misc: what is there (both processes) -------------------------------------------------
aarch64_magic=7f454c460201010000000000000000000200b700
# binfmt_state: the state as the rest of the system sees it: whether binfmt_misc is mounted in this
# (the host's) mount namespace, its status and every entry. When it is not mounted here, the
# entries are read through a mount in a throwaway private namespace (nothing changes).
binfmt_state() {
  local where
  where=$(findmnt -rn -t binfmt_misc -o TARGET 2>/dev/null | paste -sd' ' -)
  echo "mounted in the host's mount namespace: ${where:-no}"
  unshare --mount --propagation private sh -c '
    d=$1
    mountpoint -q "$d" || mount -t binfmt_misc binfmt_misc "$d" 2>/dev/null || { echo "binfmt_misc: cannot be mounted"; exit 0; }
    echo "status: $(cat "$d/status")"
    n=0
    for f in "$d"/*; do
      case ${f##*/} in register|status|"*") continue ;; esac
      n=$((n + 1))
      echo "entry ${f##*/}: $(tr "\n" " " < "$f" | sed "s/ *$//")"
    done
    echo "entries: $n"' sh "$binfmt_dir"
}

# ---------------------------------------------------------------------------------------------------
# Outer process: checks, packages, the binfmt state before; then the proof itself in a private
# mount namespace; then the binfmt state after, and the summary.
# ---------------------------------------------------------------------------------------------------
if [ "${EARSHOT_PROVE_INNER:-}" != 1 ]; then
  [ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mounts, binfmt_misc): sudo $0 ${arguments[*]}"
  for tool in debootstrap chroot unshare flock findmnt mountpoint sox curl ss dpkg-deb timeout setpriv; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install debootstrap sox curl iproute2 util-linux coreutils dpkg)"
  done
  if [ "$arch" = arm64 ]; then
    command -v qemu-aarch64-static >/dev/null || die "qemu-aarch64-static is missing: apt-get install qemu-user-static"
  elif [ "$(dpkg --print-architecture)" != amd64 ]; then
    die "--arch amd64 runs natively and needs an amd64 host"
  fi
  curl -fsS --max-time 30 -o /dev/null "$mirror/dists/$suite/InRelease" 2>/dev/null ||
    die "cannot reach $mirror/dists/$suite/InRelease: no network, or a wrong mirror (EARSHOT_CROSS_MIRROR). The root and the packages' dependencies come from there."

  # The packages: the newest complete set (or --version), made by cross-build.sh and build-debs.sh.
  out_dir="$repo/.build-cross/$arch"
  version=none
  if [ $root_only -eq 0 ]; then
    complete_versions() {
      local deb v p
      for deb in "$debs"/earshotd_*_"$arch".deb; do
        [ -e "$deb" ] || continue
        v=$(dpkg-deb -f "$deb" Version)
        for p in "${packages[@]}"; do [ -f "$debs/${p}_${v}_$arch.deb" ] || continue 2; done
        echo "$v"
      done
    }
    newest_version() {
      local best="" v
      while read -r v; do
        if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then best=$v; fi
      done < <(complete_versions)
      echo "$best"
    }
    # Why the packages are stale ("" when they are not): older than the binaries, or the binaries
    # built from another commit than HEAD.
    staleness() {
      local v=$1 built head
      [ -f "$out_dir/BUILDINFO" ] || return 0
      if [ "$out_dir/BUILDINFO" -nt "$debs/earshotd_${v}_$arch.deb" ]; then
        echo "the packages are older than $out_dir (build-debs.sh not run since the last cross-build)"; return 0
      fi
      built=$(sed -n 's/^source: \([0-9a-f]\{40\}\).*/\1/p' "$out_dir/BUILDINFO")
      head=$(git -C "$repo" rev-parse HEAD 2>/dev/null || true)
      if [ -n "$built" ] && [ -n "$head" ] && [ "$built" != "$head" ]; then
        echo "$out_dir was built from ${built:0:12}, HEAD is ${head:0:12}"
      fi
    }
    version="${version_choice:-$(newest_version)}"
    reason=""
    if [ -z "$version" ]; then reason="no complete set of ${packages[*]} for $arch in $debs"
    elif [ -z "$version_choice" ]; then reason=$(staleness "$version")
    fi
    if [ -n "$reason" ] && [ $build -eq 1 ]; then
      say "--build: $reason"
      # Cross-build when the binaries are missing or from another commit; build-debs in any case.
      head=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
      if [ ! -f "$out_dir/BUILDINFO" ] || ! grep -q "^source: $head" "$out_dir/BUILDINFO"; then
        say "running scripts/cross-build.sh --arch $arch (about 10 minutes; the first run longer)"
        "$repo/scripts/cross-build.sh" --arch "$arch" || die "scripts/cross-build.sh --arch $arch failed"
      fi
      say "running scripts/build-debs.sh --arch $arch --out $debs"
      "$repo/scripts/build-debs.sh" --arch "$arch" --out "$debs" || die "scripts/build-debs.sh --arch $arch failed"
      version=$(newest_version)
      [ -n "$version" ] || die "still no complete set of packages for $arch in $debs after building"
    elif [ -z "$version" ]; then
      die "$reason. Make them: scripts/cross-build.sh --arch $arch && scripts/build-debs.sh --arch $arch (or run this script with --build)"
    elif [ -n "$reason" ]; then
      say "warning: $reason; proving the packages as they are (--build rebuilds them)"
    fi
    for p in "${packages[@]}"; do
      [ -f "$debs/${p}_${version}_$arch.deb" ] || die "missing $debs/${p}_${version}_$arch.deb"
    done
    say "packages: ${packages[*]} $version ($arch) from $debs"
  fi

  # The host's CLI (x86), which drives the daemon.
  if [ $root_only -eq 0 ] && [ ! -x "$host_earshot" ]; then
    [ "$host_earshot" = "$repo/.build/debug/earshot" ] || die "--host-earshot: $host_earshot is not an executable"
    say "building the host's CLI: swift build --product earshot (in $repo/.build) …"
    (cd "$repo" && PATH="/opt/swift/usr/bin:$PATH" swift build --product earshot) > "/tmp/prove-host-earshot.$$.log" 2>&1 ||
      { tail -n 30 "/tmp/prove-host-earshot.$$.log" >&2; die "swift build --product earshot failed (log /tmp/prove-host-earshot.$$.log)"; }
    rm -f "/tmp/prove-host-earshot.$$.log"
  fi
  [ $root_only -eq 1 ] || "$host_earshot" --version >/dev/null 2>&1 || die "the host's CLI $host_earshot does not run"

  mkdir -p "$cache" "$logs"
  exec 9>"$cache/prove-$arch.lock"
  flock -n 9 || die "another run of this script for $arch is running (lock $cache/prove-$arch.lock)"

  if [ "$arch" = arm64 ]; then
    # One arm64 run at a time on this machine, whatever its cache: the registration is global.
    mkdir -p /run/lock
    exec 8>/run/lock/earshot-prove-on-board-os-binfmt.lock
    flock -n 8 || die "another arm64 run of this script is running (lock /run/lock/earshot-prove-on-board-os-binfmt.lock)"
    before=$(binfmt_state)
    printf '%s\n' "$before" > "$state_dir/binfmt-before.txt"
    say "binfmt_misc before:"; printf '%s\n' "$before" | sed 's/^/    /'
  fi

  started=$(date +%s)
  : > "$results"
  inner_status=0
  set +e
  EARSHOT_PROVE_INNER=1 EARSHOT_PROVE_VERSION="$version" EARSHOT_PROVE_DEBS="$debs" \
    EARSHOT_PROVE_HOST_EARSHOT="$host_earshot" \
    unshare --mount --propagation private bash "${BASH_SOURCE[0]}" "${arguments[@]}" 8>&- 9>&- &
  inner=$!
  # Ctrl-C reaches the inner process too (same process group); TERM is passed on. Either way,
  # wait for it to clean up before checking binfmt_misc.
  trap 'kill -TERM "$inner" 2>/dev/null' TERM
  trap ':' INT
  while :; do
    wait "$inner"; inner_status=$?
    kill -0 "$inner" 2>/dev/null || break
  done
  trap - TERM INT
  set -e

  # A daemon the inner process could not stop (it was killed with SIGKILL): stop it here.
  if [ -f "$state_dir/earshotd.pid" ]; then
    pid=$(cat "$state_dir/earshotd.pid")
    if [ -n "$pid" ] && [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$root" ]; then
      say "the daemon (pid $pid) outlived the run: stopping it"
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$state_dir/earshotd.pid"
  fi

  # binfmt_misc after: must equal before. A leftover registration of ours (the inner process was
  # killed before its trap ran) is removed here and reported.
  t=$(date +%s)
  if [ "$arch" = arm64 ]; then
    after=$(binfmt_state)
    printf '%s\n' "$after" > "$state_dir/binfmt-after.txt"
    repaired=""
    if [ "$after" != "$before" ] && grep -q "^entry $binfmt_name:" <<<"$after" && ! grep -q "^entry $binfmt_name:" <<<"$before"; then
      unshare --mount --propagation private sh -c 'mountpoint -q "$1" || mount -t binfmt_misc binfmt_misc "$1"; echo -1 > "$1/$2"' sh "$binfmt_dir" "$binfmt_name" || true
      repaired=" (a registration left by the killed run was removed here)"
      after=$(binfmt_state)
      printf '%s\n' "$after" > "$state_dir/binfmt-after.txt"
    fi
    echo
    say "binfmt_misc after:"; printf '%s\n' "$after" | sed 's/^/    /'
    if [ "$after" = "$before" ]; then
      printf 'PASS\tbinfmt restored\t%s\tthe same as before%s\n' "$(($(date +%s) - t))" "$repaired" >> "$results"
    else
      printf 'FAIL\tbinfmt restored\t%s\tdiffers from before: diff %s/binfmt-{before,after}.txt\n' "$(($(date +%s) - t))" "$state_dir" >> "$results"
    fi
  fi

  echo
  if [ $root_only -eq 1 ]; then echo "==================== summary: root file system, Debian $suite $arch (--root-only) ===================="
  else echo "==================== summary: earshot $version ($arch) on Debian $suite $arch ===================="; fi
  failed=0 n=0
  while IFS=$'\t' read -r status name secs detail; do
    [ -n "$status" ] || continue
    n=$((n + 1))
    printf '%-4s  %-26s %8s  %s\n' "$status" "$name" "$(duration "$secs")" "$detail"
    [ "$status" != FAIL ] || failed=$((failed + 1))
  done < "$results"
  if [ $n -lt 2 ]; then
    echo "FAIL  the proof stopped before its first step (exit status $inner_status)"; failed=$((failed + 1))
  elif [ $inner_status -eq 130 ] || [ $inner_status -eq 143 ] || [ $inner_status -eq 137 ]; then
    echo "FAIL  the proof was interrupted (exit status $inner_status): the steps after the last one above did not run"; failed=$((failed + 1))
  elif [ $inner_status -ne 0 ] && [ $failed -eq 0 ]; then
    echo "FAIL  the proof ended with exit status $inner_status"; failed=$((failed + 1))
  fi
  echo "total $(duration $(($(date +%s) - started))); logs in $logs"
  if [ $failed -eq 0 ] && [ $root_only -eq 1 ]; then
    say "PASS: the Debian $suite $arch root is ready in $root"; exit 0
  elif [ $failed -eq 0 ]; then
    say "PASS: the $arch packages install, run, serve and purge on Debian $suite $arch"
    exit 0
  fi
  say "FAIL: $failed step(s) failed (logs in $logs)"
  exit 1
fi

# ---------------------------------------------------------------------------------------------------
# Inner process: in a private mount namespace.
# ---------------------------------------------------------------------------------------------------
version=$EARSHOT_PROVE_VERSION
debs=$EARSHOT_PROVE_DEBS
host_earshot=$EARSHOT_PROVE_HOST_EARSHOT
work_in=/opt/earshot-proof          # the work folder, inside the root
work="$root$work_in"                # the same, from the host
keys="$work/keys"

mounts=()
daemon_pid=""
binfmt_registered=0
binfmt_mounted=0
binfmt_enabled_by_us=0

cleanup() {
  local status=$? i
  trap - EXIT INT TERM
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    for i in $(seq 1 60); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 1; done
    kill -KILL "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  rm -f "$state_dir/earshotd.pid"
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" 2>/dev/null || true
  done
  if [ $binfmt_registered -eq 1 ]; then
    if echo -1 > "$binfmt_dir/$binfmt_name"; then say "binfmt_misc: unregistered $binfmt_name"
    else say "warning: could not unregister $binfmt_dir/$binfmt_name"; fi
  fi
  if [ $binfmt_enabled_by_us -eq 1 ]; then echo 0 > "$binfmt_dir/status" || true; fi
  if [ $binfmt_mounted -eq 1 ]; then umount "$binfmt_dir" 2>/dev/null || true; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- Steps -------------------------------------------------------------------------------------------
declare -A step_status=()
current_log=""
# run_step ID "title" FUNCTION [NEEDS...]: runs FUNCTION with its output in logs/step-ID.log, shown
# indented; PASS when it returns 0. A step whose NEEDS did not pass is skipped.
run_step() {
  local id=$1 title=$2 fn=$3 need t status detail; shift 3
  for need in "$@"; do
    if [ "${step_status[$need]:-}" != PASS ]; then
      step_status[$id]=SKIP
      printf 'SKIP\t%s\t0\tneeds %s\n' "$title" "$need" >> "$results"
      echo; say "[$title] SKIP (needs $need, which did not pass)"
      return 0
    fi
  done
  echo; say "[$title] …"
  current_log="$logs/step-$id.log"
  : > "$current_log"
  t=$(date +%s)
  step_detail=""
  set +e
  "$fn" > >(tee -a "$current_log" | sed -u 's/^/    /') 2>&1
  status=$?
  set -e
  sleep 0.2   # let the tee above finish printing
  if [ $status -eq 0 ]; then step_status[$id]=PASS; else step_status[$id]=FAIL; fi
  detail=${step_detail:-}
  printf '%s\t%s\t%s\t%s\n' "${step_status[$id]}" "$title" "$(($(date +%s) - t))" "$detail" >> "$results"
  say "[$title] ${step_status[$id]} in $(duration $(($(date +%s) - t)))${detail:+: $detail}"
}
# ok/bad MESSAGE: a check's line. bad returns 1 (the step fails where its result is returned).
ok() { echo "ok:   $*"; }
bad() { echo "FAIL: $*"; return 1; }
# A command in the root with a clean environment.
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}
# show FILE [N]: the first N (default 20) lines of a file.
show() { head -n "${2:-20}" "$1"; local n; n=$(wc -l < "$1"); [ "$n" -le "${2:-20}" ] || echo "… ($n lines; all in $1)"; }

# --- binfmt_misc -----------------------------------------------------------------------------------
# An enabled handler for aarch64 ELF files with the F flag (works in any root), if there is one.
usable_aarch64_handler() {
  local f
  for f in "$binfmt_dir"/*; do
    case ${f##*/} in register|status) continue ;; esac
    [ -f "$f" ] || continue
    grep -qx enabled "$f" && grep -qx "magic $aarch64_magic" "$f" && grep -q '^flags: .*F' "$f" && { echo "${f##*/}"; return 0; }
  done
  return 1
}
setup_binfmt() {
  local existing interpreter flags magic mask spec
  if ! mountpoint -q "$binfmt_dir"; then
    mount -t binfmt_misc binfmt_misc "$binfmt_dir" || { echo "cannot mount binfmt_misc on $binfmt_dir"; return 1; }
    binfmt_mounted=1
    echo "mounted binfmt_misc on $binfmt_dir (in this script's private mount namespace only)"
  else
    echo "binfmt_misc is mounted already"
  fi
  if [ "$(cat "$binfmt_dir/status")" != enabled ]; then
    echo 1 > "$binfmt_dir/status"; binfmt_enabled_by_us=1
    echo "binfmt_misc was disabled: enabled for the run (disabled again at the end)"
  fi
  if existing=$(usable_aarch64_handler); then
    echo "an aarch64 handler with the F flag is registered already: $existing ($(sed -n 's/^interpreter //p' "$binfmt_dir/$existing")); used as is"
    return 0
  fi
  # As `update-binfmts --enable qemu-aarch64` would register it (qemu-user-static's
  # /usr/share/binfmts/qemu-aarch64), under our own name; F opens the interpreter now.
  interpreter=/usr/libexec/qemu-binfmt/aarch64-binfmt-P flags=FPC
  [ -x "$interpreter" ] || { interpreter=$(command -v qemu-aarch64-static); flags=FC; }
  magic='\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
  mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
  spec=":$binfmt_name:M:0:$magic:$mask:$interpreter:$flags"
  printf '%s' "$spec" > "$binfmt_dir/register" || { echo "could not register $binfmt_name"; return 1; }
  binfmt_registered=1
  echo "registered $binfmt_name: interpreter $interpreter, flags $flags (unregistered at the end)"
  sed 's/^/  /' "$binfmt_dir/$binfmt_name"
}

# --- The root file system ----------------------------------------------------------------------------
root_key="$layout_version $suite $arch minbase $mirror"
root_runs() { [ -x "$root/usr/bin/apt-get" ] && in_root /usr/bin/dpkg --print-architecture 2>/dev/null | grep -qx "$arch"; }
assert_nothing_mounted_under() {
  if findmnt -rn -o TARGET | grep -q "^${1%/}/"; then echo "something is mounted under $1"; return 1; fi
}
mount_root() {
  [ ${#mounts[@]} -eq 0 ] || return 0
  mount -t proc proc "$root/proc"; mounts+=("$root/proc")
  mount --bind /dev "$root/dev"; mounts+=("$root/dev")
  if [ -d /dev/pts ]; then mount --bind /dev/pts "$root/dev/pts"; mounts+=("$root/dev/pts"); fi
  mount --bind /sys "$root/sys"; mounts+=("$root/sys")
  mount -o remount,bind,ro "$root/sys"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
}
make_root() {
  local t
  if [ $fresh -eq 0 ] && [ -f "$root.stamp" ] && [ "$(cat "$root.stamp")" = "$root_key" ] && root_runs; then
    echo "cached root: $root ($(du -sh --exclude=./proc "$root" 2>/dev/null | cut -f1), made $(date -r "$root.stamp" '+%F %T'))"
  else
    assert_nothing_mounted_under "$root" || return 1
    rm -rf "$root.partial" "$root.stamp" "$root.tools" "$root.baseline"
    echo "debootstrap --variant=minbase --arch=$arch $suite $root $mirror (log $logs/debootstrap.log) …"
    t=$(date +%s)
    if ! debootstrap --variant=minbase --arch="$arch" "$suite" "$root.partial" "$mirror" > "$logs/debootstrap.log" 2>&1; then
      tail -n 20 "$logs/debootstrap.log"
      grep -qiE 'Failed getting release|Couldn.t download|resolv' "$logs/debootstrap.log" && echo "(no network, or a wrong mirror: EARSHOT_CROSS_MIRROR)"
      return 1
    fi
    rm -rf "$root"
    mv "$root.partial" "$root"
    printf '%s' "$root_key" > "$root.stamp"
    echo "debootstrap: done in $(duration $(($(date +%s) - t))); $(du -sh "$root" | cut -f1)"
  fi
  # No recommends (what Depends pull is what is proven), no translations. Written on every run.
  rm -f "$root/etc/apt/apt.conf.d/90earshot-proof"   # (an earlier name, which the purge check would find)
  printf 'APT::Install-Recommends "false";\nAcquire::Languages "none";\n' > "$root/etc/apt/apt.conf.d/90prove-on-board-os"
  mount_root
  in_root /usr/bin/dpkg --print-architecture | sed 's/^/dpkg architecture: /'
  in_root uname -m | sed 's/^/uname -m in the root: /'
  sed -n 's/^PRETTY_NAME=//p' "$root/etc/os-release" | tr -d '"' | sed 's/^/os-release: /'
  root_runs || { echo "the root's programs do not run"; return 1; }
  echo "apt-get update …"
  t=$(date +%s)
  in_root apt-get update > "$logs/apt-update.log" 2>&1 || { tail -n 20 "$logs/apt-update.log"; return 1; }
  echo "apt-get update: done in $(duration $(($(date +%s) - t)))"
  if [ $c_compile -eq 1 ]; then
    if [ "$(cat "$root.tools" 2>/dev/null)" = "${root_tools[*]}" ]; then
      echo "tools of the C step (${root_tools[*]}): installed before"
    else
      echo "apt-get install ${root_tools[*]} (the C step's tools) …"
      t=$(date +%s)
      in_root apt-get install -y "${root_tools[@]}" > "$logs/apt-tools.log" 2>&1 || { tail -n 20 "$logs/apt-tools.log"; return 1; }
      printf '%s' "${root_tools[*]}" > "$root.tools"
      rm -f "$root.baseline"
      echo "tools: done in $(duration $(($(date +%s) - t)))"
    fi
  fi
  # A run that was stopped half-way may have left our packages, their dependencies, daemon files
  # or the work folder: back to the baseline, so that the install step starts from a clean root.
  back_to_baseline leftovers || return 1
  if [ ! -f "$root.baseline" ]; then
    installed_packages > "$root.baseline"
    echo "baseline of the root: $(wc -l < "$root.baseline") packages ($root.baseline)"
  fi
  rm -rf "$work"
  return 0
}
# Every package dpkg knows in the root (installed or with configuration files left), sorted.
installed_packages() {
  in_root dpkg-query -W -f='${Package}:${Architecture} ${db:Status-Abbrev}\n' | awk '$2 !~ /^un/ { print $1 }' | LC_ALL=C sort
}
# back_to_baseline WHAT: purges our packages, what only they needed (autoremove) and any other
# package not in the root's baseline (e.g. adduser, which autoremove keeps: Priority important).
back_to_baseline() {
  local what=$1 left
  left=$(in_root dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${packages[@]}" 2>/dev/null | awk '$2 !~ /^un/ { print $1 }' | paste -sd' ' -)
  if [ -n "$left" ]; then
    echo "$what: $left installed; purging them"
    in_root apt-get purge -y $left > "$logs/purge-$what.log" 2>&1 || { tail -n 20 "$logs/purge-$what.log"; return 1; }
  fi
  in_root apt-get autoremove --purge -y > "$logs/autoremove-$what.log" 2>&1 || { tail -n 20 "$logs/autoremove-$what.log"; return 1; }
  left=$(grep -c '^Removing ' "$logs/autoremove-$what.log" || true)
  [ "$left" -eq 0 ] || echo "$what: apt-get autoremove --purge removed $left packages that only they needed"
  [ -f "$root.baseline" ] || return 0
  left=$(LC_ALL=C comm -13 "$root.baseline" <(installed_packages) | paste -sd' ' -)
  if [ -n "$left" ]; then
    echo "$what: not in the root's baseline: $left; purging them"
    in_root apt-get purge -y $left > "$logs/purge-extra-$what.log" 2>&1 || { tail -n 20 "$logs/purge-extra-$what.log"; return 1; }
  fi
  left=$(LC_ALL=C comm -3 "$root.baseline" <(installed_packages) | tr -d '\t' | paste -sd' ' -)
  [ -z "$left" ] || { echo "$what: the root's packages still differ from its baseline: $left"; return 1; }
  echo "$what: the root's packages are its baseline's ($(wc -l < "$root.baseline"))"
}

# --- Install -----------------------------------------------------------------------------------------
install_packages() {
  local p status t rc=0
  mkdir -p "$work/debs"
  for p in "${packages[@]}"; do cp "$debs/${p}_${version}_$arch.deb" "$work/debs/"; done
  echo "\$ apt-get install -y ./earshotd_*.deb ./earshot_*.deb ./libearshot-client0_*.deb ./libearshot-client-dev_*.deb"
  t=$(date +%s)
  if ! in_root sh -c "cd $work_in/debs && apt-get install -y ./earshotd_*.deb ./earshot_*.deb ./libearshot-client0_*.deb ./libearshot-client-dev_*.deb" > "$logs/apt-install.log" 2>&1; then
    tail -n 30 "$logs/apt-install.log"; return 1
  fi
  # The new packages, on one line.
  awk '/^The following NEW packages/ { on = 1; next } on && /^ / { printf "%s", $0; next } on { print ""; on = 0 }' "$logs/apt-install.log" |
    tr -s ' ' | fold -s -w 110 | sed 's/^/  /; 1s/^  /new: /'
  grep -E '^([0-9]+ upgraded|earshotd:|W:|E:)' "$logs/apt-install.log"
  echo "installed with their dependencies from the archive in $(duration $(($(date +%s) - t))) ($(grep -c '^Setting up' "$logs/apt-install.log") packages set up)"
  for p in "${packages[@]}"; do
    status=$(in_root dpkg-query -W -f='${Status} ${Version}' "$p" 2>/dev/null || true)
    if [ "$status" = "install ok installed $version" ]; then ok "$p $version installed"; else bad "$p: '$status'" || rc=1; fi
  done
  in_root earshotd --version | sed 's/^/earshotd --version: /' || bad "earshotd --version" || rc=1
  in_root earshot --version | sed 's/^/earshot --version: /' || bad "earshot --version" || rc=1
  in_root sh -c 'earshot-c 2>&1 | head -n 1' | sed 's/^/earshot-c: /'
  if in_root sh -c 'command -v ldd >/dev/null'; then
    if in_root sh -c 'ldd /usr/bin/earshotd /usr/bin/earshot /usr/bin/earshot-c /usr/lib/*/libearshot-client.so.0' 2>&1 | grep 'not found'; then
      bad "a library the binaries need is not installed" || rc=1
    else
      ok "ldd: every library of earshotd, earshot, earshot-c and libearshot-client.so.0 is installed"
    fi
  fi
  in_root getent passwd earshot | sed 's/^/passwd: /'
  in_root id earshot | sed 's/^/id: /'
  in_root getent passwd earshot | grep -q ':/var/lib/earshot:/usr/sbin/nologin$' && ok "system user earshot, home /var/lib/earshot, nologin" || bad "user earshot" || rc=1
  in_root id -nG earshot | tr ' ' '\n' | grep -qx audio && ok "earshot is in group audio" || bad "earshot not in group audio" || rc=1
  [ "$(in_root stat -c '%U:%G %a' /var/lib/earshot)" = "earshot:earshot 750" ] && [ "$(in_root stat -c '%U:%G %a' /var/lib/earshot/catalogs)" = "earshot:earshot 750" ] &&
    ok "/var/lib/earshot and catalogs/: earshot:earshot 0750" || bad "/var/lib/earshot: $(in_root stat -c '%U:%G %a' /var/lib/earshot)" || rc=1
  [ -f "$root/etc/earshot/earshotd.toml" ] && ok "/etc/earshot/earshotd.toml (conffile)" || bad "no /etc/earshot/earshotd.toml" || rc=1
  [ -f "$root/usr/lib/systemd/system/earshotd.service" ] && ok "unit /usr/lib/systemd/system/earshotd.service" || bad "no unit" || rc=1
  if [ -L "$root/etc/systemd/system/multi-user.target.wants/earshotd.service" ]; then ok "unit enabled (multi-user.target.wants), without systemd running"
  else echo "note: the unit is not enabled (deb-systemd-helper from init-system-helpers is not in a minbase root)"; fi
  [ -f "$root/usr/lib/$triplet/pkgconfig/earshot-client.pc" ] && ok "earshot-client.pc in /usr/lib/$triplet/pkgconfig" || bad "no earshot-client.pc" || rc=1
  step_detail="$version; $(sed -n 's/.* \([0-9][0-9]*\) newly installed.*/\1/p' "$logs/apt-install.log") packages newly installed (ours and their dependencies)"
  return $rc
}

# --- Media, catalogs, keys -------------------------------------------------------------------------------
make_media() {
  local rc=0
  mkdir -p "$work/media" "$keys"
  chmod 755 "$work" "$work/media"
  echo "synthesising the episodes (scripts/lib/demo-episodes.sh) and a second piece with sox …"
  (
    cd "$work/media"
    source "$repo/scripts/lib/demo-episodes.sh"
    demo_episodes > /dev/null
    synth_piece extra 44 60 44100
    printf 'file,id,title,artist\nextra.wav,extra,Extra Piece,Earshot Proof\n' > extra-items.csv
  ) || { bad "sox"; return 1; }
  # The programme the "TV" plays: episode 2 (media item ep2), looping.
  cp "$work/media/episode2.wav" "$work/programme.wav"
  chmod 644 "$work/programme.wav"
  echo "programme: $work_in/programme.wav, $(soxi -D "$work/programme.wav" 2>/dev/null || echo '?') s (episode 2, item ep2)"
  "$host_earshot" catalog create -o "$work/show.earcat" "$work/media/intro.wav" "$work/media/episode1.wav" \
    "$work/media/episode2.wav" --media-items "$work/media/items.csv" > "$logs/catalog-show.log" 2>&1 ||
    { cat "$logs/catalog-show.log"; bad "host earshot catalog create show"; return 1; }
  ok "host (x86) CLI: catalog show.earcat (intro, episode1, episode2)"
  "$host_earshot" catalog create -o "$work/extra.earcat" "$work/media/extra.wav" --media-items "$work/media/extra-items.csv" \
    > "$logs/catalog-extra.log" 2>&1 || { cat "$logs/catalog-extra.log"; bad "host earshot catalog create extra"; return 1; }
  ok "host (x86) CLI: catalog extra.earcat (to push later)"
  in_root install -m 444 -o earshot -g earshot "$work_in/show.earcat" /var/lib/earshot/catalogs/ || { bad "install show.earcat"; return 1; }
  in_root ls -l /var/lib/earshot/catalogs | sed 's/^/catalogs: /'
  echo "\$ earshot catalog display -c /var/lib/earshot/catalogs/show.earcat   # the $arch CLI, in the root"
  if in_root earshot catalog display -c /var/lib/earshot/catalogs/show.earcat > "$logs/catalog-display.log" 2>&1 &&
     grep -q ep2 "$logs/catalog-display.log"; then
    show "$logs/catalog-display.log" 12; ok "the $arch CLI reads the catalog made by the x86 CLI"
  else
    cat "$logs/catalog-display.log"; bad "$arch earshot catalog display" || rc=1
  fi
  # Keys: admin from the host's CLI, operator from the root's.
  "$host_earshot" keygen -o "$keys/admin" --role admin > "$logs/keygen-admin.log" 2>&1 || { cat "$logs/keygen-admin.log"; bad "host keygen"; return 1; }
  ok "host (x86) CLI: earshot keygen -o admin --role admin"
  in_root earshot keygen -o "$work_in/keys/operator" > "$logs/keygen-operator.log" 2>&1 || { cat "$logs/keygen-operator.log"; bad "$arch keygen"; return 1; }
  ok "$arch CLI in the root: earshot keygen -o operator"
  {
    echo "# written by scripts/prove-on-board-os.sh"
    tail -n 1 "$logs/keygen-admin.log"
    tail -n 1 "$logs/keygen-operator.log"
  } > "$work/clients.allow"
  in_root install -m 640 -o earshot -g earshot "$work_in/clients.allow" /var/lib/earshot/clients.allow || { bad "install clients.allow"; return 1; }
  sed 's/^/clients.allow: /' "$root/var/lib/earshot/clients.allow"
  # Cues on the programme's reference (ep2): a CSV of the cue format (docs/FORMATS.md).
  cat > "$work/cues.csv" <<'CSV'
id,class,start,duration
proof-q1,com.example.quiz,3,2
proof-q2,com.example.quiz,9,2
proof-q3,com.example.quiz,15,2
proof-q4,com.example.quiz,21,2
CSV
  echo "cues: $(($(wc -l < "$work/cues.csv") - 1)) on ep2 at 3, 9, 15, 21 s ($work_in/cues.csv)"
  return $rc
}

# --- The daemon as its unit runs it ----------------------------------------------------------------------
unit_value() { sed -n "s/^$1=//p" "$root/usr/lib/systemd/system/earshotd.service" | tail -n 1; }
free_port() {
  local p used
  used=$(ss -ltnH | awk '{ n = split($4, a, ":"); print a[n] }')
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 40000))
    grep -qx "$p" <<<"$used" || grep -qx "$((p + 1))" <<<"$used" || { echo "$p"; return 0; }
  done
  return 1
}
rpc_port=""
daemon_cmd=()
daemon_user="" daemon_group="" daemon_groups="" daemon_umask="" daemon_nofile="" daemon_rtprio="" daemon_nnp=""
read_unit() {
  local exec_start supp
  exec_start=$(unit_value ExecStart)
  daemon_user=$(unit_value User) daemon_group=$(unit_value Group) supp=$(unit_value SupplementaryGroups)
  daemon_umask=$(unit_value UMask) daemon_nofile=$(unit_value LimitNOFILE) daemon_rtprio=$(unit_value LimitRTPRIO)
  daemon_nnp=$(unit_value NoNewPrivileges)
  [ -n "$exec_start" ] && [ -n "$daemon_user" ] || { echo "no ExecStart or User in the unit"; return 1; }
  exec_start=${exec_start#[-@+!:]}
  read -r -a daemon_cmd <<<"$exec_start"
  # systemd: the supplementary groups are User's (initgroups) and SupplementaryGroups.
  daemon_groups=$( { in_root id -Gn "$daemon_user" | tr ' ' '\n'; printf '%s\n' $supp; } | awk 'NF && !seen[$0]++' | paste -sd, -)
  echo "unit: ExecStart=${daemon_cmd[*]}"
  echo "unit: User=$daemon_user Group=${daemon_group:-(as User)} SupplementaryGroups=$supp -> groups $daemon_groups"
  echo "unit: UMask=${daemon_umask:-} LimitNOFILE=${daemon_nofile:-} LimitRTPRIO=${daemon_rtprio:-} NoNewPrivileges=${daemon_nnp:-}"
}
# start_daemon LOGNAME: in the background, as the unit would (the PID is that of earshotd itself:
# chroot, env and setpriv exec it in turn).
start_daemon() {
  local log="$logs/$1" deadline
  local overrides=(--audio.source=file "--audio.file=$work_in/programme.wav"
                   "--rpc.listen=[\"tcp://127.0.0.1:$rpc_port\"]" "--events.listen=[\"tcp://127.0.0.1:$((rpc_port + 1))\"]")
  local priv=(--reuid="$daemon_user" --regid="${daemon_group:-$daemon_user}" --groups="$daemon_groups")
  case "${daemon_nnp:-}" in yes|true|1|on) priv+=(--no-new-privs) ;; esac
  # Raising a hard limit needs CAP_SYS_RESOURCE, which some containers and VMs do not give root.
  local rtprio=$daemon_rtprio
  if [ -n "$rtprio" ] && ! (ulimit -r "$rtprio") 2>/dev/null; then
    echo "note: LimitRTPRIO=$rtprio cannot be applied here (ulimit -r: not permitted; the hard limit is $(ulimit -Hr)): the capture thread runs at normal priority, as the daemon's log says"
    rtprio=""
  fi
  echo "\$ chroot ROOT setpriv ${priv[*]} -- ${daemon_cmd[*]} ${overrides[*]}"
  (
    [ -z "$daemon_umask" ] || umask "$daemon_umask"
    [ -z "$daemon_nofile" ] || ulimit -n "$daemon_nofile"
    [ -z "$rtprio" ] || ulimit -r "$rtprio"
    cd /
    exec chroot "$root" /usr/bin/env -i LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      /usr/bin/setpriv "${priv[@]}" -- "${daemon_cmd[@]}" "${overrides[@]}"
  ) > "$log" 2>&1 &
  daemon_pid=$!
  echo "$daemon_pid" > "$state_dir/earshotd.pid"   # for the outer process, should this one be killed
  deadline=$(($(date +%s) + 300))
  until grep -q "listening on" "$log" 2>/dev/null; do
    if ! kill -0 "$daemon_pid" 2>/dev/null; then
      wait "$daemon_pid"; echo "earshotd ended (exit status $?) before listening:"; tail -n 20 "$log"; daemon_pid=""; return 1
    fi
    [ "$(date +%s)" -lt "$deadline" ] || { echo "earshotd did not listen within 300 s:"; tail -n 20 "$log"; return 1; }
    sleep 1
  done
  sed 's/^/| /' "$log" | head -n 12
}
# The credentials of the running daemon, named in the root's passwd and group.
show_credentials() {
  local uid gid groups nnp names="" g
  uid=$(awk '/^Uid:/ { print $2 }' "/proc/$daemon_pid/status")
  gid=$(awk '/^Gid:/ { print $2 }' "/proc/$daemon_pid/status")
  groups=$(awk '/^Groups:/ { $1 = ""; print }' "/proc/$daemon_pid/status")
  nnp=$(awk '/^NoNewPrivs:/ { print $2 }' "/proc/$daemon_pid/status")
  for g in $groups; do names="$names $(awk -F: -v g="$g" '$3 == g { print $1 }' "$root/etc/group")"; done
  echo "running: pid $daemon_pid, uid $uid ($(awk -F: -v u="$uid" '$3 == u { print $1 }' "$root/etc/passwd")), gid $gid ($(awk -F: -v g="$gid" '$3 == g { print $1 }' "$root/etc/group")), groups$names, NoNewPrivs $nnp, open files limit $(awk '/^Max open files/ { print $4 }' "/proc/$daemon_pid/limits")"
  [ "$(awk -F: -v u="$uid" '$3 == u { print $1 }' "$root/etc/passwd")" = "$daemon_user" ] || { bad "not running as $daemon_user"; return 1; }
  grep -qw audio <<<"$names" || { bad "not in group audio"; return 1; }
  ok "runs as $daemon_user with group audio, as the unit says"
  # What runs: the root's earshotd, for arm64 through the binfmt_misc handler (qemu).
  echo "executable: $(file -b "$root${daemon_cmd[0]}" 2>/dev/null | cut -d, -f1-2); /proc/$daemon_pid/exe -> $(readlink "/proc/$daemon_pid/exe")"
}
daemon_start_step() {
  read_unit || return 1
  if [ -n "$port" ]; then rpc_port=$port; else rpc_port=$(free_port) || { echo "no free port pair"; return 1; }; fi
  echo "ports: RPC 127.0.0.1:$rpc_port, events 127.0.0.1:$((rpc_port + 1))"
  start_daemon earshotd.log || return 1
  show_credentials || return 1
  in_root ls -l /var/lib/earshot | sed 's/^/state: /'
  [ "$(in_root stat -c '%U %a' /var/lib/earshot/server.key)" = "earshot 600" ] && [ -s "$root/var/lib/earshot/server.public" ] ||
    { bad "server.key/server.public"; return 1; }
  ok "the daemon made its CURVE key pair: server.key (earshot, 0600), server.public"
  step_detail="pid $daemon_pid, RPC :$rpc_port, CURVE"
}

# --- Clients ------------------------------------------------------------------------------------------------
# remote KEY LOG ARGS…: the host's CLI against the daemon with CURVE, output in logs/LOG.
server_key="" # the server key the host's CLI gives: by default the file the daemon wrote
remote() {
  local key=$1 log=$2; shift 2
  timeout 600 "$host_earshot" remote "$@" --server "tcp://127.0.0.1:$rpc_port" \
    --server-key "${server_key:-$root/var/lib/earshot/server.public}" --key "$keys/$key.key" > "$logs/$log" 2>&1
}
remote_prepare() {
  echo "\$ earshot remote prepare   (host x86 CLI, operator key)"
  remote operator prepare.log prepare --timeout 120 || { cat "$logs/prepare.log"; return 1; }
  show "$logs/prepare.log"
}
remote_match() {
  local deadline=$(($(date +%s) + 240)) status tries=0
  echo "\$ earshot remote match --timeout 60   (host x86 CLI, operator key; until it names ep2)"
  while :; do
    tries=$((tries + 1))
    remote operator match.log match --timeout 60; status=$?
    if [ $status -eq 0 ] && grep -q 'ep2' "$logs/match.log"; then
      show "$logs/match.log"; step_detail="$(grep -m1 'id ep2' "$logs/match.log" | sed 's/^match: *//; s/  (skew.*//' | tr -s ' ') (attempt $tries)"; return 0
    fi
    echo "attempt $tries: exit status $status: $(head -n 2 "$logs/match.log" | paste -sd' ' -)"
    [ "$(date +%s)" -lt "$deadline" ] || { bad "no match naming ep2 within 240 s"; return 1; }
    sleep 5
  done
}
remote_push() {
  echo "\$ earshot remote catalog push extra.earcat --enable   (host x86 CLI, admin key)"
  remote admin push.log catalog push "$work/extra.earcat" --enable --timeout 300 || { cat "$logs/push.log"; return 1; }
  show "$logs/push.log"
  echo "\$ earshot remote catalog list   (admin key)"
  remote admin catalog-list.log catalog list --timeout 60 || { cat "$logs/catalog-list.log"; return 1; }
  show "$logs/catalog-list.log"
  grep -qE '^extra +active ' "$logs/catalog-list.log" || { bad "extra is not listed as active"; return 1; }
  ok "extra is installed, active and listed"
  [ -f "$root/var/lib/earshot/catalogs/extra.earcat" ] && ok "/var/lib/earshot/catalogs/extra.earcat ($(in_root stat -c '%U %a' /var/lib/earshot/catalogs/extra.earcat))" ||
    { bad "no /var/lib/earshot/catalogs/extra.earcat"; return 1; }
  step_detail="$(grep -w extra "$logs/catalog-list.log" | head -n 1 | tr -s ' ')"
}
remote_cues() {
  local events
  echo "\$ earshot remote cues set --id ep2 cues.csv   (host x86 CLI, operator key)"
  remote operator cues-set.log cues set --id ep2 "$work/cues.csv" --timeout 60 || { cat "$logs/cues-set.log"; return 1; }
  show "$logs/cues-set.log"
  echo "\$ earshot remote cues schedule --id ep2"
  remote operator cues-schedule.log cues schedule --id ep2 --timeout 60 || { cat "$logs/cues-schedule.log"; return 1; }
  show "$logs/cues-schedule.log"
  grep -q proof-q1 "$logs/cues-schedule.log" || { bad "the schedule does not hold proof-q1"; return 1; }
  echo "\$ earshot remote cues follow --json --duration 60   (the programme is about 27 s, looping)"
  remote operator cues-follow.log cues follow --json --duration 60 --timeout 60; local status=$?
  # Shown compactly: kind, cue, position on the programme.
  sed -E -e 's/^\{"kind":"KIND_STATE".*"position":([0-9]+(\.[0-9]{0,2})?).*/STATE at \1 s/' \
    -e 's/^\{"kind":"KIND_([A-Z_]+)".*"cue":\{"id":"([^"]*)".*"position":([0-9]+(\.[0-9]{0,2})?).*/\1 \2 at \3 s/' \
    -e 's/^\{"kind":"KIND_([A-Z_]+)".*"position":([0-9]+(\.[0-9]{0,2})?).*"fromPosition":([0-9]+(\.[0-9]{0,2})?).*/\1 from \4 s to \2 s (the programme looped)/' \
    "$logs/cues-follow.log" > "$logs/cues-follow.txt"
  show "$logs/cues-follow.txt" 30
  # One JSON object per line: KIND_STATE first, then KIND_UPCOMING/STARTED/ENDED/… events.
  events=$(grep -E '"kind":"KIND_(UPCOMING|STARTED)"' "$logs/cues-follow.log" | grep -c '"id":"proof-q' || true)
  [ $status -eq 0 ] || { bad "cues follow: exit status $status"; return 1; }
  [ "$events" -gt 0 ] || { bad "no UPCOMING or STARTED event of proof-q1..4 in 60 s"; return 1; }
  local kinds
  kinds=$(grep -oE '"kind":"KIND_[A-Z_]+"' "$logs/cues-follow.log" | sed 's/.*KIND_//; s/"//' | sort | uniq -c | awk '{ printf "%s%s %s", sep, $1, $2; sep = ", " }')
  ok "$events UPCOMING/STARTED event(s) of our cues; all lines: $kinds"
  step_detail="$kinds"
}
remote_library() {
  echo "\$ earshot remote library add --match   (host x86 CLI, operator key)"
  local deadline=$(($(date +%s) + 180)) status
  while :; do
    remote operator library-add.log library add --match --timeout 60; status=$?
    [ $status -eq 0 ] && break
    echo "exit status $status: $(head -n 2 "$logs/library-add.log" | paste -sd' ' -)"
    [ "$(date +%s)" -lt "$deadline" ] || { bad "library add --match did not succeed within 180 s"; return 1; }
    sleep 5
  done
  show "$logs/library-add.log"
  echo "\$ earshot remote library"
  remote operator library-list.log library --timeout 60 || { cat "$logs/library-list.log"; return 1; }
  show "$logs/library-list.log"
  remote operator library-list-json.log library --json --timeout 60 || { cat "$logs/library-list-json.log"; return 1; }
  # The programme's items: ep2, or ep2-quiz (time-ranged 5-15 s) when matched in that range.
  grep -qE '"mediaItem":\{"id":"ep2(-quiz)?"' "$logs/library-list-json.log" || { bad "the library (--json) holds no item ep2 or ep2-quiz"; return 1; }
  ok "the library lists the programme's item ($(grep -oE '"mediaItem":\{"id":"[^"]*"' "$logs/library-list-json.log" | head -n 1 | sed 's/.*"id"://'))"
  step_detail="$(sed -n 2,3p "$logs/library-list.log" | tail -n 1 | tr -s ' ' | cut -c1-80)"
}
root_cli() {
  echo "\$ earshot remote state   ($arch CLI in the root, operator key)"
  in_root timeout 600 earshot remote state --server "tcp://127.0.0.1:$rpc_port" --server-key /var/lib/earshot/server.public \
    --key "$work_in/keys/operator.key" --timeout 120 > "$logs/root-state.log" 2>&1 || { cat "$logs/root-state.log"; return 1; }
  show "$logs/root-state.log"
  step_detail="$(head -n 1 "$logs/root-state.log")"
}
c_match() {
  local deadline=$(($(date +%s) + 240)) status tries=0
  echo "\$ earshot-c match --timeout 60   ($arch C client in the root, operator key; until it names episode 2)"
  while :; do
    tries=$((tries + 1))
    in_root timeout 600 earshot-c match --server "tcp://127.0.0.1:$rpc_port" --server-key /var/lib/earshot/server.public \
      --key "$work_in/keys/operator.key" --timeout 60 > "$logs/c-match.log" 2>&1
    status=$?
    # earshot-c names the item by its title: episode 2, or its time-ranged quiz item (5-15 s).
    if [ $status -eq 0 ] && grep -qE '^(Episode 2|Quiz question) ' "$logs/c-match.log"; then show "$logs/c-match.log"; step_detail="$(head -n 1 "$logs/c-match.log" | cut -c1-90)"; return 0; fi
    echo "attempt $tries: exit status $status: $(head -n 2 "$logs/c-match.log" | paste -sd' ' -)"
    [ "$(date +%s)" -lt "$deadline" ] || { bad "earshot-c match named no item of episode 2 within 240 s"; return 1; }
    sleep 5
  done
}
c_watch() {
  echo "\$ earshot-c watch --duration 20   ($arch C client in the root, operator key)"
  in_root timeout 600 earshot-c watch --server "tcp://127.0.0.1:$rpc_port" --events "tcp://127.0.0.1:$((rpc_port + 1))" \
    --server-key /var/lib/earshot/server.public --key "$work_in/keys/operator.key" --timeout 60 --duration 20 \
    > "$logs/c-watch.log" 2>&1 || { cat "$logs/c-watch.log"; return 1; }
  show "$logs/c-watch.log" 15
  grep -q '^snapshot (' "$logs/c-watch.log" || { bad "no snapshot from the follower"; return 1; }
  local topics
  topics=$(grep -oE '^earshot\.v1/[a-z]+/' "$logs/c-watch.log" | sed 's|earshot.v1/||; s|/$||' | sort | uniq -c | awk '{ printf "%s%s %s", sep, $1, $2; sep = ", " }')
  ok "a snapshot, then events: ${topics:-none}"
  step_detail="snapshot ($(grep -m1 '^snapshot (' "$logs/c-watch.log" | grep -oE 'SESSION_STATE_[A-Z]+')), events: ${topics:-none}"
}
c_compile_step() {
  local t
  mkdir -p "$work/c"
  cat > "$work/c/ping.c" <<'EOF'
/* Built by scripts/prove-on-board-os.sh in the root: cc ping.c $(pkg-config --cflags --libs earshot-client) */
#include <stdio.h>
#include <earshot/client.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s ENDPOINT SERVER_KEY CLIENT_KEY\n", argv[0]);
        return 2;
    }
    earshot_options options;
    earshot_options_init(&options);
    options.endpoint = argv[1];
    options.server_key = argv[2];
    options.client_key = argv[3];
    options.timeout_ms = 60000;
    earshot_status status;
    earshot_client *client = NULL;
    if (earshot_client_open(&options, &client, &status) != EARSHOT_OK) {
        fprintf(stderr, "open: %s: %s\n", earshot_code_name(status.code), status.message);
        return 1;
    }
    double rtt = 0;
    int code = earshot_ping(client, 60000, &rtt, &status);
    if (code == EARSHOT_OK) printf("PONG from %s in %.3f ms\n", earshot_client_endpoint(client), rtt);
    else fprintf(stderr, "ping: %s: %s\n", earshot_code_name(status.code), status.message);
    earshot_client_close(client);
    return code == EARSHOT_OK ? 0 : 1;
}
EOF
  echo "\$ pkg-config --cflags --libs earshot-client"
  in_root pkg-config --cflags --libs earshot-client || { bad "pkg-config earshot-client"; return 1; }
  echo "\$ cc -o ping ping.c \$(pkg-config --cflags --libs earshot-client)   (gcc in the $arch root)"
  t=$(date +%s)
  in_root sh -c "cd $work_in/c && cc -Wall -Werror -o ping ping.c \$(pkg-config --cflags --libs earshot-client)" > "$logs/c-compile.log" 2>&1 ||
    { cat "$logs/c-compile.log"; bad "compile"; return 1; }
  echo "compiled and linked in $(duration $(($(date +%s) - t)))"
  if in_root sh -c 'command -v ldd >/dev/null'; then in_root ldd "$work_in/c/ping" | grep earshot; fi
  in_root sh -c "readelf -d $work_in/c/ping 2>/dev/null | grep NEEDED" || true
  echo "\$ ./ping tcp://127.0.0.1:$rpc_port /var/lib/earshot/server.public operator.key"
  in_root timeout 600 "$work_in/c/ping" "tcp://127.0.0.1:$rpc_port" /var/lib/earshot/server.public "$work_in/keys/operator.key" > "$logs/c-ping.log" 2>&1 ||
    { cat "$logs/c-ping.log"; bad "the program did not get a PONG"; return 1; }
  cat "$logs/c-ping.log"
  ok "a program linked with libearshot-client (from -dev's pkg-config file) talks to the daemon over CURVE"
  step_detail="compiled in $(duration $(($(date +%s) - t))) (incl. ping); $(head -n 1 "$logs/c-ping.log")"
}

# --- Stop -----------------------------------------------------------------------------------------------------
stop_daemon() {
  local t status i
  [ -n "$daemon_pid" ] || { echo "no daemon"; return 1; }
  t=$(date +%s)
  echo "\$ kill -TERM $daemon_pid   (as systemctl stop)"
  kill -TERM "$daemon_pid"
  for i in $(seq 1 120); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 1; done
  if kill -0 "$daemon_pid" 2>/dev/null; then bad "still running 120 s after SIGTERM"; return 1; fi
  wait "$daemon_pid"; status=$?
  daemon_pid=""
  rm -f "$state_dir/earshotd.pid"
  tail -n 3 "$logs/$1" | sed 's/^/| /'
  echo "exit status $status after $(duration $(($(date +%s) - t)))"
  [ $status -eq 0 ] || { bad "exit status $status, not 0"; return 1; }
  ok "earshotd stopped on SIGTERM with exit status 0"
  step_detail="exit 0 in $(duration $(($(date +%s) - t)))"
}
stop_step() { stop_daemon earshotd.log; }

# --- Upgrade ------------------------------------------------------------------------------------------------------
kept_files=(/etc/earshot/earshotd.toml /var/lib/earshot/server.key /var/lib/earshot/server.public
            /var/lib/earshot/clients.allow /var/lib/earshot/catalogs/show.earcat /var/lib/earshot/catalogs/extra.earcat
            /var/lib/earshot/library.db)
upgrade_step() {
  local upstream revision v2 p status out="$state_dir/debs-upgrade" rc=0
  upstream=$(sed -n 's/^[[:space:]]*public static let string = "\([^"]*\)".*/\1/p' "$repo/Sources/EarshotCore/Support/EarshotVersion.swift")
  case "$version" in "$upstream"-*) revision=${version#"$upstream"-} ;; *) echo "version $version is not $upstream-…: cannot make a higher one with build-debs.sh"; return 1 ;; esac
  v2="$version+proof1"
  dpkg --compare-versions "$v2" gt "$version" || { echo "$v2 is not higher than $version"; return 1; }
  echo "\$ scripts/build-debs.sh --arch $arch --revision $revision --version-suffix +proof1 --out $out"
  rm -rf "$out"
  "$repo/scripts/build-debs.sh" --arch "$arch" --revision "$revision" --version-suffix +proof1 --out "$out" > "$logs/build-debs-upgrade.log" 2>&1 ||
    { tail -n 20 "$logs/build-debs-upgrade.log"; bad "build-debs.sh"; return 1; }
  # The administrator's edit, which the upgrade must keep.
  sed -i 's/^#log_level = "info"$/log_level = "info"   # edited by prove-on-board-os.sh/' "$root/etc/earshot/earshotd.toml"
  grep -q 'edited by prove-on-board-os' "$root/etc/earshot/earshotd.toml" || { bad "could not edit the configuration"; return 1; }
  echo "edited /etc/earshot/earshotd.toml: $(grep 'edited by prove' "$root/etc/earshot/earshotd.toml")"
  (cd "$root" && md5sum "${kept_files[@]#/}") > "$state_dir/upgrade-before.md5" || { bad "a kept file is missing"; cat "$state_dir/upgrade-before.md5"; return 1; }
  in_root stat -c '%n %U:%G %a' "${kept_files[@]}" > "$state_dir/upgrade-before.stat"
  mkdir -p "$work/debs-v2"
  for p in "${packages[@]}"; do cp "$out/${p}_${v2}_$arch.deb" "$work/debs-v2/" || { bad "no $p $v2"; return 1; }; done
  echo "\$ apt-get install -y ./earshotd_${v2}_$arch.deb ./earshot_… ./libearshot-client0_… ./libearshot-client-dev_…"
  in_root sh -c "cd $work_in/debs-v2 && apt-get install -y ./earshotd_*.deb ./earshot_*.deb ./libearshot-client0_*.deb ./libearshot-client-dev_*.deb" > "$logs/apt-upgrade.log" 2>&1 ||
    { tail -n 30 "$logs/apt-upgrade.log"; return 1; }
  grep -E '^(Preparing to unpack|Setting up (earshot|libearshot)|earshotd:|Configuration file|W:|E:)' "$logs/apt-upgrade.log"
  for p in "${packages[@]}"; do
    status=$(in_root dpkg-query -W -f='${Status} ${Version}' "$p" 2>/dev/null || true)
    [ "$status" = "install ok installed $v2" ] && ok "$p $v2" || bad "$p: '$status'" || rc=1
  done
  (cd "$root" && md5sum "${kept_files[@]#/}") > "$state_dir/upgrade-after.md5" 2>&1
  in_root stat -c '%n %U:%G %a' "${kept_files[@]}" > "$state_dir/upgrade-after.stat" 2>&1
  if diff "$state_dir/upgrade-before.md5" "$state_dir/upgrade-after.md5" && diff "$state_dir/upgrade-before.stat" "$state_dir/upgrade-after.stat"; then
    ok "unchanged (content, owner, mode): ${kept_files[*]}"
  else
    bad "files changed by the upgrade" || rc=1
  fi
  # The upgraded daemon on the same state: old keys, old library. The clients use a copy of the
  # server key taken before the upgrade (a daemon that made a new key pair would not answer).
  cp "$root/var/lib/earshot/server.public" "$state_dir/server.public.before-upgrade"
  server_key="$state_dir/server.public.before-upgrade"
  start_daemon earshotd-upgraded.log || { server_key=""; bad "the upgraded daemon did not start"; return 1; }
  ! grep -q 'made a new server key pair' "$logs/earshotd-upgraded.log" && ok "the upgraded daemon kept its key pair" || bad "the upgraded daemon made a new key pair" || rc=1
  echo "\$ earshot remote library   (host x86 CLI, operator key: the item added before the upgrade)"
  remote operator library-after-upgrade.log library --timeout 60 || { cat "$logs/library-after-upgrade.log"; bad "library after the upgrade" || rc=1; }
  show "$logs/library-after-upgrade.log" 6
  cmp -s <(sed 1d "$logs/library-list.log") <(sed 1d "$logs/library-after-upgrade.log") && ok "the upgraded daemon serves the old keys and lists the library item" || bad "the library differs from before the upgrade" || rc=1
  echo "\$ earshot remote catalog list   (admin key)"
  remote admin catalog-list-after-upgrade.log catalog list --timeout 60 && show "$logs/catalog-list-after-upgrade.log" 6 || { cat "$logs/catalog-list-after-upgrade.log"; rc=1; }
  stop_daemon earshotd-upgraded.log || rc=1
  server_key=""
  step_detail="$version -> $v2; config, keys, allow-list, catalogs, library kept"
  return $rc
}

# --- Purge ---------------------------------------------------------------------------------------------------------
purge_step() {
  local rc=0 left
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    echo "the daemon still runs (its stop step failed): stopping it first"
    kill -TERM "$daemon_pid"; sleep 10; kill -KILL "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true
    daemon_pid=""
    rm -f "$state_dir/earshotd.pid"
  fi
  echo "\$ apt-get purge -y ${packages[*]}"
  in_root apt-get purge -y "${packages[@]}" > "$logs/apt-purge.log" 2>&1 || { tail -n 20 "$logs/apt-purge.log"; return 1; }
  grep -E '^(Removing|Purging|earshotd:|W:|E:)' "$logs/apt-purge.log"
  [ ! -e "$root/etc/earshot" ] && [ ! -e "$root/var/lib/earshot" ] && ok "/etc/earshot and /var/lib/earshot are gone" || bad "$(ls -d "$root/etc/earshot" "$root/var/lib/earshot" 2>/dev/null | paste -sd' ' -) left" || rc=1
  ! in_root getent passwd earshot >/dev/null && ! in_root getent group earshot >/dev/null && ok "user and group earshot are gone" || bad "user or group earshot left" || rc=1
  ! grep -qw earshot "$root/etc/passwd" "$root/etc/group" "$root/etc/shadow" "$root/etc/gshadow" 2>/dev/null &&
    ok "no earshot in /etc/passwd, group (audio's members too), shadow, gshadow" || bad "$(grep -w earshot "$root"/etc/{passwd,group,shadow,gshadow} | paste -sd' ' -)" || rc=1
  left=$(in_root dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${packages[@]}" 2>/dev/null | awk '$2 != "un"' | paste -sd' ' -)
  [ -z "$left" ] && ok "dpkg knows none of the four packages any more" || bad "dpkg: $left" || rc=1
  left=$(cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ".$work_in" \) -prune -o -iname '*earshot*' -print | paste -sd' ' -)
  [ -z "$left" ] && ok "no file named *earshot* left in the root" || bad "left: $left" || rc=1
  # Not a check of the packages: the root back to its baseline for the next run.
  echo "\$ apt-get autoremove --purge -y, and purge what else is not in the root's baseline"
  back_to_baseline cleanup || bad "the root is not back to its baseline" || rc=1
  step_detail="nothing left; $(grep -c '^Removing ' "$logs/autoremove-cleanup.log" || true) dependencies autoremoved"
  return $rc
}

# --- Main -------------------------------------------------------------------------------------------------------
say "Debian $suite $arch root: $root; packages $version from $debs; host CLI $host_earshot"
if [ "$arch" = arm64 ]; then
  run_step binfmt "binfmt (qemu-aarch64)" setup_binfmt
  run_step root "root file system" make_root binfmt
else
  run_step root "root file system" make_root
fi
if [ $root_only -eq 1 ]; then
  [ "${step_status[root]:-}" = PASS ] && say "--root-only: the root is ready: $root"
  exit 0
fi
run_step install "install (apt-get)" install_packages root
run_step media "media, catalogs, keys" make_media install
run_step daemon "daemon as the unit" daemon_start_step media
run_step prepare "remote prepare" remote_prepare daemon
run_step match "remote match" remote_match daemon
run_step push "remote catalog push+list" remote_push daemon
run_step cues "remote cues set+follow" remote_cues daemon
run_step library "remote library add+list" remote_library daemon
run_step rootcli "$arch CLI remote state" root_cli daemon
run_step cmatch "earshot-c match ($arch)" c_match daemon
run_step cwatch "earshot-c watch ($arch)" c_watch daemon
if [ $c_compile -eq 1 ]; then
  run_step ccompile "C program via pkg-config" c_compile_step daemon
else
  printf 'SKIP\t%s\t0\t%s\n' "C program via pkg-config" "--no-c-compile" >> "$results"
fi
run_step stop "stop (SIGTERM)" stop_step daemon
if [ $upgrade -eq 1 ]; then
  if [ -d "$repo/.build-cross/$arch" ]; then
    run_step upgrade "upgrade (+proof1)" upgrade_step stop library
  else
    printf 'SKIP\t%s\t0\t%s\n' "upgrade (+proof1)" "no $repo/.build-cross/$arch to build a higher version from" >> "$results"
  fi
else
  printf 'SKIP\t%s\t0\t%s\n' "upgrade (+proof1)" "--no-upgrade" >> "$results"
fi
run_step purge "purge" purge_step install
[ "${step_status[purge]:-}" != PASS ] || rm -rf "$work"
exit 0
}
