import EarshotSync

/// The clients a CURVE server admits: public key → name and role. Replaceable at any time (the
/// daemon re-reads its file); the ZAP handler consults it at every handshake and the RPC server
/// at every call, so a revoked key is refused new connections and its open ones get
/// UNAUTHENTICATED from the next call on. Publishers watch it for removals (`onRemoval`): PUB
/// cannot ask who is subscribed, so they make every subscriber connect and handshake again.
public final class ClientAllowList: Sendable {
    public struct Entry: Sendable, Equatable {
        public var publicKey: String
        /// Unique in the list; no spaces or ':' (it is the first part of ZAP's "name:role").
        public var name: String
        public var role: ClientRole

        public init(publicKey: String, name: String, role: ClientRole) {
            self.publicKey = publicKey
            self.name = name
            self.role = role
        }

        /// ZAP's User-Id for this client, as handlers see it in `RpcCall.userID`.
        public var userID: String { "\(name):\(role.rawValue)" }
    }

    /// Handshakes refused so far: keys not in the list (`count`, with the last key and address,
    /// from the ZAP handler) and handshakes that failed before a key was known
    /// (`failedHandshakes`, from the sockets' monitors: wrong server key, plain clients, garbage).
    public struct Rejections: Sendable, Equatable {
        public var count = 0
        public var lastKey: String?
        public var lastAddress: String?
        public var failedHandshakes = 0
        public var lastFailure: String?

        public init() {}
    }

    /// The ZAP domain of the sockets using this list; the handler picks the list by it.
    public let domain: String
    private let byKey = Locked<[String: Entry]>([:])
    private let refused = Locked(Rejections())
    private let removalObservers = Locked<[@Sendable () -> Void]>([])

    public init(_ entries: [Entry] = []) {
        domain = "earshot." + String(UInt64.random(in: 1...UInt64.max), radix: 16)
        replace(with: entries)
    }

    /// Swaps in a new list; later handshakes and calls see it. When keys were removed, the
    /// `onRemoval` observers run (on this thread, after the swap).
    public func replace(with entries: [Entry]) {
        var table: [String: Entry] = [:]
        for entry in entries { table[entry.publicKey] = entry }
        let removedAny = byKey.withLock { current -> Bool in
            defer { current = table }
            return current.keys.contains { table[$0] == nil }
        }
        if removedAny {
            for observer in removalObservers.withLock({ $0 }) { observer() }
        }
    }

    /// Runs `observer` whenever `replace` removes at least one key (for the life of the list;
    /// observers should hold what they act on weakly).
    func onRemoval(_ observer: @escaping @Sendable () -> Void) {
        removalObservers.withLock { $0.append(observer) }
    }

    public var entries: [Entry] { byKey.withLock { Array($0.values) } }

    public var rejections: Rejections { refused.withLock { $0 } }

    /// The entry of a public key, nil when it is not (or no longer) listed.
    public func entry(forKey publicKey: String) -> Entry? {
        byKey.withLock { $0[publicKey] }
    }

    /// The current entry of the client a ZAP User-Id named, nil once that client was removed.
    func entry(forUserID userID: String) -> Entry? {
        guard let colon = userID.lastIndex(of: ":") else { return nil }
        let name = userID[..<colon]
        return byKey.withLock { table in table.values.first { $0.name == name } }
    }

    /// A handshake failed before a key was known (from a socket monitor).
    func recordFailedHandshake(_ reason: String) {
        refused.withLock {
            $0.failedHandshakes += 1
            $0.lastFailure = reason
        }
    }

    /// The ZAP handler's decision for one handshake.
    func admit(publicKey: String, address: String) -> Entry? {
        if let entry = entry(forKey: publicKey) { return entry }
        refused.withLock {
            $0.count += 1
            $0.lastKey = publicKey
            $0.lastAddress = address
        }
        return nil
    }
}
