import CAvahi
import EarshotSync

/// A DNS-SD service published through the Avahi daemon (avahi-daemon, reached over D-Bus) for as
/// long as the publisher runs.
///
/// A missing or stopped avahi-daemon is not an error: the publisher waits for it and publishes
/// when it appears (`Event.daemonUnavailable`, then `.published`). A name another host already
/// uses is replaced by Avahi's alternative ("Living room #2") and reported (`.renamed`). `stop()`
/// withdraws the service; another name means another publisher. `stop()` (and the last release)
/// must not come from `onEvent`, which runs on Avahi's thread: that thread cannot stop itself. The Avahi calls run on the client's own thread (`AvahiThreadedPoll`);
/// calls from other threads take its lock.
public final class AvahiPublisher: @unchecked Sendable {
    /// What the publisher reports, from Avahi's thread.
    public enum Event: Sendable, Equatable {
        /// The service is announced on the network under `name`.
        case published(name: String)
        /// `name` was taken on the network; the service is published as `to` instead.
        case renamed(from: String, to: String)
        /// avahi-daemon is not running (or went away): published when it is back.
        case daemonUnavailable
        /// Avahi refused the service; it stays unpublished.
        case failed(String)
    }

    private let poll: OpaquePointer
    // Below: read and changed only with the poll's lock held (or on its thread).
    private var client: OpaquePointer?
    private var group: OpaquePointer?
    private var service: DNSSDService
    private var stopped = false
    /// Whether `stop()` has not yet run: public calls hold it, so none meets a freed event loop.
    private let running = Locked(true)
    private let onEvent: @Sendable (Event) -> Void

    /// Starts publishing `service`. Throws only when Avahi's client cannot be made at all (out
    /// of memory, or no D-Bus library); a daemon that is not running is reported as an event.
    public init(service: DNSSDService, onEvent: @escaping @Sendable (Event) -> Void) throws(AvahiError) {
        try service.validate()
        guard let poll = avahi_threaded_poll_new() else { throw AvahiError("could not make Avahi's event loop") }
        self.poll = poll
        self.service = service
        self.onEvent = onEvent
        avahi_threaded_poll_lock(poll)
        let error = makeClient()
        avahi_threaded_poll_unlock(poll)
        // A failed start frees what it made here; `deinit` then finds nothing running.
        guard error == nil else {
            avahi_threaded_poll_free(poll)
            running.withLock { $0 = false }
            throw AvahiError("cannot reach avahi-daemon over D-Bus: \(error ?? "")")
        }
        guard avahi_threaded_poll_start(poll) >= 0 else {
            avahi_client_free(client)
            avahi_threaded_poll_free(poll)
            running.withLock { $0 = false }
            throw AvahiError("could not start Avahi's event loop thread")
        }
    }

    deinit { stop() }

    /// Withdraws the service and ends Avahi's thread. Idempotent.
    public func stop() {
        running.withLock { running in
            guard running else { return }
            running = false
            avahi_threaded_poll_lock(poll)
            stopped = true
            avahi_threaded_poll_unlock(poll)
            avahi_threaded_poll_stop(poll)
            // Freeing the group withdraws the record (the daemon sends its goodbye).
            if let group { avahi_entry_group_free(group) }
            if let client { avahi_client_free(client) }
            group = nil
            client = nil
            avahi_threaded_poll_free(poll)
        }
    }

    private var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// With the lock held. A client that waits for the daemon when it is not running; nil, or
    /// why there is none (no D-Bus system bus at all, for one).
    private func makeClient() -> String? {
        var error: Int32 = 0
        let made = avahi_client_new(avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL, { client, state, context in
            guard let context else { return }
            Unmanaged<AvahiPublisher>.fromOpaque(context).takeUnretainedValue().clientChanged(client, state)
        }, context, &error)
        // The callback may already have run (and stored the client) inside `avahi_client_new`.
        if client == nil { client = made }
        return made != nil ? nil : Self.message(error)
    }

    /// On Avahi's thread.
    private func clientChanged(_ changed: OpaquePointer?, _ state: AvahiClientState) {
        if client == nil { client = changed }
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            register()
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The host's own name is being settled: the record is announced again once it is.
            if let group { avahi_entry_group_reset(group) }
        case AVAHI_CLIENT_CONNECTING:
            onEvent(.daemonUnavailable)
        case AVAHI_CLIENT_FAILURE:
            if avahi_client_errno(changed) == AVAHI_ERR_DISCONNECTED {
                // The daemon went away: a new client waits for it, and publishes when it is back.
                group = nil
                if let changed { avahi_client_free(changed) }
                client = nil
                onEvent(.daemonUnavailable)
                if let error = makeClient() { onEvent(.failed("cannot reach avahi-daemon over D-Bus: \(error)")) }
            } else {
                onEvent(.failed(Self.message(avahi_client_errno(changed))))
            }
        default:
            break
        }
    }

    /// With the lock held, or on Avahi's thread: adds the service to an empty group and commits it.
    private func register() {
        guard let client, !stopped, avahi_client_get_state(client) == AVAHI_CLIENT_S_RUNNING else { return }
        if group == nil {
            group = avahi_entry_group_new(client, { group, state, context in
                guard let context else { return }
                Unmanaged<AvahiPublisher>.fromOpaque(context).takeUnretainedValue().groupChanged(group, state)
            }, context)
        }
        guard let group else {
            onEvent(.failed(Self.message(avahi_client_errno(client))))
            return
        }
        guard avahi_entry_group_is_empty(group) != 0 else { return }
        while true {
            let result = addService(to: group)
            if result == AVAHI_ERR_COLLISION {
                rename()
                continue
            }
            guard result >= 0 else {
                onEvent(.failed(Self.message(result)))
                return
            }
            let committed = avahi_entry_group_commit(group)
            if committed < 0 { onEvent(.failed(Self.message(committed))) }
            return
        }
    }

    private func addService(to group: OpaquePointer) -> Int32 {
        // TXT strings are passed with their lengths. Each add prepends, and Avahi writes the
        // list from its tail: added first to last, they go out in the order given.
        var list: UnsafeMutablePointer<AvahiStringList>?
        for entry in service.txt {
            list = entry.withUnsafeBufferPointer { avahi_string_list_add_arbitrary(list, $0.baseAddress, $0.count) }
        }
        defer { avahi_string_list_free(list) }
        return avahi_entry_group_add_service_strlst(group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC),
                                                    AvahiPublishFlags(0), service.name, service.type, nil, nil,
                                                    service.port, list)
    }

    /// On Avahi's thread.
    private func groupChanged(_ changed: OpaquePointer?, _ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            onEvent(.published(name: service.name))
        case AVAHI_ENTRY_GROUP_COLLISION:
            rename()
            if let changed { avahi_entry_group_reset(changed) }
            register()
        case AVAHI_ENTRY_GROUP_FAILURE:
            onEvent(.failed(Self.message(avahi_client_errno(avahi_entry_group_get_client(changed)))))
        default:
            break
        }
    }

    /// Takes Avahi's alternative to the current name ("Box" → "Box #2" → "Box #3").
    private func rename() {
        let old = service.name
        guard let alternative = avahi_alternative_service_name(old) else { return }
        defer { avahi_free(alternative) }
        service.name = String(cString: alternative)
        onEvent(.renamed(from: old, to: service.name))
    }

    static func message(_ code: Int32) -> String {
        guard let text = avahi_strerror(code) else { return "Avahi error \(code)" }
        return String(cString: text)
    }
}
