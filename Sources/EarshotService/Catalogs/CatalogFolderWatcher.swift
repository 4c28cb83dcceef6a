import Dispatch
import EarshotStore
import EarshotSync
import EarshotSystem
import FoundationEssentials
import Logging

/// Picks up catalogs copied into the catalogs folder while the daemon runs (scp, rsync, cp):
/// a file is looked at once its writer closed it or it was renamed into place, so a copy in
/// progress is never loaded; hidden and temporary names (rsync's `.NAME.earcat.XXXXXX`, the
/// daemon's own `.NAME.tmp-…`) are not catalog names and are ignored. Each change goes to the
/// registry's queue, where it is verified and swapped in like an upload.
final class CatalogFolderWatcher: Sendable {
    private let stopping = Locked(false)
    private let done = DispatchSemaphore(value: 0)

    /// Starts watching; nil (logged) when inotify is not available.
    init?(registry: CatalogRegistry, logger: Logger) {
        let watcher: DirectoryWatcher
        do { watcher = try DirectoryWatcher(path: registry.directory) } catch {
            logger.error("catalog files copied in will be seen at the next start only: \(error.message)")
            return nil
        }
        let body: @Sendable () -> Void = { [stopping, done] in
            while !stopping.withLock({ $0 }) {
                for change in watcher.changes(timeoutMilliseconds: 250) {
                    switch change {
                    case .finished(let file):
                        guard let name = CatalogName.name(ofFile: file) else { continue }
                        registry.queue.async { registry.fileFinished(name) }
                    case .removed(let file):
                        guard let name = CatalogName.name(ofFile: file) else { continue }
                        registry.queue.async { registry.fileRemoved(name) }
                    case .overflow:
                        logger.warning("catalog folder: inotify events were lost; looking at every file again")
                        registry.queue.async { registry.rescan() }
                    }
                }
            }
            done.signal()
        }
        do {
            _ = try NamedThread(name: "earshot-catalog-watch", body: body)
        } catch {
            logger.error("catalog files copied in will be seen at the next start only: \(error)")
            return nil
        }
    }

    func stop() {
        guard !stopping.withLock({ s in defer { s = true }; return s }) else { return }
        done.wait()
    }
}
