import EarshotCore
import Logging

/// The lines the log gets once the daemon is put together: each catalog, and where it listens.
enum StartUpReport {
    static func log(registry: CatalogRegistry, enabled: CatalogSet, source: String,
                    rpc: [String], events: [String], logger: Logger) {
        for s in registry.all {
            if let l = s.loaded {
                logger.info("catalog \(s.name) v\(s.version)\(s.enabled ? "" : " (disabled)"): \(l.catalog.referenceCount) references, \(duration(l.catalog.totalDuration))")
            }
        }
        if enabled.isEmpty {
            logger.notice("no catalog is enabled in \(registry.directory): push one (earshot remote catalog push) or copy a .earcat there; matches answer an error until then")
        }
        logger.info("listening on \(source); RPC \(rpc.joined(separator: " ")); events \(events.joined(separator: " "))")
    }

    /// "2.4 h", "12 min" or "81 s": a catalog's length at a glance.
    static func duration(_ seconds: Double) -> String {
        if seconds >= 3600 { return "\((seconds / 3600).decimalText(places: 1)) h" }
        if seconds >= 120 { return "\((seconds / 60).decimalText(places: 0)) min" }
        return "\(seconds.decimalText(places: 0)) s"
    }
}
