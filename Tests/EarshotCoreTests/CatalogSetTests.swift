@testable import EarshotCore
import EarshotTestSupport
import Foundation
import Testing

/// Several catalogs searched as one, and the author-signature trailer as the core sees it.
struct CatalogSetTests {
    static let audio = (0..<2).map { SyntheticMusic.make(seed: UInt64(700 + $0), duration: 30) }

    static func catalog(_ index: Int, id: String, maximumQuery: Double = 12) throws -> MappedCatalog {
        var c = CustomCatalog()
        try c.addReferenceSignature(try SyntheticSignature.of(audio[index]), representing: [MediaItem(id: id, title: id)])
        c.maximumQuerySignatureDuration = maximumQuery
        return try MappedCatalog(bytes: try c.dataRepresentation())
    }

    static func query(_ index: Int, start: Double, duration: Double) throws -> Signature {
        try SyntheticSignature.of(SyntheticSignature.excerpt(audio[index], start: start, duration: duration))
    }

    @Test func itemsSayWhichCatalogAndVersionTheyCameFrom() throws {
        let matcher = CatalogSetMatcher(CatalogSet([
            .init(name: "first", version: 3, catalog: try Self.catalog(0, id: "a")),
            .init(name: "second", version: 1, catalog: try Self.catalog(1, id: "b")),
        ]))
        let one = try #require(matcher.match(try Self.query(1, start: 8, duration: 8)).mediaItems.first)
        #expect(one.mediaItem.id == "b" && one.catalogName == "second" && one.catalogVersion == 1)
        #expect(abs(one.matchOffset - 8) < 0.1)
        let other = try #require(matcher.match(try Self.query(0, start: 4, duration: 8)).mediaItems.first)
        #expect(other.mediaItem.id == "a" && other.catalogName == "first" && other.catalogVersion == 3)
    }

    /// Across catalogs, references go by their best confidence; within one, the matcher's order
    /// stands even when a later place has more confidence.
    @Test func aReferencesPlacesKeepTheMatchersOrder() {
        func item(_ catalog: String, _ reference: Int, _ offset: Double, _ confidence: Double) -> MatchedMediaItem {
            MatchedMediaItem(mediaItem: MediaItem(id: "\(catalog)\(reference)"), matchOffset: offset, predictedCurrentMatchOffset: offset,
                             frequencySkew: 0, timeSkew: 0, confidence: confidence, referenceIndex: reference, catalogName: catalog)
        }
        let items = [item("a", 0, 130, 0.46), item("a", 0, 10, 0.78), item("a", 1, 50, 0.6), item("b", 0, 20, 0.9), item("b", 0, 80, 0.5)]
        let ranked = CatalogSetMatcher.ranked(items)
        #expect(ranked.map(\.catalogName) == ["b", "b", "a", "a", "a"])
        #expect(ranked.map(\.matchOffset) == [20, 80, 130, 10, 50])
    }

    /// One catalog searched as a set answers as its own matcher does (clean, noisy and
    /// speed-changed queries in a song with a repeated section): the set searches stage by stage
    /// and goes on from every candidate stage one found (`lastFound`), as one matcher does.
    /// A member's last resort (a place only its peak search found) goes when another member
    /// found something else, and stays when nothing else was found anywhere.
    @Test func lastResortsCountOnlyWhenNoCatalogFoundAnythingElse() {
        func candidate(_ reference: Int, lastResort: Bool) -> Matcher.Candidate {
            var c = Matcher.Candidate(referenceIndex: reference, offset: 5, timeScale: 1, pitchRatio: 1, inliers: lastResort ? 2 : 12,
                                      confidence: lastResort ? 0.46 : 0.6)
            c.lastResort = lastResort
            return c
        }
        let mixed = CatalogSetMatcher.lastResortsDropped([[candidate(0, lastResort: false)], [candidate(1, lastResort: true)], []])
        #expect(mixed.map(\.count) == [1, 0, 0])
        #expect(mixed[0].first?.referenceIndex == 0)
        let alone = CatalogSetMatcher.lastResortsDropped([[], [candidate(1, lastResort: true)], [candidate(2, lastResort: true)]])
        #expect(alone.map(\.count) == [0, 1, 1])
    }

    @Test func oneCatalogAsASetAnswersAsItsMatcher() throws {
        let section = SyntheticMusic.make(seed: 741, duration: 10)
        let audio = SyntheticMusic.make(seed: 742, duration: 6) + section + SyntheticMusic.make(seed: 743, duration: 6) + section
            + SyntheticMusic.make(seed: 744, duration: 6)
        var c = CustomCatalog()
        try c.addReferenceSignature(try SyntheticSignature.of(audio), representing: [MediaItem(id: "song")])
        let catalog = try MappedCatalog(bytes: try c.dataRepresentation())
        let set = CatalogSetMatcher(CatalogSet([.init(name: "only", version: 1, catalog: catalog)]))
        let matcher = Matcher(catalog: catalog)
        var compared = 0
        for (k, start) in [2.0, 7.0, 12.0, 23.0, 29.0].enumerated() {
            let clean = SyntheticSignature.excerpt(audio, start: start, duration: 8)
            for samples in [clean, Degradations.addWhiteNoise(clean, snr: -3, seed: UInt64(k)), Degradations.changeSpeed(clean, by: 1.04)] {
                let query = try SyntheticSignature.of(samples)
                let alone = matcher.match(query).mediaItems, together = set.match(query).mediaItems
                #expect(alone.map(\.matchOffset) == together.map(\.matchOffset), "start \(start)")
                #expect(alone.map(\.confidence) == together.map(\.confidence), "start \(start)")
                compared += alone.isEmpty ? 0 : 1
            }
        }
        #expect(compared >= 10, "most queries match")
    }

    /// Catalogs that accept the same query durations are searched as one catalog holding all
    /// their references: the same items, places, skews and confidences, each item labelled with
    /// its catalog and numbered within it; and a followed place is found again in its catalog.
    /// Also when a member is a catalog of the earlier file format (`mixedFormats`).
    @Test(arguments: [false, true])
    func catalogsSearchedTogetherAnswerAsOneCatalogOfThemAll(mixedFormats: Bool) throws {
        let songs = (0..<3).map { SyntheticMusic.make(seed: UInt64(760 + $0), duration: 24) }
        var all = CustomCatalog()
        var members: [CatalogSet.Member] = []
        for (k, song) in songs.enumerated() {
            let signature = try SyntheticSignature.of(song)
            try all.addReferenceSignature(signature, representing: [MediaItem(id: "song\(k)")])
            var one = CustomCatalog()
            try one.addReferenceSignature(signature, representing: [MediaItem(id: "song\(k)")])
            let bytes = try CatalogWriter.encode(one, version: mixedFormats && k == 1 ? 1 : 2)
            members.append(.init(name: "part\(k)", version: k + 1, catalog: try MappedCatalog(bytes: bytes)))
        }
        let whole = Matcher(catalog: try MappedCatalog(bytes: try all.dataRepresentation()))
        let set = CatalogSetMatcher(CatalogSet(members))
        var compared = 0
        for (k, song) in songs.enumerated() {
            let clean = SyntheticSignature.excerpt(song, start: 5, duration: 8)
            for samples in [clean, Degradations.addWhiteNoise(clean, snr: -3, seed: UInt64(k)), Degradations.changeSpeed(clean, by: 0.97)] {
                let query = try SyntheticSignature.of(samples)
                let alone = whole.match(query).mediaItems, together = set.match(query).mediaItems
                #expect(alone.map(\.mediaItem.id) == together.map(\.mediaItem.id))
                #expect(alone.map(\.matchOffset) == together.map(\.matchOffset))
                #expect(alone.map(\.frequencySkew) == together.map(\.frequencySkew))
                #expect(alone.map(\.confidence) == together.map(\.confidence))
                guard let top = together.first else { continue }
                compared += 1
                #expect(top.mediaItem.id == "song\(k)" && top.catalogName == "part\(k)" && top.catalogVersion == k + 1)
                #expect(top.referenceIndex == 0)
                let followed = set.support(query, following: top, expectedOffset: top.predictedCurrentMatchOffset)
                #expect(followed?.catalogName == "part\(k)")
                #expect(abs((followed?.matchOffset ?? -1) - top.matchOffset) < 0.05)
            }
        }
        #expect(compared >= 7, "most queries match")
        #expect(members.map(\.catalog.formatVersion) == (mixedFormats ? [2, 1, 2] : [2, 2, 2]))
    }

    /// A key that only the catalogs searched together make too common (each gives up to the
    /// limit of postings per key) is passed over, as one catalog of them all passes it over; it
    /// is not kept for the first catalogs alone.
    @Test func aKeyTooCommonAcrossTheCatalogsIsPassedOverAsInOneCatalog() throws {
        // One landmark (bin 50 to bin 60, 10 frames later) every 100 frames, 300 times.
        let peaks = (0..<300).flatMap { k -> [Peak] in
            let t = Float(k * 100)
            return [Peak(time: t, bin: 50, magnitude: 1), Peak(time: t + 10, bin: 60, magnitude: 1)]
        }
        let signature = try Signature(duration: 30_000 * FingerprintParameters.hopDuration + 1, peaks: peaks)
        func catalog(copies: Int) throws -> MappedCatalog {
            var c = CustomCatalog()
            for k in 0..<copies { try c.addReferenceSignature(signature, representing: [MediaItem(id: "r\(k)")]) }
            return try MappedCatalog(bytes: try c.dataRepresentation())
        }
        let query = try signature.slice(from: 10, duration: 8)
        func hits(_ matcher: Matcher) -> Int {
            matcher.hits.query(query)
            matcher.hits.collect(hypothesis: Matcher.unchangedSpeed, anchorStride: 1, within: matcher.bins.histogram)
            return matcher.hits.count
        }
        let one = try catalog(copies: 1)
        #expect(hits(Matcher(catalog: one)) > 0, "300 postings: within the limit")
        #expect(hits(Matcher(catalog: try catalog(copies: 2))) == 0, "600 postings in one catalog: passed over")
        let together = try #require(SearchedCatalogs([one, try catalog(copies: 1)]))
        #expect(hits(Matcher(searching: together)) == 0, "600 postings in two catalogs searched together: passed over")
    }

    /// A query longer than a member accepts is cut to its last seconds for that member; the
    /// offset still refers to the start of the whole query.
    @Test func aLongQueryIsCutForACatalogWithShorterLimits() throws {
        let matcher = CatalogSetMatcher(CatalogSet([
            .init(name: "short", version: 1, catalog: try Self.catalog(0, id: "a", maximumQuery: 5)),
            .init(name: "long", version: 1, catalog: try Self.catalog(1, id: "b", maximumQuery: 12)),
        ]))
        let item = try #require(matcher.match(try Self.query(0, start: 6, duration: 11)).mediaItems.first)
        #expect(item.catalogName == "short")
        #expect(abs(item.matchOffset - 6) < 0.15, "\(item.matchOffset)")
    }

    @Test func swappingKeepsMatchersOfCatalogsThatStayAndAnEmptySetIsAnError() throws {
        let a = try Self.catalog(0, id: "a"), b = try Self.catalog(1, id: "b")
        let matcher = CatalogSetMatcher(CatalogSet([.init(name: "a", version: 1, catalog: a)]))
        let q = try Self.query(1, start: 2, duration: 8)
        #expect(matcher.match(q).mediaItems.isEmpty)
        matcher.use(CatalogSet([.init(name: "a", version: 1, catalog: a), .init(name: "b", version: 2, catalog: b)]))
        #expect(matcher.match(q).mediaItems.first?.catalogVersion == 2)
        matcher.use(.empty)
        guard case .error(let e) = matcher.match(q) else { Issue.record("an empty set matched"); return }
        #expect(e.message.contains("no catalog is enabled"))
        #expect(matcher.catalogs.isEmpty)
    }

    /// The trailer: found after the last section, parsed, and the only bytes allowed there.
    @Test func aSignatureTrailerIsFoundAndNothingElseIsAllowedAfterTheSections() throws {
        let body = try SyntheticCatalog.make().dataRepresentation()
        let signature = CatalogSignature(publicKey: [UInt8](repeating: 1, count: 32), signature: [UInt8](repeating: 2, count: 64))
        let signed = try MappedCatalog(bytes: body + signature.encoded)
        #expect(signed.signature == signature && signed.signedByteCount == body.count && signed.byteCount == body.count + 104)
        let plain = try MappedCatalog(bytes: body)
        #expect(plain.signature == nil && plain.signedByteCount == body.count)
        var wrongMagic = signature.encoded
        wrongMagic[0] ^= 1
        #expect(throws: EarshotError.self) { try MappedCatalog(bytes: body + wrongMagic) }
        #expect(throws: EarshotError.self) { try MappedCatalog(bytes: body + signature.encoded + [0]) }
    }
}
