#!/usr/bin/env bash
# Regenerates the protobuf code from proto/earshot/v1/*.proto and commits nothing by itself:
#   Swift   -> Sources/EarshotWire/Generated/*.pb.swift   (protoc-gen-swift, messages only)
#   Python  -> clients/python/src/earshot/v1/*_pb2.py      (protoc's built-in generator)
#   sums    -> Sources/EarshotWire/Generated/proto-sources.sha256 (what the code was made from;
#              the tests check it against proto/ so stale generated code fails CI)
#   C       -> clients/c/generated/earshot/v1/*.pb-c.{c,h}  (protoc-c, Debian's protobuf-c-compiler)
#              with its own clients/c/generated/proto-sources.sha256 (checked by the C tests)
#
#   scripts/generate-proto.sh --c-only        # only the C code (no Swift toolchain needed);
#                                             # C_OUT=DIR writes it to DIR instead (for checks)
#
#   scripts/generate-proto.sh                 # builds protoc-gen-swift once (about a minute or
#                                             # several) into .build-protogen, then generates
#   PROTOC_GEN_SWIFT=/path/to/protoc-gen-swift scripts/generate-proto.sh
#
# Needs protoc (Debian: protobuf-compiler). Service definitions produce no Swift code; the
# method table is hand-written in Sources/EarshotWire/Methods.swift.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

c_only=false
if [ "${1:-}" = "--c-only" ]; then c_only=true; fi

# protoc-c 1.4 (Debian 12) does not take proto3 `optional`: it gets a copy of proto/ where each
# `optional T name = N;` is the synthetic oneof protoc itself makes of it, `oneof _name { T name = N; }`.
# The wire format is the same, and presence is kept (the oneof's case, `_name_case`).
generate_c() {
    command -v protoc-c >/dev/null || { echo "generate-proto: protoc-c missing (apt-get install protobuf-c-compiler)" >&2; exit 1; }
    local out="${C_OUT:-clients/c/generated}" copy f
    copy="$(mktemp -d)"
    mkdir -p "$copy/earshot/v1"
    for f in proto/earshot/v1/*.proto; do
        sed -E 's/^([[:space:]]*)optional[[:space:]]+([A-Za-z0-9_.]+)[[:space:]]+([a-z0-9_]+)[[:space:]]*=[[:space:]]*([0-9]+)[[:space:]]*;/\1oneof _\3 { \2 \3 = \4; }/' \
            "$f" > "$copy/earshot/v1/$(basename "$f")"
    done
    rm -rf "$out/earshot"
    mkdir -p "$out"
    out="$(cd "$out" && pwd)"
    # Relative paths, so the generated files name earshot/v1/… and not the temporary folder.
    (cd "$copy" && protoc-c -I . --c_out="$out" earshot/v1/*.proto)
    rm -rf "$copy"
    sha256sum proto/earshot/v1/*.proto > "$out/proto-sources.sha256"
    echo "generate-proto: wrote $(ls "$out"/earshot/v1/*.pb-c.c | wc -l) C files to $out"
}

if $c_only; then
    generate_c
    exit 0
fi

command -v protoc >/dev/null || { echo "generate-proto: protoc missing (apt-get install protobuf-compiler)" >&2; exit 1; }

plugin="${PROTOC_GEN_SWIFT:-}"
if [ -z "$plugin" ]; then
    echo "generate-proto: building protoc-gen-swift (swift-protobuf, as pinned by Package.swift)"
    swift build -c release --product protoc-gen-swift --scratch-path .build-protogen >/dev/null
    plugin="$(swift build -c release --product protoc-gen-swift --scratch-path .build-protogen --show-bin-path)/protoc-gen-swift"
fi

protos=(proto/earshot/v1/*.proto)
swift_out=Sources/EarshotWire/Generated
python_out=clients/python/src

rm -f "$swift_out"/*.pb.swift
mkdir -p "$swift_out" "$python_out/earshot/v1"
protoc -I proto --plugin=protoc-gen-swift="$plugin" \
    --swift_opt=Visibility=Public --swift_opt=FileNaming=DropPath --swift_out="$swift_out" "${protos[@]}"

rm -f "$python_out"/earshot/v1/*_pb2.py
protoc -I proto --python_out="$python_out" "${protos[@]}"
touch "$python_out/earshot/__init__.py" "$python_out/earshot/v1/__init__.py"

sha256sum "${protos[@]}" > "$swift_out/proto-sources.sha256"
echo "generate-proto: wrote $(ls "$swift_out"/*.pb.swift | wc -l) Swift and $(ls "$python_out"/earshot/v1/*_pb2.py | wc -l) Python files"
generate_c
