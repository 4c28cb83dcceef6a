import EarshotCore

extension MediaItemCSV {
    /// Where the rows of a media-items CSV go when a catalog is built or edited.
    public struct Assignment: Sendable, Equatable {
        /// Media items of each input file, in input order. An input no row names gets one
        /// default item whose id and title are the file name without its extension.
        public var inputItems: [[MediaItem]]
        /// New media items of existing references (`catalog update`), by reference index.
        public var referenceItems: [Int: [MediaItem]]
    }

    /// The file name without folders and without its last extension.
    public static func stem(of path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// Distributes `rows` over `inputs` (file paths) and, when editing a catalog with
    /// `existingReferenceCount` references, over those references.
    ///
    /// A row belongs to the input whose file name equals its `signature` cell (or, failing that,
    /// whose name without extension equals the cell's). With a single input and no existing
    /// references, rows that name no file belong to it. When editing, a row belongs to the
    /// reference in its `reference` cell, or to reference N if its `signature` cell names no input
    /// and starts with N- (the names `catalog export` writes: `007-intro.earsig`).
    /// Rows without an id get the input's stem as id (with -1, -2, … when an input has several).
    /// Throws `catalogInvalid` naming the line of a row that names no input or reference, that
    /// names one ambiguously, or whose id repeats another row's.
    public static func assign(_ rows: [Row], inputs: [String], existingReferenceCount: Int? = nil) throws(EarshotError) -> Assignment {
        enum Target: Hashable { case input(Int), reference(Int) }
        let names = inputs.map { $0.split(separator: "/").last.map(String.init) ?? $0 }
        let stems = inputs.map(stem(of:))

        func target(of row: Row) throws(EarshotError) -> Target {
            if let reference = row.reference {
                guard let count = existingReferenceCount else {
                    throw .catalogInvalid("line \(row.line), column reference: a reference index is only valid when updating a catalog")
                }
                guard row.file == nil else {
                    throw .catalogInvalid("line \(row.line): give either a signature file or a reference index, not both")
                }
                guard reference < count else {
                    throw .catalogInvalid("line \(row.line), column reference: the catalog has no reference \(reference) (it has \(count))")
                }
                return .reference(reference)
            }
            guard let file = row.file else {
                if inputs.count == 1, existingReferenceCount == nil { return .input(0) }
                throw .catalogInvalid("line \(row.line), column signature: the row names no input file")
            }
            let name = file.split(separator: "/").last.map(String.init) ?? file
            var found = names.indices.filter { names[$0] == name }
            if found.isEmpty { found = stems.indices.filter { stems[$0] == stem(of: name) } }
            if found.count > 1 {
                throw .catalogInvalid("line \(row.line), column signature: \"\(file)\" matches several inputs ("
                    + found.map { inputs[$0] }.joined(separator: ", ") + ")")
            }
            if let index = found.first { return .input(index) }
            if let count = existingReferenceCount, let digits = name.split(separator: "-", maxSplits: 1).first,
                name.contains("-"), digits.allSatisfy(\.isASCII), let index = Int(digits), index >= 0, index < count
            {
                return .reference(index)
            }
            let given = inputs.isEmpty ? "no input files were given" : "inputs are " + names.joined(separator: ", ")
            throw .catalogInvalid("line \(row.line), column signature: \"\(file)\" names no input file (\(given))")
        }

        var grouped: [Target: [Row]] = [:]
        var order: [Target] = []
        for row in rows {
            let t = try target(of: row)
            if grouped[t] == nil { order.append(t) }
            grouped[t, default: []].append(row)
        }

        var idLines: [String: Int] = [:]
        func items(for t: Target, base: String) throws(EarshotError) -> [MediaItem] {
            let group = grouped[t] ?? []
            var out: [MediaItem] = []
            for (k, row) in group.enumerated() {
                var item = row.item
                if item.id.isEmpty { item.id = group.count == 1 ? base : "\(base)-\(k + 1)" }
                if let first = idLines[item.id] {
                    throw .catalogInvalid("line \(row.line), column id: id \"\(item.id)\" is already used on line \(first)")
                }
                idLines[item.id] = row.line
                do { try item.validate() } catch { throw error.prefixed("line \(row.line)") }
                out.append(item)
            }
            return out
        }

        var inputItems: [[MediaItem]] = []
        for (i, s) in stems.enumerated() {
            if grouped[.input(i)] == nil {
                inputItems.append([MediaItem(id: s, title: s)])
            } else {
                inputItems.append(try items(for: .input(i), base: s))
            }
        }
        var referenceItems: [Int: [MediaItem]] = [:]
        for case .reference(let r) in order {
            let base = grouped[.reference(r)]?.first?.file.map(stem(of:)) ?? "reference-\(r)"
            referenceItems[r] = try items(for: .reference(r), base: base)
        }
        // Default items of unnamed inputs may clash with ids given in the CSV, or with each other.
        var defaultIDs: [String: Int] = [:]
        for (i, s) in stems.enumerated() where grouped[.input(i)] == nil {
            if let line = idLines[s] {
                throw .catalogInvalid("line \(line), column id: id \"\(s)\" is also the default id of input \(inputs[i])")
            }
            if let other = defaultIDs[s] {
                throw .catalogInvalid("\(inputs[i]): has the same name as \(inputs[other]), so both would get the id \"\(s)\"; "
                    + "give ids in a media-items CSV")
            }
            defaultIDs[s] = i
        }
        return Assignment(inputItems: inputItems, referenceItems: referenceItems)
    }
}
