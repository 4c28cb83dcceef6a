import FoundationEssentials

/// Metadata for a reference recording, or for a part of it (`SHMediaItem`).
///
/// `timeRanges` restrict an item to parts of the reference (seconds, half-open); `frequencySkewRanges`
/// restrict it to audio whose measured skew falls inside (0.01 = 1 % higher pitch).
public struct MediaItem: Sendable, Equatable, Codable {
    /// Stable identity of the item (a UUID string unless the author gives one).
    public var id: String
    public var title: String?
    public var subtitle: String?
    public var artist: String?
    public var genres: [String]
    public var isrc: String?
    public var artworkURL: String?
    public var videoURL: String?
    public var webURL: String?
    public var explicitContent: Bool?
    public var creationDate: Date?
    public var timeRanges: [Range<Double>]
    public var frequencySkewRanges: [Range<Double>]
    /// Author-defined properties: any JSON value.
    public var customProperties: [String: JSONValue]

    public init(
        id: String = UUID().uuidString, title: String? = nil, subtitle: String? = nil, artist: String? = nil,
        genres: [String] = [], isrc: String? = nil, artworkURL: String? = nil, videoURL: String? = nil,
        webURL: String? = nil, explicitContent: Bool? = nil, creationDate: Date? = nil,
        timeRanges: [Range<Double>] = [], frequencySkewRanges: [Range<Double>] = [],
        customProperties: [String: JSONValue] = [:]
    ) {
        self.id = id
        self.title = title
        self.subtitle = subtitle
        self.artist = artist
        self.genres = genres
        self.isrc = isrc
        self.artworkURL = artworkURL
        self.videoURL = videoURL
        self.webURL = webURL
        self.explicitContent = explicitContent
        self.creationDate = creationDate
        self.timeRanges = timeRanges
        self.frequencySkewRanges = frequencySkewRanges
        self.customProperties = customProperties
    }

    /// Checks what a catalog must not store: empty id, non-finite or empty ranges.
    public func validate() throws(EarshotError) {
        guard !id.isEmpty else { throw .catalogInvalid("media item has an empty id") }
        for r in timeRanges where !(r.lowerBound.isFinite && r.upperBound.isFinite && r.lowerBound < r.upperBound) {
            throw .catalogInvalid("media item \(id): time range \(r) is empty or not finite")
        }
        for r in frequencySkewRanges where !(r.lowerBound.isFinite && r.upperBound.isFinite && r.lowerBound < r.upperBound) {
            throw .catalogInvalid("media item \(id): frequency skew range \(r) is empty or not finite")
        }
    }
}
