extension StringProtocol {
    /// The text without its leading and trailing whitespace and newlines (Unicode's, as
    /// `Character.isWhitespace` knows them): Foundation's `trimmingCharacters(in:
    /// .whitespacesAndNewlines)` without linking Foundation.
    public func trimmingWhitespace() -> SubSequence {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else {
            return self[endIndex...]
        }
        return self[first...last]
    }
}
