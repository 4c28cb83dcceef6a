#!/usr/bin/env bash
# Builds Earshot's Debian packages for Debian 13 "trixie" and Raspberry Pi OS trixie (the binaries
# need glibc >= 2.38) from binaries already built, with dpkg-deb (no debian/ source package, no
# fakeroot). Four packages per architecture, named NAME_VERSION_ARCH.deb:
#
#   earshotd               /usr/bin/earshotd, its systemd unit, /etc/earshot/earshotd.toml
#                          (conffile), docs; postinst makes the user earshot (group audio) and
#                          /var/lib/earshot, enables the unit and (re)starts it where systemd runs
#   earshot                /usr/bin/earshot (the Swift CLI), /usr/bin/earshot-c (the C client's program)
#   libearshot-client0     /usr/lib/TRIPLET/libearshot-client.so.0 (Multi-Arch: same)
#   libearshot-client-dev  headers, the .so link, the static library, earshot-client.pc
#
#   scripts/build-debs.sh --arch arm64     # .build-cross/arm64/ -> .build-cross/debs/*_arm64.deb
#   scripts/build-debs.sh --arch all       # arm64, then amd64
#   scripts/build-debs.sh --arch amd64 --from DIR --out DIR --version-suffix +test1
#
# Options:
#   --arch arm64|amd64|all   the Debian architecture(s) to package (required)
#   --from DIR               the input of one architecture (default <repo>/.build-cross/ARCH, what
#                            `scripts/cross-build.sh --arch ARCH` writes): DIR/bin/earshotd,
#                            DIR/bin/earshot, DIR/bin/earshot-c, DIR/lib/libearshot-client.so.X.Y.Z,
#                            DIR/lib/libearshot-client.a
#   --out DIR                where the .deb files go (default <repo>/.build-cross/debs)
#   --revision N             the Debian revision (default 1): version = EarshotVersion-N, e.g. 0.3.0-1
#   --version-suffix S       appended to that version, e.g. +test1 (0.3.0-1+test1 > 0.3.0-1, an
#                            upgrade) or ~rc1 (sorts before 0.3.0-1)
#   --maintainer "NAME <MAIL>"  default: $DEBFULLNAME <$DEBEMAIL>, else the author of the commit built
#   --allow-unknown-sonames  development only: a soname missing from deploy/debian/sonames (e.g. the
#                            Swift runtime of a host build without --static-swift-stdlib) or a
#                            RUNPATH other than $ORIGIN is a warning instead of an error. Such
#                            packages are NOT fit to ship.
#   --keep-work              keep the staging trees (OUT/work-ARCH/PACKAGE)
#   --lintian                run lintian on every package built (exit status 1 if it reports an error)
#   -h, --help               this text
#
# Package metadata lives in deploy/debian/ as plain files this script fills in (@NAME@ fields):
# control.PACKAGE, earshotd.{postinst,prerm,postrm}, libearshot-client0.{shlibs,triggers},
# copyright, changelog.in, man/ (earshotd.8, earshot.1, earshot-c.1), and sonames, the table
# soname -> trixie package from which every Depends is computed (readelf -d); a soname missing
# from it stops the build.
# Binaries are stripped with llvm-objcopy (the Swift toolchain's handles both architectures;
# OBJCOPY=... picks another). SOURCE_DATE_EPOCH (default: the last commit's time) sets the
# changelog date and every file's time, so the same input gives the same packages.
# Needs: dpkg-deb, readelf, gzip, md5sum (Debian: dpkg, binutils, gzip, coreutils).
set -euo pipefail
shopt -u patsub_replacement 2>/dev/null || true   # '&' in ${x//pat/rep} is literal

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmpl="$repo/deploy/debian"

die() { echo "build-debs: $*" >&2; exit 1; }
warn() { echo "build-debs: warning: $*" >&2; }
say() { echo "build-debs: $*"; }

arch_opt=""
from_opt=""
out="$repo/.build-cross/debs"
revision=1
suffix=""
maintainer=""
allow_unknown=0
keep_work=0
run_lintian=0
while [ $# -gt 0 ]; do
    case "$1" in
        --arch) arch_opt="${2:?--arch needs arm64, amd64 or all}"; shift 2 ;;
        --from) from_opt="${2:?--from needs a folder}"; shift 2 ;;
        --out) out="${2:?--out needs a folder}"; shift 2 ;;
        --revision) revision="${2:?--revision needs a number}"; shift 2 ;;
        --version-suffix) suffix="${2?--version-suffix needs a suffix}"; shift 2 ;;
        --maintainer) maintainer="${2:?--maintainer needs \"NAME <MAIL>\"}"; shift 2 ;;
        --allow-unknown-sonames) allow_unknown=1; shift ;;
        --keep-work) keep_work=1; shift ;;
        --lintian) run_lintian=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done

case "$arch_opt" in
    arm64|amd64) arches=("$arch_opt") ;;
    all) arches=(arm64 amd64) ;;
    "") die "--arch arm64|amd64|all is required (see --help)" ;;
    *) die "unknown architecture '$arch_opt': arm64, amd64 or all" ;;
esac
[ -z "$from_opt" ] || [ "${#arches[@]}" -eq 1 ] || die "--from names the input of one architecture; not with --arch all"

for tool in dpkg-deb dpkg readelf gzip md5sum; do
    command -v "$tool" >/dev/null || die "$tool not found (apt-get install dpkg binutils gzip coreutils)"
done

# --- Versions -------------------------------------------------------------------------------
version_file="$repo/Sources/EarshotCore/Support/EarshotVersion.swift"
upstream="$(sed -n 's/^[[:space:]]*public static let string = "\([^"]*\)".*/\1/p' "$version_file")"
[ -n "$upstream" ] || die "no version in $version_file (public static let string = \"X.Y.Z\")"
[[ "$revision" =~ ^[0-9A-Za-z.+~]+$ ]] || die "bad --revision '$revision'"
version="$upstream-$revision$suffix"
dpkg --validate-version "$version" 2>/dev/null || die "'$version' is not a valid Debian version"

# The C library's own version and soversion (the file name and SONAME), from its Makefile.
lib_version="$(sed -n 's/^VERSION := \(.*\)$/\1/p' "$repo/clients/c/Makefile")"
lib_soversion="$(sed -n 's/^SOVERSION := \(.*\)$/\1/p' "$repo/clients/c/Makefile")"
[ -n "$lib_version" ] && [ -n "$lib_soversion" ] || die "no VERSION/SOVERSION in clients/c/Makefile"
lib_real="libearshot-client.so.$lib_version"
lib_soname="libearshot-client.so.$lib_soversion"
libpkg="libearshot-client$lib_soversion"
[ "$libpkg" = libearshot-client0 ] || die "the soversion is now $lib_soversion: rename deploy/debian/*libearshot-client0* and this script's package to $libpkg"

if [ -z "$maintainer" ]; then
    if [ -n "${DEBFULLNAME:-}" ] && [ -n "${DEBEMAIL:-}" ]; then
        maintainer="$DEBFULLNAME <$DEBEMAIL>"
    else
        # Whoever made the commit the packages are built from.
        maintainer="$(git -C "$repo" log -1 --format='%an <%ae>' 2>/dev/null)"
        [ -n "$maintainer" ] || die "no maintainer: give --maintainer \"NAME <MAIL>\" (or set DEBFULLNAME and DEBEMAIL)"
    fi
fi

if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH="$(git -C "$repo" log -1 --format=%ct 2>/dev/null || date +%s)"
fi
export SOURCE_DATE_EPOCH
changelog_date="$(LC_ALL=C date -u -R -d "@$SOURCE_DATE_EPOCH")"

# --- Helpers --------------------------------------------------------------------------------

# fill TEMPLATE NAME=VALUE...: the template without its '#' comment lines (control files only)
# or as is, with every @NAME@ replaced; stops if an @UPPER_CASE@ field is left.
fill() {
    local file="$1" text kv; shift
    text="$(cat "$file")"
    case "$(basename "$file")" in control.*) text="$(grep -v '^#' <<<"$text")" ;; esac
    for kv in "$@"; do text="${text//@${kv%%=*}@/${kv#*=}}"; done
    if grep -qE '@[A-Z_]+@' <<<"$text"; then
        die "$file: unfilled field(s): $(grep -oE '@[A-Z_]+@' <<<"$text" | sort -u | tr '\n' ' ')"
    fi
    printf '%s\n' "$text"
}

# The soname -> package table, without comments.
declare -A soname_pkg=()
while read -r so pkg rest; do
    [ -n "$so" ] || continue
    case "$so" in \#*) continue ;; esac
    [ -n "$pkg" ] && [ -z "$rest" ] || die "deploy/debian/sonames: bad line '$so $pkg $rest'"
    soname_pkg["$so"]="$pkg"
done < "$tmpl/sonames"

# depends_of FILE...: the Depends of these ELF files, from their DT_NEEDED entries through the
# table; libc6 gets the highest GLIBC_x.y symbol version they need as its minimum.
depends_of() {
    local f so unknown=() swift=() pkgs=() glibc
    for f in "$@"; do
        # A RUNPATH/RPATH may only be $ORIGIN (SwiftPM adds it to executables; lintian accepts
        # it too); anything else points into the build machine.
        local rp; rp="$(readelf -d -W "$f" | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p' | tr ':' '\n' |
            grep -vE '^\$(ORIGIN|\{ORIGIN\})(/|$)' | paste -sd: -)" || true
        if [ -n "$rp" ]; then
            [ "$allow_unknown" -eq 1 ] || die "$f has a RUNPATH/RPATH ($rp): a packaged binary must not (was it built for this host?)"
            warn "$f has a RUNPATH/RPATH ($rp) (--allow-unknown-sonames)"
        fi
        while read -r so; do
            [ -n "$so" ] || continue
            if [ -n "${soname_pkg[$so]:-}" ]; then
                pkgs+=("${soname_pkg[$so]}")
            elif [[ "$so" =~ ^lib(swift|_?Foundation|dispatch|BlocksRuntime) ]]; then
                swift+=("$so")
            else
                unknown+=("$so ($(basename "$f"))")
            fi
        done < <(readelf -d -W "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    done
    if [ "${#swift[@]}" -gt 0 ]; then
        local msg="the Swift runtime is linked dynamically (${swift[*]}): build with --static-swift-stdlib (scripts/cross-build.sh does)"
        [ "$allow_unknown" -eq 1 ] || die "$msg"
        warn "$msg; left out of Depends (--allow-unknown-sonames)"
    fi
    if [ "${#unknown[@]}" -gt 0 ]; then
        local msg="soname(s) not in deploy/debian/sonames: ${unknown[*]}; add the trixie package that provides each"
        [ "$allow_unknown" -eq 1 ] || die "$msg"
        warn "$msg; left out of Depends (--allow-unknown-sonames)"
    fi
    glibc="$(readelf -V -W "$@" | grep -oE 'GLIBC_[0-9]+(\.[0-9]+)+' | sed 's/^GLIBC_//' | sort -uV | tail -n 1)"
    printf '%s\n' "${pkgs[@]}" | sort -u | while read -r p; do
        [ -n "$p" ] || continue
        if [ "$p" = libc6 ] && [ -n "$glibc" ]; then echo "libc6 (>= $glibc)"; else echo "$p"; fi
    done
}

# join_deps: stdin's lines (package relations), sorted by name, as one Depends value.
join_deps() { sort -u -t' ' -k1,1 | paste -sd, - | sed 's/,/, /g'; }

# elf_machine FILE: readelf's Machine (every member of an archive must agree).
elf_machine() {
    local m
    m="$(readelf -h "$1" 2>/dev/null | sed -n 's/^ *Machine: *//p' | sort -u)"
    [ -n "$m" ] || die "$1 is not an ELF file (or archive of them)"
    [ "$(wc -l <<<"$m")" -eq 1 ] || die "$1 mixes architectures: $m"
    echo "$m"
}

# strip_to KIND IN OUT: a stripped copy, as dh_strip would (exe: everything; shared: unneeded
# symbols; static: debug info only; .comment always).
strip_to() {
    local kind="$1" in="$2" outf="$3"
    case "$kind" in
        exe) "$objcopy" --strip-all --remove-section=.comment "$in" "$outf" ;;
        shared) "$objcopy" --strip-unneeded --remove-section=.comment "$in" "$outf" ;;
        static) "$objcopy" --strip-debug --remove-section=.comment "$in" "$outf" ;;
    esac
    readelf -S -W "$outf" | grep -q '\.debug_' && die "$outf still has debug sections after stripping"
    return 0
}

# doc_files PKGDIR PACKAGE: copyright and changelog.Debian.gz (identical on every architecture,
# as Multi-Arch: same needs).
doc_files() {
    local d="$1/usr/share/doc/$2"
    install -d -m 0755 "$d"
    install -m 0644 "$tmpl/copyright" "$d/copyright"
    fill "$tmpl/changelog.in" VERSION="$version" UPSTREAM_VERSION="$upstream" \
        MAINTAINER="$maintainer" DATE="$changelog_date" | gzip -9n > "$d/changelog.Debian.gz"
    chmod 0644 "$d/changelog.Debian.gz"
}

# man_page PKGDIR PAGE: deploy/debian/man/PAGE (e.g. earshotd.8), compressed, in its section.
man_page() {
    local d="$1/usr/share/man/man${2##*.}"
    install -d -m 0755 "$d"
    gzip -9n < "$tmpl/man/$2" > "$d/$2.gz"
    chmod 0644 "$d/$2.gz"
}

# installed_size PKGDIR: KiB as dpkg-gencontrol counts them (file and symlink bytes, 1 KiB per
# directory), DEBIAN/ left out.
installed_size() {
    find "$1" -mindepth 1 -path "$1/DEBIAN" -prune -o -printf '%y %s\n' |
        awk '{ b += ($1 == "d") ? 1024 : $2 } END { printf "%d\n", (b + 1023) / 1024 }'
}

# finish PKGDIR PACKAGE DEPENDS: DEBIAN/control and md5sums (conffiles left out, as dh_md5sums
# does), file times, dpkg-deb.
finish() {
    local dir="$1" name="$2" deps="$3" size deb conf
    install -d -m 0755 "$dir/DEBIAN"
    size="$(installed_size "$dir")"
    fill "$tmpl/control.$name" VERSION="$version" ARCH="$arch" MAINTAINER="$maintainer" \
        INSTALLED_SIZE="$size" DEPENDS="$deps" > "$dir/DEBIAN/control"
    conf="$dir/DEBIAN/conffiles"
    (cd "$dir" && find . -path ./DEBIAN -prune -o -type f -printf '%P\n' | LC_ALL=C sort |
        { if [ -f "$conf" ]; then grep -vxF -f <(sed 's|^/||' "$conf"); else cat; fi; } |
        xargs -r -d '\n' md5sum) > "$dir/DEBIAN/md5sums"
    chmod 0644 "$dir/DEBIAN/control" "$dir/DEBIAN/md5sums"
    find "$dir" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    deb="$out/${name}_${version}_${arch}.deb"
    dpkg-deb --root-owner-group -Zxz --build "$dir" "$deb" >/dev/null
    built+=("$deb")
}

built=()
w=""
umask 022

# --- One architecture -----------------------------------------------------------------------
build_arch() {
    arch="$1"
    local triplet machine from libdir m deps   # w (the work folder) is global: the EXIT trap needs it
    case "$arch" in
        arm64) triplet=aarch64-linux-gnu; machine="AArch64" ;;
        amd64) triplet=x86_64-linux-gnu; machine="Advanced Micro Devices X86-64" ;;
    esac
    from="${from_opt:-$repo/.build-cross/$arch}"
    [ -d "$from" ] || die "no input for $arch: $from (scripts/cross-build.sh --arch $arch makes it; or --from DIR)"
    from="$(cd "$from" && pwd)"
    local f
    for f in bin/earshotd bin/earshot bin/earshot-c "lib/$lib_real" lib/libearshot-client.a; do
        [ -f "$from/$f" ] || die "$from/$f is missing (expected: bin/{earshotd,earshot,earshot-c}, lib/$lib_real, lib/libearshot-client.a)"
        m="$(elf_machine "$from/$f")"
        [ "$m" = "$machine" ] || die "$from/$f is for $m, not $arch ($machine)"
    done
    local so; so="$(readelf -d -W "$from/lib/$lib_real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
    [ "$so" = "$lib_soname" ] || die "$from/lib/$lib_real has SONAME '$so', expected $lib_soname"

    objcopy="${OBJCOPY:-}"
    if [ -z "$objcopy" ]; then
        if command -v llvm-objcopy >/dev/null; then objcopy=llvm-objcopy
        elif [ -x /opt/swift/usr/bin/llvm-objcopy ]; then objcopy=/opt/swift/usr/bin/llvm-objcopy
        elif command -v "$triplet-objcopy" >/dev/null; then objcopy="$triplet-objcopy"
        elif [ "$(dpkg --print-architecture)" = "$arch" ] && command -v objcopy >/dev/null; then objcopy=objcopy
        else die "no objcopy for $arch: install llvm (llvm-objcopy) or binutils-$triplet, or set OBJCOPY"
        fi
    fi

    mkdir -p "$out"
    out="$(cd "$out" && pwd)"
    say "$arch: $from -> $out (version $version, strip with $objcopy)"
    w="$out/work-$arch"
    rm -rf "$w"
    mkdir -p "$w"
    [ "$keep_work" -eq 1 ] || trap 'rm -rf "$w"' EXIT
    libdir="usr/lib/$triplet"

    # earshotd
    local p="$w/earshotd"
    install -d -m 0755 "$p/usr/bin" "$p/usr/lib/systemd/system" "$p/etc/earshot"
    strip_to exe "$from/bin/earshotd" "$p/usr/bin/earshotd"
    chmod 0755 "$p/usr/bin/earshotd"
    local unit="$p/usr/lib/systemd/system/earshotd.service"
    sed -e '1s|^# systemd unit for earshotd\..*$|# systemd unit for earshotd, installed by the earshotd package (from deploy/earshotd.service).|' \
        -e 's|^Documentation=file:/usr/local/share/doc/earshot/earshotd.toml$|Documentation=man:earshotd(8) file:/usr/share/doc/earshotd/earshotd.toml|' \
        -e 's|^ExecStart=/usr/local/bin/earshotd |ExecStart=/usr/bin/earshotd |' \
        "$repo/deploy/earshotd.service" > "$unit"
    chmod 0644 "$unit"
    grep -qx 'ExecStart=/usr/bin/earshotd --config /etc/earshot/earshotd.toml' "$unit" &&
        grep -qx 'Documentation=man:earshotd(8) file:/usr/share/doc/earshotd/earshotd.toml' "$unit" &&
        ! grep -q '/usr/local\|install\.sh' "$unit" ||
        die "deploy/earshotd.service changed: update the unit's rewriting in $0"
    install -m 0644 "$repo/deploy/earshotd.toml" "$p/etc/earshot/earshotd.toml"
    doc_files "$p" earshotd
    install -m 0644 "$repo/deploy/asoundrc.sample" "$repo/deploy/earshotd.toml" "$p/usr/share/doc/earshotd/"
    man_page "$p" earshotd.8
    install -d -m 0755 "$p/DEBIAN"
    echo /etc/earshot/earshotd.toml > "$p/DEBIAN/conffiles"
    chmod 0644 "$p/DEBIAN/conffiles"
    for f in postinst prerm postrm; do
        install -m 0755 "$tmpl/earshotd.$f" "$p/DEBIAN/$f"
    done
    # (die in a $(...) given as an argument would not stop the script: assign first)
    deps="$( { depends_of "$from/bin/earshotd"; echo adduser; } | join_deps)"
    finish "$p" earshotd "$deps"

    # earshot
    p="$w/earshot"
    install -d -m 0755 "$p/usr/bin"
    strip_to exe "$from/bin/earshot" "$p/usr/bin/earshot"
    strip_to exe "$from/bin/earshot-c" "$p/usr/bin/earshot-c"
    chmod 0755 "$p/usr/bin/earshot" "$p/usr/bin/earshot-c"
    doc_files "$p" earshot
    man_page "$p" earshot.1
    man_page "$p" earshot-c.1
    deps="$(depends_of "$from/bin/earshot" "$from/bin/earshot-c" | join_deps)"
    finish "$p" earshot "$deps"

    # libearshot-client0
    p="$w/$libpkg"
    install -d -m 0755 "$p/$libdir"
    strip_to shared "$from/lib/$lib_real" "$p/$libdir/$lib_real"
    chmod 0644 "$p/$libdir/$lib_real"
    ln -s "$lib_real" "$p/$libdir/$lib_soname"
    doc_files "$p" "$libpkg"
    install -d -m 0755 "$p/DEBIAN"
    fill "$tmpl/$libpkg.shlibs" SOVERSION="$lib_soversion" UPSTREAM_VERSION="$upstream" > "$p/DEBIAN/shlibs"
    install -m 0644 "$tmpl/$libpkg.triggers" "$p/DEBIAN/triggers"
    chmod 0644 "$p/DEBIAN/shlibs"
    deps="$(depends_of "$from/lib/$lib_real" | join_deps)"
    finish "$p" "$libpkg" "$deps"

    # libearshot-client-dev
    p="$w/libearshot-client-dev"
    install -d -m 0755 "$p/usr/include/earshot/v1" "$p/$libdir/pkgconfig"
    install -m 0644 "$repo/clients/c/include/earshot/client.h" "$p/usr/include/earshot/"
    install -m 0644 "$repo"/clients/c/generated/earshot/v1/*.pb-c.h "$p/usr/include/earshot/v1/"
    ln -s "$lib_soname" "$p/$libdir/libearshot-client.so"
    strip_to static "$from/lib/libearshot-client.a" "$p/$libdir/libearshot-client.a"
    chmod 0644 "$p/$libdir/libearshot-client.a"
    sed -e 's|@PREFIX@|/usr|' -e "s|@LIBDIR@|/usr/lib/$triplet|" -e 's|@INCLUDEDIR@|/usr/include|' \
        -e "s|@VERSION@|$lib_version|" "$repo/clients/c/earshot-client.pc.in" > "$p/$libdir/pkgconfig/earshot-client.pc"
    chmod 0644 "$p/$libdir/pkgconfig/earshot-client.pc"
    ! grep -q '@[A-Z_]*@' "$p/$libdir/pkgconfig/earshot-client.pc" || die "clients/c/earshot-client.pc.in has a field this script does not fill"
    doc_files "$p" libearshot-client-dev
    install -m 0644 "$repo/clients/c/README.md" "$p/usr/share/doc/libearshot-client-dev/README.md"
    finish "$p" libearshot-client-dev ""   # its Depends are fixed in the template

    [ "$keep_work" -eq 1 ] || { rm -rf "$w"; trap - EXIT; }
}

for a in "${arches[@]}"; do build_arch "$a"; done

# --- Summary --------------------------------------------------------------------------------
echo
printf '%-22s %-16s %-6s %9s  %s\n' PACKAGE VERSION ARCH SIZE DEPENDS
for deb in "${built[@]}"; do
    printf '%-22s %-16s %-6s %8sK  %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
        "$(dpkg-deb -f "$deb" Architecture)" "$(( ($(stat -c %s "$deb") + 1023) / 1024 ))" "$(dpkg-deb -f "$deb" Depends)"
done
echo
say "${#built[@]} packages in $out"

if [ "$run_lintian" -eq 1 ]; then
    command -v lintian >/dev/null || die "--lintian: lintian not found (apt-get install lintian)"
    status=0
    for deb in "${built[@]}"; do
        lintian --tag-display-limit 0 "$deb" || status=1
    done
    exit "$status"
fi
