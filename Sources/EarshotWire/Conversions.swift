import EarshotCore
import FoundationEssentials

// Core types to their wire messages. The wire keeps every property a client can show; nothing
// here decides anything.

extension Earshot_V1_MediaItem {
    public init(_ item: MediaItem) {
        self.init()
        id = item.id
        title = item.title ?? ""
        subtitle = item.subtitle ?? ""
        artist = item.artist ?? ""
        genres = item.genres
        isrc = item.isrc ?? ""
        artworkURL = item.artworkURL ?? ""
        videoURL = item.videoURL ?? ""
        webURL = item.webURL ?? ""
        if let explicit = item.explicitContent { explicitContent = explicit }
        if let date = item.creationDate { creationDate = ISODate.render(date) }
        timeRanges = item.timeRanges.map { Earshot_V1_TimeRange(start: $0.lowerBound, end: $0.upperBound) }
        frequencySkewRanges = item.frequencySkewRanges.map { Earshot_V1_TimeRange(start: $0.lowerBound, end: $0.upperBound) }
        if !item.customProperties.isEmpty { customPropertiesJson = JSONValue.object(item.customProperties).jsonText }
    }
}

extension Earshot_V1_TimeRange {
    public init(start: Double, end: Double) {
        self.init()
        self.start = start
        self.end = end
    }
}

extension Earshot_V1_MatchedMediaItem {
    /// `catalog` names the catalog for items that do not carry their own name.
    public init(_ item: MatchedMediaItem, catalog: String = "") {
        self.init()
        mediaItem = Earshot_V1_MediaItem(item.mediaItem)
        matchOffset = item.matchOffset
        predictedCurrentMatchOffset = item.predictedCurrentMatchOffset
        frequencySkew = item.frequencySkew
        timeSkew = item.timeSkew
        confidence = item.confidence
        referenceIndex = UInt32(clamping: item.referenceIndex)
        self.catalog = item.catalogName.isEmpty ? catalog : item.catalogName
        catalogVersion = UInt64(max(0, item.catalogVersion))
    }
}

extension Earshot_V1_RecognitionError {
    public init(_ error: EarshotError) {
        self.init()
        code = Int32(error.code)
        name = error.name
        message = error.message
    }
}

extension Earshot_V1_MatchResult {
    /// `result` as sent: `madeAt` is when it was made, `streamTime` the audio heard by then.
    public init(_ result: MatchResult, catalog: String = "", repeat isRepeat: Bool = false, streamTime: Double = 0,
                madeAt: Date = Date()) {
        self.init()
        switch result {
        case .match(let items):
            outcome = .match
            self.items = items.map { Earshot_V1_MatchedMediaItem($0, catalog: catalog) }
        case .noMatch:
            outcome = .noMatch
        case .error(let e):
            outcome = .error
            error = Earshot_V1_RecognitionError(e)
        }
        self.repeat = isRepeat
        self.streamTime = streamTime
        madeAtUnixMs = Int64((madeAt.timeIntervalSince1970 * 1000).rounded())
    }
}

extension Earshot_V1_SessionState {
    public init(_ state: ManagedSessionMachine.State) {
        switch state {
        case .idle: self = .idle
        case .prerecording: self = .prerecording
        case .matching: self = .matching
        }
    }
}

extension Earshot_V1_CatalogSummary {
    public init(name: String, catalog: MappedCatalog, active: Bool) {
        self.init()
        self.name = name
        referenceCount = UInt32(clamping: catalog.referenceCount)
        totalDurationSeconds = catalog.totalDuration
        byteCount = UInt64(catalog.byteCount)
        minimumQueryDuration = catalog.minimumQuerySignatureDuration
        maximumQueryDuration = catalog.maximumQuerySignatureDuration
        formatVersion = UInt32(catalog.formatVersion)
        self.active = active
        enabled = active
        state = active ? .active : .disabled
    }

    /// A catalog file that was left out: only its name, the state and the reason (a catalog
    /// that does not verify has no counts worth showing).
    public init(name: String, failure: String) {
        self.init()
        self.name = name
        state = .failed
        self.failure = failure
    }
}
