import Testing

@testable import EarshotCore

/// The coarse stage ranks speed and pitch hypotheses without the catalog's commonest keys
/// (`MatchThresholds.coarsePostingLimit`); the other searches read every key up to
/// `MappedCatalog.maximumPostingsPerKey`.
struct CoarsePostingLimitTests {
    /// A signature whose one landmark (bin 50 to bin 60, 10 frames later) occurs every 100
    /// frames, `count` times.
    static func figure(count: Int) throws -> Signature {
        let peaks = (0..<count).flatMap { k -> [Peak] in
            let t = Float(k * 100)
            return [Peak(time: t, bin: 50, magnitude: 1), Peak(time: t + 10, bin: 60, magnitude: 1)]
        }
        return try Signature(duration: Double(count * 100) * FingerprintParameters.hopDuration + 1, peaks: peaks)
    }

    /// A catalog of `copies` references of `signature`.
    static func catalog(_ signature: Signature, copies: Int = 1) throws -> MappedCatalog {
        var c = CustomCatalog()
        for k in 0..<copies { try c.addReferenceSignature(signature, representing: [MediaItem(id: "r\(k)")]) }
        return try MappedCatalog(bytes: try c.dataRepresentation())
    }

    static func hits(_ matcher: Matcher, query: Signature, limit: Int) -> Int {
        matcher.hits.query(query)
        matcher.hits.collect(hypothesis: Matcher.unchangedSpeed, anchorStride: 1, postingLimit: limit,
                             within: matcher.bins.histogram)
        return matcher.hits.count
    }

    @Test func theLimitFollowsTheCatalogsMeanBetweenItsFloorAndTheLimitOfEverySearch() {
        let floor = MatchThresholds.coarseLeastPostingLimit, factor = MatchThresholds.coarseCommonKeyFactor
        #expect(MatchThresholds.coarsePostingLimit(entryCount: 0) == floor)
        #expect(MatchThresholds.coarsePostingLimit(entryCount: 300_000) == floor, "3 h: a fraction of a posting per key")
        // 100 h: about 4.8 postings per key.
        #expect(MatchThresholds.coarsePostingLimit(entryCount: 9_983_286) == (factor * 9_983_286) >> 21)
        #expect(MatchThresholds.coarsePostingLimit(entryCount: 9_983_286) > floor)
        #expect(MatchThresholds.coarsePostingLimit(entryCount: 99_900_000) == MappedCatalog.maximumPostingsPerKey, "1000 h")
        #expect(MatchThresholds.coarsePostingLimit(entryCount: Int.max) == MappedCatalog.maximumPostingsPerKey)
    }

    /// A key with more postings than the coarse limit gives the coarse stage no hits and every
    /// other search all of them; one at the limit is read in full.
    @Test func aKeyCommonerThanTheCoarseLimitIsReadOnlyByTheFullSearches() throws {
        let limit = MatchThresholds.coarseLeastPostingLimit
        for (count, coarse) in [(limit, true), (limit + 1, false), (300, false)] {
            let signature = try Self.figure(count: count)
            let matcher = Matcher(catalog: try Self.catalog(signature))
            #expect(matcher.coarsePostingLimit == limit)
            let query = try signature.slice(from: 1, duration: 5)
            let full = Self.hits(matcher, query: query, limit: MappedCatalog.maximumPostingsPerKey)
            #expect(full > 0, "\(count) postings: every search but the coarse stage reads them")
            let read = Self.hits(matcher, query: query, limit: matcher.coarsePostingLimit)
            #expect(coarse ? read == full : read == 0, "\(count) postings in the coarse stage: \(read) hits of \(full)")
        }
    }

    /// Catalogs searched together hold the coarse limit over their postings together, as one
    /// catalog of them all does.
    @Test func catalogsSearchedTogetherHoldTheCoarseLimitTogether() throws {
        let signature = try Self.figure(count: 40)
        let query = try signature.slice(from: 1, duration: 5)
        let alone = Matcher(catalog: try Self.catalog(signature))
        #expect(Self.hits(alone, query: query, limit: alone.coarsePostingLimit) > 0, "40 postings: within the limit")
        let together = Matcher(searching: try #require(SearchedCatalogs([try Self.catalog(signature), try Self.catalog(signature)])))
        #expect(Self.hits(together, query: query, limit: together.coarsePostingLimit) == 0, "80 in two catalogs: passed over")
        let inOne = Matcher(catalog: try Self.catalog(signature, copies: 2))
        #expect(Self.hits(inOne, query: query, limit: inOne.coarsePostingLimit) == 0, "80 in one catalog: passed over")
    }
}
