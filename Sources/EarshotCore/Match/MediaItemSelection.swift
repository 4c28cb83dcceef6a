/// ShazamKit's rules for which media items of a matched reference are returned (DESIGN §2):
///
/// - an item with `frequencySkewRanges` is returned only if the measured skew is inside one;
/// - an item with `timeRanges` is returned only while the offset is inside one, the most recently
///   started range first; items without time ranges come last, in catalog order;
/// - if every item is filtered out by its time ranges, a basic item carrying only the match data is
///   still returned so the offset and skew reach the caller.
public enum MediaItemSelection {
    /// Returns the items in the order they are reported, or `nil` if a skew range excluded the
    /// reference entirely (no item at all applies to audio at this skew).
    /// `basicItemID` names the basic item returned when every item is out of its time ranges.
    public static func select(_ items: [MediaItem], offset: Double, frequencySkew: Double, basicItemID: String) -> [MediaItem]? {
        let skewAllowed = items.filter { item in
            item.frequencySkewRanges.isEmpty || item.frequencySkewRanges.contains { $0.contains(frequencySkew) }
        }
        guard !skewAllowed.isEmpty else { return nil }
        var ranged: [(start: Double, item: MediaItem)] = []
        var unranged: [MediaItem] = []
        for item in skewAllowed {
            if item.timeRanges.isEmpty {
                unranged.append(item)
            } else if let start = item.timeRanges.filter({ $0.contains(offset) }).map(\.lowerBound).max() {
                ranged.append((start, item))
            }
        }
        // Stable sort: the latest-starting range (the one entered most recently) first.
        let ordered = ranged.enumerated().sorted { a, b in
            a.element.start != b.element.start ? a.element.start > b.element.start : a.offset < b.offset
        }.map(\.element.item)
        let result = ordered + unranged
        if result.isEmpty { return [MediaItem(id: basicItemID)] }
        return result
    }
}
