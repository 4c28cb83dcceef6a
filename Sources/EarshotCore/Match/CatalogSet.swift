/// The catalogs a match searches, each labelled with the name and version the daemon gave it.
/// A value: a swap makes a new set, and whoever still holds the old one keeps its catalogs
/// mapped until it lets go.
public struct CatalogSet: Sendable {
    public struct Member: Sendable {
        public let name: String
        public let version: Int
        public let catalog: MappedCatalog

        public init(name: String, version: Int, catalog: MappedCatalog) {
            self.name = name
            self.version = version
            self.catalog = catalog
        }
    }

    public let members: [Member]

    public init(_ members: [Member]) {
        self.members = members
    }

    public static let empty = CatalogSet([])

    public var isEmpty: Bool { members.isEmpty }

    /// The shortest query any member accepts (nil without members).
    public var minimumQueryDuration: Double? { members.map(\.catalog.minimumQuerySignatureDuration).min() }
    /// The longest query any member accepts (nil without members).
    public var maximumQueryDuration: Double? { members.map(\.catalog.maximumQuerySignatureDuration).max() }
}

/// Matches a signature against every catalog of a `CatalogSet` and answers best first, each item
/// labelled with its catalog. Catalogs that accept the same query durations (the usual case) are
/// searched together, as one catalog of their total size (`SearchedCatalogs`): one search, not
/// one per catalog. Otherwise each has its own `Matcher` and the answers are merged: a query
/// longer than a member accepts is cut to its last seconds for that member, and a member whose
/// minimum the query does not reach is skipped. Like `Matcher`, one instance serves one thread
/// at a time.
public final class CatalogSetMatcher {
    public private(set) var catalogs: CatalogSet
    /// The one search over every member, when they can share one.
    private var joint: Matcher?
    /// One matcher per member, when they cannot.
    private var matchers: [Matcher] = []

    public init(_ catalogs: CatalogSet) {
        self.catalogs = catalogs
        use(catalogs)
    }

    /// Switches to `catalogs`, keeping the matchers (and their scratch space) that still serve.
    public func use(_ catalogs: CatalogSet) {
        let members = catalogs.members.map(\.catalog)
        defer { self.catalogs = catalogs }
        if let joint, joint.catalogs.members.map(ObjectIdentifier.init) == members.map(ObjectIdentifier.init) { return }
        if let searched = SearchedCatalogs(members) {
            joint = Matcher(searching: searched)
            matchers = []
            return
        }
        joint = nil
        var kept: [ObjectIdentifier: Matcher] = [:]
        for m in matchers { kept[ObjectIdentifier(m.catalog)] = m }
        matchers = members.map { kept[ObjectIdentifier($0)] ?? Matcher(catalog: $0) }
    }

    /// `item` again, if `signature` (ending where `item` is predicted at `expectedOffset`) still
    /// supports that position: the same media item with the offsets and confidence measured
    /// there. nil when its catalog is gone or the audio does not support it with at least
    /// `minimumInliers` aligned anchors.
    public func support(_ signature: Signature, following item: MatchedMediaItem, expectedOffset: Double,
                        minimumInliers: Int? = nil) -> MatchedMediaItem? {
        guard let i = catalogs.members.firstIndex(where: { $0.name == item.catalogName }),
              item.referenceIndex >= 0, item.referenceIndex < catalogs.members[i].catalog.referenceCount
        else { return nil }
        let speed = 1 + item.timeSkew
        let start = expectedOffset - signature.duration * speed
        let matcher = joint ?? matchers[i]
        let reference = joint.map { $0.catalogs.joint(member: i, reference: item.referenceIndex) } ?? item.referenceIndex
        guard let c = matcher.candidate(signature, reference: reference, offset: start, timeScale: speed,
                                        pitch: 1 + item.frequencySkew, minimumInliers: minimumInliers)
        else { return nil }
        var kept = item
        kept.matchOffset = c.offset
        kept.timeSkew = c.timeScale - 1
        kept.frequencySkew = c.pitchRatio - 1
        kept.confidence = c.confidence
        kept.predictedCurrentMatchOffset = min(MatchedMediaItem.offset(c.offset, timeSkew: kept.timeSkew, after: signature.duration),
                                               kept.referenceDuration)
        return kept
    }

    /// What `match` answers when no catalog is enabled.
    public static let noCatalog = EarshotError.catalogInvalid("no catalog is enabled: install or enable one (earshot remote catalog push / enable)")

    /// Matches `signature` against every member: in one search when they share one; otherwise
    /// member by member, where, as in one matcher over one catalog, the search stops at unchanged
    /// speed when any member holds a clear match there, and only when none does are the other
    /// speeds searched, in every member.
    public func match(_ signature: Signature) -> MatchResult {
        if let joint { return match(signature, together: joint) }
        guard !matchers.isEmpty else { return .error(Self.noCatalog) }
        // Each member's query: the signature, cut to the member's maximum (nil: too short for it).
        let queries = catalogs.members.map {
            Self.window(of: signature, minimum: $0.catalog.minimumQuerySignatureDuration,
                        maximum: $0.catalog.maximumQuerySignatureDuration)
        }
        // Too short for every catalog: the one matcher's own message says by how much.
        guard queries.contains(where: { $0 != nil }) else { return matchers[0].match(signature) }

        var stageOne: [[Matcher.Candidate]] = []
        var foundInStageOne: [[Matcher.Candidate]] = []
        for i in queries.indices {
            stageOne.append(queries[i].map { matchers[i].referenceCandidates($0.query, depth: .unchangedSpeed) } ?? [])
            foundInStageOne.append(queries[i] == nil ? [] : matchers[i].lastFound)
        }
        let decisive = stageOne.contains { $0.contains { $0.inliers >= Matcher.decisiveInliers } }
        if !decisive {
            for i in queries.indices {
                guard let q = queries[i] else { continue }
                stageOne[i] = matchers[i].referenceCandidates(q.query, depth: .beyond(foundInStageOne[i]))
            }
        }
        stageOne = Self.lastResortsDropped(stageOne)
        var items: [MatchedMediaItem] = []
        var firstError: EarshotError?
        for (i, member) in catalogs.members.enumerated() {
            guard let q = queries[i] else { continue }
            switch matchers[i].result(of: stageOne[i], for: q.query) {
            case .match(let found):
                items += found.map { Self.labelled($0, member: member, cut: q.cut) }
            case .noMatch:
                break
            case .error(let e):
                if firstError == nil { firstError = e }
            }
        }
        if items.isEmpty { return firstError.map { .error($0) } ?? .noMatch }
        return .match(Self.ranked(items))
    }

    /// Every member searched by one matcher: a query longer than they accept is cut to its last
    /// seconds, and each item is labelled with its catalog and numbered within it.
    private func match(_ signature: Signature, together joint: Matcher) -> MatchResult {
        let searched = joint.catalogs
        // Too short (or not cut): the matcher's own message says why.
        guard let q = Self.window(of: signature, minimum: searched.minimumQuerySignatureDuration,
                                  maximum: searched.maximumQuerySignatureDuration)
        else { return joint.match(signature) }
        let result = joint.match(q.query)
        guard case .match(let found) = result else { return result }
        return .match(found.map { item in
            let (m, reference) = searched.local(item.referenceIndex)
            var labelled = Self.labelled(item, member: catalogs.members[m], cut: q.cut)
            labelled.referenceIndex = reference
            return labelled
        })
    }

    /// What a catalog accepting `minimum`…`maximum` seconds is asked: `signature`, or its last
    /// `maximum` seconds and where they start (`cut`); nil when it is too short.
    static func window(of signature: Signature, minimum: Double, maximum: Double) -> (query: Signature, cut: Double)? {
        let slack = Matcher.durationSlack
        if signature.duration + slack < minimum { return nil }
        guard signature.duration > maximum + slack else { return (signature, 0) }
        let cut = signature.duration - maximum
        return (try? signature.slice(from: cut, duration: maximum)).map { ($0, cut) }
    }

    /// `item` labelled with `member`, its offset that of the whole query's start, not of the
    /// window cut `cut` seconds into it.
    static func labelled(_ item: MatchedMediaItem, member: CatalogSet.Member, cut: Double) -> MatchedMediaItem {
        var item = item
        item.catalogName = member.name
        item.catalogVersion = member.version
        item.matchOffset = MatchedMediaItem.offset(item.matchOffset, timeSkew: item.timeSkew, after: -cut)
        return item
    }

    /// Each member's candidates, without the peak search's (`Matcher.Candidate.lastResort`) when
    /// any member found something else: a place only the peak search found counts only when
    /// nothing else is found, across the catalogs as within one.
    static func lastResortsDropped(_ found: [[Matcher.Candidate]]) -> [[Matcher.Candidate]] {
        guard found.contains(where: { $0.contains { !$0.lastResort } }) else { return found }
        return found.map { $0.filter { !$0.lastResort } }
    }

    /// The items of every catalog, references by their best confidence (ties: catalogs in set
    /// order); within one reference the matcher's order stands: it may lead with a place of less
    /// confidence that holds more of the reference's peaks (`MatchRanking.leading`).
    static func ranked(_ items: [MatchedMediaItem]) -> [MatchedMediaItem] {
        let groups = items.map { "\($0.catalogName)\u{0}\($0.referenceIndex)" }
        var best: [String: Double] = [:]
        for (group, item) in zip(groups, items) { best[group] = max(best[group] ?? 0, item.confidence) }
        let rank = groups.map { best[$0]! }
        return items.indices.sorted { rank[$0] != rank[$1] ? rank[$0] > rank[$1] : $0 < $1 }.map { items[$0] }
    }
}
