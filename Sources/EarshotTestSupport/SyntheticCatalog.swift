import EarshotCore
import Foundation

/// A small catalog of synthetic music with every kind of media-item metadata.
public enum SyntheticCatalog {
    /// Three 12 s references, each with a whole-reference item (dates, genres, nested custom
    /// properties) and a time- and skew-ranged item; queries up to 10 s.
    public static func make() throws -> CustomCatalog {
        var c = CustomCatalog()
        for i in 0..<3 {
            let s = try SyntheticSignature.of(SyntheticMusic.make(seed: UInt64(100 + i), duration: 12))
            try c.addReferenceSignature(s, representing: [
                MediaItem(id: "ep\(i)", title: "Episode \(i)", artist: "Studio", genres: ["quiz"],
                          explicitContent: false, creationDate: Date(timeIntervalSince1970: 1_700_000_000),
                          customProperties: ["question": .object(["text": .string("2+2?"), "answer": .number(4)])]),
                MediaItem(id: "ep\(i)-q1", title: "Question 1", timeRanges: [2..<5], frequencySkewRanges: [-0.01..<0.01]),
            ])
        }
        c.maximumQuerySignatureDuration = 10
        return c
    }
}
