import CAvahi

/// Finds the DNS-SD services of one type on the local network through the Avahi daemon, each
/// resolved to an address, port and TXT strings.
public enum AvahiBrowser {
    /// One service instance as resolved on one interface and address family.
    public struct Found: Sendable, Equatable {
        public var service: DNSSDService
        /// The host's mDNS name ("tv-box.local").
        public var hostName: String
        /// Numeric address ("192.168.1.20", "fe80::1").
        public var address: String
        public var isIPv6: Bool
        /// The interface index the record was seen on (an IPv6 link-local address needs it).
        public var interface: Int32
    }

    /// Browses for `type` until Avahi says it has listed what its cache and a first query hold
    /// and every service seen is resolved, or until `timeout` seconds. Throws when avahi-daemon
    /// is not running or Avahi refuses the browse.
    public static func browse(type: String, timeout: Double) throws(AvahiError) -> [Found] {
        guard !type.utf8.contains(0) else { throw AvahiError("a service type holds a NUL byte") }
        guard let poll = avahi_simple_poll_new() else { throw AvahiError("could not make Avahi's event loop") }
        defer { avahi_simple_poll_free(poll) }
        var error: Int32 = 0
        guard let client = avahi_client_new(avahi_simple_poll_get(poll), AvahiClientFlags(0), nil, nil, &error) else {
            if error == AVAHI_ERR_NO_DAEMON || error == AVAHI_ERR_DISCONNECTED {
                throw AvahiError("avahi-daemon is not running: start it (systemctl start avahi-daemon), or give the box's address")
            }
            throw AvahiError("could not reach avahi-daemon: \(AvahiPublisher.message(error))")
        }
        defer { avahi_client_free(client) }
        let state = BrowseState(client: client)
        let context = Unmanaged.passUnretained(state).toOpaque()
        guard let browser = avahi_service_browser_new(
            client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), type, nil, AvahiLookupFlags(0),
            { _, interface, proto, event, name, type, domain, _, context in
                guard let context else { return }
                Unmanaged<BrowseState>.fromOpaque(context).takeUnretainedValue()
                    .browsed(interface: interface, proto: proto, event: event, name: name, type: type, domain: domain)
            }, context)
        else {
            throw AvahiError("Avahi refused to browse for \(type): \(AvahiPublisher.message(avahi_client_errno(client)))")
        }
        defer { avahi_service_browser_free(browser) }
        let deadline = ContinuousClock.now + .seconds(max(0, timeout))
        while !(state.listed && state.pending == 0) {
            if let failure = state.failure { throw AvahiError(failure) }
            let left = deadline - .now
            guard left > .zero else { break }
            let milliseconds = min(left, .milliseconds(100)) / .milliseconds(1)
            guard avahi_simple_poll_iterate(poll, Int32(milliseconds) + 1) == 0 else { break }
        }
        return state.found
    }

    /// What one browse has seen; touched only on the thread that iterates its loop.
    private final class BrowseState {
        let client: OpaquePointer
        var found: [Found] = []
        var pending = 0
        var listed = false
        var failure: String?

        init(client: OpaquePointer) { self.client = client }

        func browsed(interface: AvahiIfIndex, proto: AvahiProtocol, event: AvahiBrowserEvent,
                     name: UnsafePointer<CChar>?, type: UnsafePointer<CChar>?, domain: UnsafePointer<CChar>?) {
            switch event {
            case AVAHI_BROWSER_NEW:
                let context = Unmanaged.passUnretained(self).toOpaque()
                let resolver = avahi_service_resolver_new(
                    client, interface, proto, name, type, domain, AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiLookupFlags(0),
                    { resolver, interface, proto, event, name, type, _, host, address, port, txt, _, context in
                        defer { avahi_service_resolver_free(resolver) }
                        guard let context else { return }
                        let state = Unmanaged<BrowseState>.fromOpaque(context).takeUnretainedValue()
                        state.pending -= 1
                        guard event == AVAHI_RESOLVER_FOUND, let name, let type, let address else { return }
                        state.resolved(interface: interface, proto: proto, name: String(cString: name), type: String(cString: type),
                                       host: host.map { String(cString: $0) } ?? "", address: address, port: port, txt: txt)
                    }, context)
                if resolver != nil { pending += 1 }
            case AVAHI_BROWSER_ALL_FOR_NOW:
                listed = true
            case AVAHI_BROWSER_FAILURE:
                failure = "browsing failed: \(AvahiPublisher.message(avahi_client_errno(client)))"
            default:
                break
            }
        }

        func resolved(interface: AvahiIfIndex, proto: AvahiProtocol, name: String, type: String, host: String,
                      address: UnsafePointer<AvahiAddress>, port: UInt16, txt: UnsafeMutablePointer<AvahiStringList>?) {
            var text = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
            avahi_address_snprint(&text, text.count, address)
            var strings: [[UInt8]] = []
            var entry = txt
            while let e = entry {
                if let bytes = avahi_string_list_get_text(e) {
                    strings.append(Array(UnsafeBufferPointer(start: bytes, count: avahi_string_list_get_size(e))))
                }
                entry = avahi_string_list_get_next(e)
            }
            // The resolver's list holds the strings in the record's order.
            let numeric = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            found.append(Found(service: DNSSDService(name: name, type: type, port: port, txt: strings), hostName: host,
                               address: numeric, isIPv6: proto == AvahiProtocol(AVAHI_PROTO_INET6), interface: interface))
        }
    }
}
