import FoundationEssentials

/// The stored form of one reference's media items in a catalog's metadata section: the JSON
/// object `{"mediaItems": [...]}`, each item in `MediaItem`'s `Codable` form (dates as `ISODate`
/// text, ranges as `[lower, upper]`).
///
/// Written with Foundation's encoder; read by hand with `JSONReader`, because a catalog decodes
/// every reference's items when it opens and `JSONDecoder` took about 10 µs for each (most of a
/// 100-hour catalog's open). The reader accepts what the encoder writes, skips fields it does
/// not know (a later version's), and takes a missing list field as empty.
enum StoredMediaItems {
    private struct Wrapper: Encodable { var mediaItems: [MediaItem] }

    static func encode(_ items: [MediaItem]) throws(EarshotError) -> [UInt8] {
        do { return [UInt8](try JSONCoding.encoder.encode(Wrapper(mediaItems: items))) } catch {
            throw .internalError("could not encode media items: \(error)")
        }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) throws(JSONReader.Failure) -> [MediaItem] {
        var reader = JSONReader(bytes)
        var items: [MediaItem]?
        try reader.readObject { (reader, key) throws(JSONReader.Failure) in
            guard key == "mediaItems" else { return try reader.skipValue() }
            var list: [MediaItem] = []
            try reader.readArray { (reader, index) throws(JSONReader.Failure) in
                list.append(try item(&reader, index: index))
            }
            items = list
        }
        try reader.finish()
        guard let items else { throw JSONReader.Failure(offset: 0, reason: "the field \"mediaItems\" is missing") }
        return items
    }

    /// Item `index` of the list; its field path (`mediaItems[1].title`) is spelled out only
    /// for a failure.
    private static func item(_ reader: inout JSONReader, index: Int) throws(JSONReader.Failure) -> MediaItem {
        var item = MediaItem(id: "")
        var hasID = false
        try reader.readObject { (reader, key) throws(JSONReader.Failure) in
            do throws(JSONReader.Failure) {
                switch key {
                case "id": item.id = try reader.readString(); hasID = true
                case "title": item.title = try optionalString(&reader)
                case "subtitle": item.subtitle = try optionalString(&reader)
                case "artist": item.artist = try optionalString(&reader)
                case "isrc": item.isrc = try optionalString(&reader)
                case "artworkURL": item.artworkURL = try optionalString(&reader)
                case "videoURL": item.videoURL = try optionalString(&reader)
                case "webURL": item.webURL = try optionalString(&reader)
                case "explicitContent": item.explicitContent = try reader.readNull() ? nil : try reader.readBool()
                case "creationDate": item.creationDate = try date(&reader)
                case "genres":
                    var genres: [String] = []
                    try reader.readArray { (reader, _) throws(JSONReader.Failure) in genres.append(try reader.readString()) }
                    item.genres = genres
                case "timeRanges": item.timeRanges = try ranges(&reader)
                case "frequencySkewRanges": item.frequencySkewRanges = try ranges(&reader)
                case "customProperties":
                    try reader.readObject { (reader, name) throws(JSONReader.Failure) in
                        item.customProperties[name] = try reader.readValue()
                    }
                default: try reader.skipValue()
                }
            } catch {
                throw error.within("mediaItems[\(index)].\(key)")
            }
        }
        guard hasID else { throw reader.failure("the field \"id\" is missing").within("mediaItems[\(index)]") }
        return item
    }

    private static func optionalString(_ reader: inout JSONReader) throws(JSONReader.Failure) -> String? {
        try reader.readNull() ? nil : try reader.readString()
    }

    private static func date(_ reader: inout JSONReader) throws(JSONReader.Failure) -> Date? {
        if try reader.readNull() { return nil }
        let text = try reader.readString()
        guard let date = ISODate.parse(text) else { throw reader.failure("\"\(text)\" is not an ISO 8601 date or date-time") }
        return date
    }

    /// `[[lower, upper], ...]`, each with lower ≤ upper (as `Range`'s own decoding requires).
    private static func ranges(_ reader: inout JSONReader) throws(JSONReader.Failure) -> [Range<Double>] {
        var ranges: [Range<Double>] = []
        try reader.readArray { (reader, _) throws(JSONReader.Failure) in
            var bounds: [Double] = []
            try reader.readArray { (reader, _) throws(JSONReader.Failure) in bounds.append(try reader.readNumber()) }
            guard bounds.count == 2, bounds[0] <= bounds[1] else { throw reader.failure("a range must be [lower, upper] with lower ≤ upper") }
            ranges.append(bounds[0]..<bounds[1])
        }
        return ranges
    }
}
