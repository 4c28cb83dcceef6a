import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSystem
import Foundation

/// `--reference N|media-item-id`.
enum CueReference {
    /// The reference `text` names: an index (digits), else the one reference holding a media
    /// item with that id.
    static func index(of text: String, in items: [[MediaItem]], catalogPath: String) throws(CLIFailure) -> Int {
        guard !items.isEmpty else { throw CLIFailure.usage(catalogPath, "has no references") }
        if !text.isEmpty, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) {
            if let index = Int(text), items.indices.contains(index) { return index }
            // An item whose id is a number is still found when no reference has that index.
            if holding(text, items).isEmpty {
                throw CLIFailure.usage(catalogPath, "has no reference \(text) (it has \(items.count): 0…\(items.count - 1))")
            }
        }
        let found = holding(text, items)
        guard let first = found.first else {
            throw CLIFailure.usage(catalogPath, "has no media item with id \"\(text)\" (give --reference an index or a media item id)")
        }
        guard found.count == 1 else {
            throw CLIFailure.usage(catalogPath, "media item id \"\(text)\" is in references \(found.map(String.init).joined(separator: ", ")); give the index")
        }
        return first
    }

    private static func holding(_ id: String, _ items: [[MediaItem]]) -> [Int] {
        items.indices.filter { items[$0].contains { $0.id == id } }
    }

    /// "1 (ep2)": the index and the first media item's id.
    static func name(_ index: Int, _ items: [MediaItem]) -> String {
        items.first.map { "\(index) (\(Terminal.oneLine($0.id)))" } ?? "\(index)"
    }
}
