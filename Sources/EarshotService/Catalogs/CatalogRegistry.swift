import Dispatch
import EarshotCore
import EarshotCrypto
import EarshotStore
import EarshotSync
import EarshotSystem
import EarshotWire
import FoundationEssentials
import Logging

/// The daemon's catalogs by name: which are installed, which version, which are enabled, and
/// the `CatalogSet` matches search.
///
/// Files live in `<state>/catalogs/NAME.earcat` (installed there by an upload's rename, or
/// copied there by hand); what the files cannot say — version, enabled, installed time — is in
/// `<state>/catalogs.json`, written atomically after every change. A kill at any point leaves
/// whole files (each got there by rename) and an index at most one change behind, which the
/// next start reconciles with the files (a file whose identity changed counts as a new version).
///
/// Every change runs on one serial queue (verification of a large file included), so changes
/// never interleave; readers take a snapshot under a lock. Swaps never wait for matches: the set
/// is replaced, and the catalogs it no longer holds are unmapped when the last match that
/// started on them lets go.
final class CatalogRegistry: Sendable {
    /// A catalog that verified and is mapped.
    struct Loaded: Sendable {
        let catalog: MappedCatalog
        let sha256: [UInt8]
        let signer: CatalogCheck.Signer?
        let installedAt: Date
        let identity: FileIdentity?

        init(_ v: CatalogCheck.Verified, installedAt: Date, identity: FileIdentity?) {
            catalog = v.catalog
            sha256 = v.sha256
            signer = v.signer
            self.installedAt = installedAt
            self.identity = identity
        }
    }

    struct Slot: Sendable {
        let name: String
        var enabled: Bool
        var version: Int
        /// The version serving (nil when none ever verified).
        var loaded: Loaded?
        /// Being verified now.
        var loading = false
        /// Why the last file under this name was refused (with `loaded` set: a newer file failed
        /// and the older version still serves).
        var failure: String?
    }

    /// What a commit or drop-in did.
    enum InstallOutcome: Sendable {
        case installed, replaced
    }

    let directory: String
    private let indexPath: String
    private let trust: CatalogCheck.Trust
    private let logger: Logger
    private let slots = Locked<[String: Slot]>([:])
    /// Who hears about changes: set once the daemon's parts exist (after start-up loading).
    private let hooks = Locked<Hooks?>(nil)
    let queue = DispatchQueue(label: "earshot-catalogs")

    struct Hooks: Sendable {
        /// The set of enabled catalogs changed.
        var catalogsChanged: @Sendable (CatalogSet) -> Void
        var publish: @Sendable (Earshot_V1_CatalogEvent.Kind, Slot?, String) -> Void
    }

    /// Loads every `.earcat` in `directory` (created if missing) with the full verification.
    /// A file that fails is listed as FAILED with its reason; the others serve. `required`, when
    /// not empty, must load (or the start fails) and is enabled. `shouldStop`: see `Daemon.init`.
    init(directory: String, indexPath: String, trust: CatalogCheck.Trust, required: String, logger: Logger,
         shouldStop: () -> Bool = { false }) throws(EarshotError) {
        self.directory = directory
        self.indexPath = indexPath
        self.trust = trust
        self.logger = logger
        do { try Directory.create(directory) } catch {
            throw .internalError("cannot create the catalog folder \(directory): \(error.message)")
        }
        let index = CatalogIndex.read(indexPath, logger: logger)
        let files: [String]
        do { files = try Directory.names(in: directory).sorted() } catch {
            throw .internalError("cannot list the catalog folder \(directory): \(error.message)")
        }
        var loaded: [String: Slot] = [:]
        for file in files {
            guard let name = CatalogName.name(ofFile: file) else { continue }
            if shouldStop() { throw DaemonSignals.stoppedDuringStartUp }
            let record = index[name]
            var slot = Slot(name: name, enabled: record?.enabled ?? true, version: record?.version ?? 0)
            // Looked at before anything opens it: a FIFO or a device is never opened.
            if let refusal = RegularFile.problem(at: path(of: name)) {
                logger.error("catalog \(name) \(refusal.code == 0 ? "skipped (never opened)" : "left out"): \(path(of: name)): \(refusal.message)")
                slot.failure = refusal.message
                loaded[name] = slot
                continue
            }
            logger.debug("checking catalog \(name) (\(path(of: name)))")
            switch Self.verify(path: path(of: name), trust: trust, record: record, shouldStop: shouldStop) {
            case .success(let l):
                // A file that is not the one recorded was replaced while the daemon was down.
                if record == nil || record?.sha256 != l.sha256 { slot.version += 1 }
                slot.loaded = l
                logger.debug("catalog \(name) v\(slot.version): \(l.catalog.byteCount) bytes verified")
                logNotice(name, l)
            case .failure(let refusal):
                if shouldStop() || refusal.kind == .stopped { throw DaemonSignals.stoppedDuringStartUp }
                logger.error("catalog \(name) left out: \(refusal.message)")
                slot.failure = refusal.message
            }
            loaded[name] = slot
        }
        if !required.isEmpty {
            guard var slot = loaded[required], slot.loaded != nil else {
                let why = loaded[required]?.failure.map { ": \($0)" } ?? " (no \(required).earcat there)"
                throw .catalogInvalid("catalog \"\(required)\" in \(directory) cannot be used\(why)")
            }
            slot.enabled = true
            loaded[required] = slot
        }
        slots.withLock { $0 = loaded }
        writeIndex()
    }

    /// Starts reporting changes (and applies the current set once).
    func attach(_ hooks: Hooks) {
        self.hooks.withLock { $0 = hooks }
        hooks.catalogsChanged(catalogSet)
    }

    /// Stops reporting changes, letting go of the services the hooks hold (which hold the registry).
    func detach() {
        hooks.withLock { $0 = nil }
    }

    // MARK: Reading

    var all: [Slot] { slots.withLock { Array($0.values) }.sorted { $0.name < $1.name } }

    func slot(named name: String) -> Slot? { slots.withLock { $0[name] } }

    /// The enabled catalogs that serve, by name.
    var catalogSet: CatalogSet {
        CatalogSet(all.compactMap { s in
            guard s.enabled, let l = s.loaded else { return nil }
            return CatalogSet.Member(name: s.name, version: s.version, catalog: l.catalog)
        })
    }

    func path(of name: String) -> String { "\(directory)/\(CatalogName.fileName(name))" }

    /// What to tell about a catalog that serves but should be changed: a file of an earlier
    /// format is matched as it is, and `earshot catalog upgrade` rewrites it. Nil for none.
    func notice(_ name: String, _ loaded: Loaded) -> String? {
        let version = loaded.catalog.formatVersion, current = MappedCatalog.currentFormatVersion
        guard version < current else { return nil }
        // A signature covers the old bytes: the upgrade signs again in the same write.
        let key = loaded.signer == nil ? "" : "--key AUTHOR.author.key "
        return "file format \(version), from an earlier release: matched as it is; `earshot catalog upgrade \(key)\(path(of: name))` "
            + "rewrites it in format \(current), about 10 % smaller (or push an upgraded copy)"
    }

    /// Logs `notice` for a catalog that has one.
    private func logNotice(_ name: String, _ loaded: Loaded) {
        if let notice = notice(name, loaded) { logger.warning("catalog \(name): \(notice)") }
    }

    // MARK: Changes (on `queue`)

    /// Installs a verified file that is already at `path(of: name)`. A new name is enabled if
    /// `enableIfNew`; a replacement keeps the name's enabled state and counts up its version.
    func install(_ name: String, _ loaded: Loaded, enableIfNew: Bool) -> (Slot, InstallOutcome) {
        dispatchPrecondition(condition: .onQueue(queue))
        let (slot, outcome) = slots.withLock { all -> (Slot, InstallOutcome) in
            var slot = all[name] ?? Slot(name: name, enabled: enableIfNew, version: 0)
            let outcome: InstallOutcome = slot.loaded == nil ? .installed : .replaced
            slot.version += 1
            slot.loaded = loaded
            slot.loading = false
            slot.failure = nil
            all[name] = slot
            return (slot, outcome)
        }
        changed()
        logger.notice("catalog \(name) v\(slot.version) \(outcome == .installed ? "installed" : "replaced the version serving") (\(loaded.catalog.referenceCount) references, \(SHA256.hex(loaded.sha256).prefix(12))…\(loaded.signer.map { ", signed by \($0.description)" } ?? ""))\(slot.enabled ? "" : "; disabled until enabled")")
        logNotice(name, loaded)
        publish(outcome == .installed ? .installed : .replaced, slot)
        return (slot, outcome)
    }

    /// A file under `name` was refused: the name shows the reason; a version that serves stays.
    func refuse(_ name: String, reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        let slot = slots.withLock { all -> Slot in
            var slot = all[name] ?? Slot(name: name, enabled: true, version: 0)
            slot.failure = slot.loaded.map { _ in "the new file was refused, version \(slot.version) still serves: \(reason)" } ?? reason
            slot.loading = false
            all[name] = slot
            return slot
        }
        writeIndex()
        publish(.failed, slot, message: reason)
    }

    func setEnabled(_ name: String, _ enabled: Bool) -> Slot? {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let slot = slots.withLock({ all -> Slot? in
            guard var slot = all[name], slot.loaded != nil else { return nil }
            slot.enabled = enabled
            all[name] = slot
            return slot
        }) else { return nil }
        changed()
        logger.notice("catalog \(name) \(enabled ? "enabled" : "disabled")")
        publish(enabled ? .enabled : .disabled, slot)
        return slot
    }

    /// Forgets `name` (its file is gone or being deleted).
    func forget(_ name: String) -> Slot? {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let slot = slots.withLock({ $0.removeValue(forKey: name) }) else { return nil }
        changed()
        logger.notice("catalog \(name) removed")
        publish(.removed, slot)
        return slot
    }

    /// A file in the folder was finished (closed after writing or renamed in): verify it and
    /// install it, unless it is the file already serving (our own rename of an upload).
    func fileFinished(_ name: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        let path = path(of: name)
        guard let identity = FileIdentity(path: path) else { return }  // gone again already
        if let l = slot(named: name)?.loaded, l.identity == identity { return }
        slots.withLock { all in
            var slot = all[name] ?? Slot(name: name, enabled: true, version: 0)
            slot.loading = true
            all[name] = slot
        }
        let started = ContinuousClock.now
        switch Self.verify(path: path, trust: trust, record: nil) {
        case .success(let l):
            _ = install(name, l, enableIfNew: true)
            logger.info("catalog \(name): picked up from the folder in \(Int((ContinuousClock.now - started) / .milliseconds(1))) ms")
        case .failure(let refusal):
            logger.error("catalog file \(path) refused: \(refusal.message)")
            refuse(name, reason: refusal.message)
        }
    }

    /// A file in the folder was deleted or renamed away.
    func fileRemoved(_ name: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard FileIdentity(path: path(of: name)) == nil else { return }  // replaced by a rename: `fileFinished` follows
        if slot(named: name) != nil { _ = forget(name) }
    }

    /// Looks at every file again (after lost inotify events).
    func rescan() {
        dispatchPrecondition(condition: .onQueue(queue))
        let names = Set(((try? Directory.names(in: directory)) ?? []).compactMap(CatalogName.name(ofFile:)))
        for name in all.map(\.name) where !names.contains(name) { fileRemoved(name) }
        for name in names.sorted() { fileFinished(name) }
    }

    // MARK: Helpers

    private static func verify(path: String, trust: CatalogCheck.Trust, record: CatalogIndex.Record?,
                               shouldStop: () -> Bool = { false }) -> Result<Loaded, CatalogCheck.Refusal> {
        if let refusal = RegularFile.problem(at: path) {
            return .failure(.init(kind: .invalid, message: refusal.message))
        }
        let identity = FileIdentity(path: path)
        // The digest recorded for this very file (same inode, size and time) need not be recomputed.
        let known = record.flatMap { $0.identity == identity.map(CatalogIndex.Record.stamp) ? $0.sha256 : nil }
        do {
            let v = try CatalogCheck.verify(path: path, trust: trust, knownSHA256: known, shouldStop: shouldStop)
            return .success(Loaded(v, installedAt: record?.installedAt ?? Date(), identity: identity))
        } catch {
            return .failure(error)
        }
    }

    /// After every change: the new set to the session, the index to disk.
    private func changed() {
        writeIndex()
        let set = catalogSet
        hooks.withLock { $0 }?.catalogsChanged(set)
    }

    private func publish(_ kind: Earshot_V1_CatalogEvent.Kind, _ slot: Slot?, message: String = "") {
        hooks.withLock { $0 }?.publish(kind, slot, message)
    }

    private func writeIndex() {
        let records = all.map { s in
            CatalogIndex.Record(name: s.name, version: s.version, enabled: s.enabled, sha256: s.loaded?.sha256,
                                installedAt: s.loaded?.installedAt, identity: s.loaded?.identity.map(CatalogIndex.Record.stamp))
        }
        do { try CatalogIndex.write(records, to: indexPath) } catch {
            logger.error("cannot save the catalog index \(indexPath): \(error.message) (versions and enabled states are kept in memory)")
        }
    }
}
