/// Strings a hostile client would send, for property tests of every place a Swift string
/// crosses into C (SQLite, paths, devices, endpoints) or reaches a log.
public enum HostileText {
    /// `count` strings built from pieces a hostile client would mix: NUL and other C0 and C1
    /// controls, DEL, backslashes, quotes, multi-byte and astral characters, combining marks; the
    /// same for the same `seed`.
    public static func samples(_ count: Int, seed: UInt64) -> [String] {
        let pieces = ["a", "viewer", "\u{0}", "\u{1}", "\u{1B}[2J", "\n", "\r", "\t", "\u{7F}", "\u{85}", "\u{9F}", "\\",
                      "\"", "'", "%", "é", "e\u{301}", "🎵", "\u{FEFF}", "\u{2028}", "/", "..", " "]
        var rng = SeededRandom(seed: seed)
        return (0..<count).map { _ in
            (0..<Int.random(in: 0...8, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
        }
    }
}

/// Paths with a NUL inside, for the wrappers that must refuse them rather than cut them at the
/// NUL: a folder holding one file, "real", and for each of a few tails after the NUL the path of
/// a new file "made" and of "real", each followed by the NUL and the tail.
public struct PathsWithANUL {
    public let folder: TemporaryDirectory

    public init() throws {
        folder = try TemporaryDirectory("earshot-boundary")
        try folder.write("real", Array("x".utf8))
    }

    /// (a path to make, a path to an existing file, the tail from the NUL on).
    public var cases: [(made: String, existing: String, suffix: String)] {
        ["\u{0}", "\u{0}x", "\u{0}/../escape"].map { (folder.path("made") + $0, folder.path("real") + $0, $0) }
    }

    /// Whether "real" is still there and nothing was made at "made" (the part before the NUL).
    public var untouched: Bool { folder.exists("real") && !folder.exists("made") }
}
