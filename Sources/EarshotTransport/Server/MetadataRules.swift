/// The server's checks on a call's metadata.
///
/// Violations answer INVALID_ARGUMENT, not RESOURCE_EXHAUSTED: the request would fail the same
/// way however often it were retried, and RESOURCE_EXHAUSTED is kept for limits that clear by
/// themselves (calls in flight, a full send queue).
enum MetadataRules {
    /// Why `metadata` is refused, or nil if it is fine.
    static func problem(with metadata: [String: String], maximumBytes: Int, maximumEntries: Int) -> String? {
        if metadata.count > maximumEntries {
            return "\(metadata.count) metadata entries; at most \(maximumEntries) are allowed"
        }
        var bytes = 0
        for (key, value) in metadata {
            bytes += key.utf8.count + value.utf8.count
            if !isValidKey(key) {
                return "metadata key \"\(WireCoding.printable(Array(key.utf8)))\" is not made of lowercase [0-9a-z_.-]"
            }
        }
        if bytes > maximumBytes {
            return "\(bytes) bytes of metadata; at most \(maximumBytes) are allowed"
        }
        return nil
    }

    /// gRPC's header-name rule: non-empty, `[0-9a-z_.-]` only.
    static func isValidKey(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a) || c == 0x5f || c == 0x2e || c == 0x2d
        }
    }
}
