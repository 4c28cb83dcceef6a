/// Scratch arrays kept in stored properties and worked on as locals: a loop that mutates a
/// stored property from inside a closure pays a dynamic exclusivity check per access.
enum Scratch {
    /// Moves an array out of a stored property, emptied (unless `keeping`) but keeping its capacity.
    static func take<T>(_ array: inout [T], keeping: Bool = false) -> [T] {
        var taken: [T] = []
        swap(&taken, &array)
        if !keeping { taken.removeAll(keepingCapacity: true) }
        return taken
    }
}
