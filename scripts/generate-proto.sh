#!/usr/bin/env bash
# Regenerates the protobuf code from proto/earshot/v1/*.proto and commits nothing by itself:
#   Swift   -> Sources/EarshotWire/Generated/*.pb.swift   (protoc-gen-swift, messages only)
#   Python  -> clients/python/src/earshot/v1/*_pb2.py      (protoc's built-in generator)
#   sums    -> Sources/EarshotWire/Generated/proto-sources.sha256 (what the code was made from;
#              the tests check it against proto/ so stale generated code fails CI)
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
