/// The most cues a reference, a catalog or a controller's set may hold, and the most text they may
/// carry: the one place these limits live. `CueSchedule` applies the per-reference ones (so the
/// CLI's import, a catalog opened by the daemon and `SetCues` all meet them), catalogs the
/// per-catalog one. Past a limit the cues are refused whole with `catalogInvalid`, naming the limit
/// and the number seen.
public enum CueLimits {
    /// A quiz show has tens to hundreds of cues; 2,000 on one reference costs the monitor about a
    /// millisecond a step and a max-size set about 1 MB of daemon memory.
    public static let cuesPerReference = 2_000
    /// Ten references at the per-reference limit: a season of episodes in one catalog.
    public static let cuesPerCatalog = 20_000
    /// Text of one cue (`attributeBytes(of:)`): a URI, an asset list URI, a label and a few
    /// client attributes fit many times over.
    public static let attributeBytesPerCue = 4_096
    /// Text of one reference's cues: bounds the schedule a KIND_SCHEDULE event or `GetSchedule`
    /// carries to a few hundred KB.
    public static let attributeBytesPerSet = 262_144

    /// The bytes of text a cue carries (UTF-8): its id, class, asset URI and list, skip-control
    /// label, and the name and value of every other attribute. Numbers and flags are not counted.
    public static func attributeBytes(of cue: Cue) -> Int {
        var bytes = cue.id.utf8.count + cue.cueClass.utf8.count
        bytes += (cue.assetURI?.utf8.count ?? 0) + (cue.assetList?.utf8.count ?? 0) + (cue.skipControlLabelID?.utf8.count ?? 0)
        for (name, attribute) in cue.attributes { bytes += name.utf8.count + attribute.value.utf8.count }
        return bytes
    }

    /// Checks the count alone, before anything is built from the cues.
    public static func checkCount(_ count: Int) throws(EarshotError) {
        guard count <= cuesPerReference else {
            throw .catalogInvalid("\(count) cues for one reference; at most \(cuesPerReference) are allowed")
        }
    }

    /// Checks one reference's cues: their count, each cue's text and the text of all of them.
    public static func check(_ cues: [Cue]) throws(EarshotError) {
        try checkCount(cues.count)
        var total = 0
        for cue in cues {
            let bytes = attributeBytes(of: cue)
            guard bytes <= attributeBytesPerCue else {
                throw .catalogInvalid("cue \(cue.shownID): \(bytes) bytes of attributes; "
                    + "at most \(attributeBytesPerCue) per cue are allowed")
            }
            total += bytes
        }
        guard total <= attributeBytesPerSet else {
            throw .catalogInvalid("\(total) bytes of attributes in one reference's cues; at most \(attributeBytesPerSet) are allowed")
        }
    }

    /// Checks the cues of a whole catalog, given each reference's count.
    public static func checkCatalog<Counts: Sequence<Int>>(_ counts: Counts) throws(EarshotError) {
        let total = counts.reduce(0, +)
        guard total <= cuesPerCatalog else {
            throw .catalogInvalid("\(total) cues in one catalog; at most \(cuesPerCatalog) are allowed")
        }
    }
}
