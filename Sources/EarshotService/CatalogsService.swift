import EarshotCore
import EarshotTransport
import EarshotWire

/// `earshot.v1.Catalogs`: what the daemon holds.
final class CatalogsService: Sendable {
    private let store: CatalogStore
    private let activeName: String

    init(store: CatalogStore, activeName: String) {
        self.store = store
        self.activeName = activeName
    }

    func summary(_ e: CatalogStore.Entry) -> Earshot_V1_CatalogSummary {
        Earshot_V1_CatalogSummary(name: e.name, catalog: e.catalog, active: e.name == activeName)
    }

    func summary(_ f: CatalogStore.Failure) -> Earshot_V1_CatalogSummary {
        Earshot_V1_CatalogSummary(name: f.name, failure: f.reason)
    }

    /// Every `.earcat` in the folder, loaded or failed, by name.
    func summaries() -> [Earshot_V1_CatalogSummary] {
        (store.entries.map(summary) + store.failures.map(summary)).sorted { $0.name < $1.name }
    }

    func register(on server: RpcServer) {
        server.register(Methods.Catalogs.list, role: .admin) { [self] _, _ throws(RpcError) in
            var reply = Earshot_V1_ListCatalogsResponse()
            reply.catalogs = summaries()
            return reply
        }
        server.register(Methods.Catalogs.describe, role: .admin) { [self] request, _ throws(RpcError) in
            guard let e = store.entry(named: request.name) else {
                // The request is fine; the file is not in a state to be described.
                if let f = store.failure(named: request.name) {
                    throw RpcError(.failedPrecondition, "catalog \"\(f.name)\" failed to load: \(f.reason)")
                }
                throw RpcError(.notFound, "no catalog named \"\(request.name)\"; List shows the names")
            }
            var reply = Earshot_V1_CatalogDescription()
            reply.summary = summary(e)
            for index in 0..<e.catalog.referenceCount {
                var r = Earshot_V1_ReferenceDescription()
                r.index = UInt32(index)
                r.durationSeconds = e.catalog.references[index].duration
                r.mediaItems = e.catalog.mediaItems(ofReference: index).map(Earshot_V1_MediaItem.init)
                reply.references.append(r)
            }
            return reply
        }
    }
}
