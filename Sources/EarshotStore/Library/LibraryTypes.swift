/// What a client adds to its library: one matched media item. The queryable parts are columns;
/// `body` is the item as the client sent it (the wire message), stored as is.
public struct LibraryEntry: Sendable, Equatable {
    /// When the match was made, Unix milliseconds.
    public var matchedAtMs: Int64
    public var catalog: String
    public var catalogVersion: UInt64
    /// The media item's custom properties, a JSON object ("{}" when none).
    public var customProperties: String
    public var body: [UInt8]

    public init(matchedAtMs: Int64, catalog: String, catalogVersion: UInt64, customProperties: String, body: [UInt8]) {
        self.matchedAtMs = matchedAtMs
        self.catalog = catalog
        self.catalogVersion = catalogVersion
        self.customProperties = customProperties
        self.body = body
    }
}

/// A stored entry.
public struct LibraryItem: Sendable, Equatable {
    /// 32 hex digits, chosen by the box.
    public var id: String
    /// When it was added, Unix milliseconds.
    public var addedAtMs: Int64
    public var entry: LibraryEntry
    /// Insertion order: ties of `matchedAtMs` are broken by it.
    var sequence: Int64
}

/// One change of an owner's library. Every committed Add, Remove or owner deletion is one
/// change and raises the owner's version by one.
public struct LibraryChange: Sendable, Equatable {
    public enum Kind: Int64, Sendable {
        case added = 1
        case removed = 2
        /// An admin deleted all of the owner's items.
        case cleared = 3
    }

    public var version: UInt64
    public var kind: Kind
    public var itemIDs: [String]
    public var atMs: Int64
}

/// An owner (a client key's allow-list name) and the state of its library.
public struct LibraryOwner: Sendable, Equatable {
    public var name: String
    public var version: UInt64
    public var itemCount: Int
    /// Bytes of stored item bodies.
    public var bytes: Int
    /// Unix milliseconds of the last change (0: none yet).
    public var changedAtMs: Int64

    public static func empty(_ name: String) -> LibraryOwner {
        LibraryOwner(name: name, version: 0, itemCount: 0, bytes: 0, changedAtMs: 0)
    }
}

/// Which items Items returns: newest match first, optionally filtered.
public struct LibraryQuery: Sendable, Equatable {
    public var catalog: String?
    /// Matched at or after, Unix milliseconds.
    public var matchedFromMs: Int64?
    /// Matched before, Unix milliseconds.
    public var matchedBeforeMs: Int64?
    /// A custom property: its key, and its value as JSON text ("\"jazz\"", "3", "true").
    public var property: (key: String, value: String)?
    public var limit: Int
    /// Continue after this position (from the previous page's `next`).
    public var after: LibraryCursor?

    public init(catalog: String? = nil, matchedFromMs: Int64? = nil, matchedBeforeMs: Int64? = nil,
                property: (key: String, value: String)? = nil, limit: Int = 100, after: LibraryCursor? = nil) {
        self.catalog = catalog
        self.matchedFromMs = matchedFromMs
        self.matchedBeforeMs = matchedBeforeMs
        self.property = property
        self.limit = limit
        self.after = after
    }

    public static func == (a: LibraryQuery, b: LibraryQuery) -> Bool {
        a.catalog == b.catalog && a.matchedFromMs == b.matchedFromMs && a.matchedBeforeMs == b.matchedBeforeMs
            && a.property?.key == b.property?.key && a.property?.value == b.property?.value && a.limit == b.limit && a.after == b.after
    }
}

/// Where a page ended, as an opaque token for the client ("<matched ms>.<sequence>").
public struct LibraryCursor: Sendable, Equatable {
    var matchedAtMs: Int64
    var sequence: Int64

    public var token: String { "\(matchedAtMs).\(sequence)" }

    public init?(token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let m = Int64(parts[0]), let s = Int64(parts[1]) else { return nil }
        matchedAtMs = m
        sequence = s
    }

    init(_ item: LibraryItem) {
        matchedAtMs = item.entry.matchedAtMs
        sequence = item.sequence
    }
}

/// One page of Items.
public struct LibraryPage: Sendable, Equatable {
    public var items: [LibraryItem]
    /// Set when more items follow.
    public var next: LibraryCursor?
    public var owner: LibraryOwner
}

/// What a committed write did.
public struct LibraryCommit: Sendable, Equatable {
    public var change: LibraryChange
    public var owner: LibraryOwner
    /// The items added (Add only).
    public var items: [LibraryItem]
    /// How many items the change added or removed (for a clear: how many the owner had).
    public var changedCount: Int
}

/// Per-owner limits and the size of the change log kept for resuming watchers.
public struct LibraryLimits: Sendable, Equatable {
    public var maximumItems = 50_000
    public var maximumBytes = 64 << 20
    /// The largest item body accepted.
    public var maximumItemBytes = 64 << 10
    /// The most items one Add or Remove may carry.
    public var maximumBatch = 1000
    /// Changes kept per owner: a watcher further behind than this re-reads its items (cheaper
    /// than a long replay, and the log stays small: at most 1000 ids a change).
    public var changeLogLength = 1000

    public init() {}
}

/// Why a library call failed, in the terms of its status code.
public struct LibraryError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case invalidArgument
        case notFound
        /// An owner limit, the database's size limit or a full disk.
        case resourceExhausted
        /// The database is damaged.
        case dataLoss
        /// The database cannot be used now (unreadable, read-only, written by a newer version).
        case unavailable
        case `internal`
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
