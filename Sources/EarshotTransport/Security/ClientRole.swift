/// What a client may do, from its allow-list line. Each role includes the ones before it.
public enum ClientRole: String, Sendable, Comparable, CaseIterable {
    /// Events, snapshots, health, the catalog list.
    case viewer
    /// + prepare, match, cancel.
    case `operator`
    /// + managing catalogs, and configuration.
    case admin

    private var rank: Int {
        switch self {
        case .viewer: 0
        case .operator: 1
        case .admin: 2
        }
    }

    public static func < (a: ClientRole, b: ClientRole) -> Bool { a.rank < b.rank }
}
