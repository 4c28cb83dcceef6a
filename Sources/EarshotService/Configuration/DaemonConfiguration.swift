import EarshotCore
import EarshotSystem
import FoundationEssentials

/// Everything `earshotd` can be told, with its defaults. `deploy/earshotd.toml` lists every key
/// with a comment and its default; a test keeps the two in step.
public struct DaemonConfiguration: Equatable, Sendable {
    public enum AudioSourceKind: String, Sendable { case alsa, file }
    public enum SecurityMode: String, Sendable { case curve, none }

    // [daemon]
    public var stateDirectory = "/var/lib/earshot"
    public var logLevel = "info"
    /// The box's name on the LAN (DNS-SD); "" = the host name.
    public var name = ""
    /// Announce the box with DNS-SD through avahi-daemon when RPC listens beyond loopback.
    public var announce = true
    // [audio]
    public var source = AudioSourceKind.alsa
    public var device = "default"
    public var sampleRate = 16_000
    public var channels = 1
    public var periodMilliseconds = 20
    public var bufferSeconds = 4.0
    public var realtimePriority = 10
    public var file = ""
    public var loop = true
    // [session]
    public var catalog = ""
    public var prepareOnStart = true
    public var follow = true
    public var attemptIntervalMilliseconds = 1000
    // [catalogs]
    public var maximumUploadBytes = 512 << 20
    public var maximumUploads = 4
    public var maximumUploadTotalBytes = 1 << 30
    public var uploadExpirySeconds = 86_400
    public var reserveBytes = 64 << 20
    /// "" = every catalog is accepted, signed or not.
    public var trustedAuthors = ""
    public var watchCatalogFolder = true
    // [cues]
    public var cuesEnabled = true
    public var cueLeadMilliseconds = 5000
    public var cueLostHorizonMilliseconds = 10_000
    public var cueHoldMilliseconds = 2500
    public var cueMinimumConfidence = 0.5
    public var cueSessionGapSeconds = 1800
    // [library]
    public var libraryEnabled = true
    /// "" = <state_directory>/library.db.
    public var libraryPath = ""
    public var libraryMaximumItemsPerOwner = 50_000
    public var libraryMaximumBytesPerOwner = 64 << 20
    /// 0 = no limit but the disk's.
    public var libraryMaximumDatabaseMegabytes = 0
    public var libraryReserveBytes = 64 << 20
    public var libraryChangeLogLength = 1000
    /// Read-only connections that serve library reads, taken in turn by the calling keys.
    public var libraryReadConnections = 2
    /// What one owner's WatchLibrary streams may read together, in bytes a second.
    public var libraryCatchUpBytesPerSecond = 1 << 20
    // [rpc]
    public var rpcListen = ["tcp://127.0.0.1:7400"]
    public var maximumMessageBytes = 4 << 20
    public var maximumInFlightPerPeer = 16
    public var maximumInFlightPerClient = 64
    public var maximumInFlight = 256
    public var defaultTimeoutMilliseconds = 30_000
    public var maximumConnections = 1024
    public var maximumConnectionsPerAddress = 256
    // [events]
    public var eventsListen = ["tcp://127.0.0.1:7401"]
    public var heartbeatMilliseconds = 1000
    public var sendHighWaterMark = 10_000
    public var loadTestRate = 0
    // [security]
    public var securityMode = SecurityMode.curve
    /// "" = <state_directory>/clients.allow.
    public var allowList = ""

    public init() {}

    /// The library database file actually used.
    public var libraryDatabasePath: String {
        libraryPath.isEmpty ? Path.join(stateDirectory, "library.db") : libraryPath
    }

    /// The catalogs folder (pushed, dropped in or installed) and its index, in the state folder.
    public var catalogFolder: String { Path.join(stateDirectory, "catalogs") }
    public var catalogIndexPath: String { Path.join(stateDirectory, "catalogs.json") }

    /// The allow-list file actually used.
    public var allowListPath: String {
        allowList.isEmpty ? Path.join(stateDirectory, "clients.allow") : allowList
    }

    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// A configuration problem: the file or option, and what is wrong.
    public struct Problem: Error, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Reads `text` (TOML) from `origin` (a path, for messages), then applies `overrides`
    /// ("section.key" → value, from `--section.key=value`).
    public static func load(text: String, origin: String, overrides: [(key: String, value: TOMLSubset.Value)] = []) throws(Problem) -> DaemonConfiguration {
        var config = DaemonConfiguration()
        let entries: [(key: String, value: TOMLSubset.Value)]
        do { entries = try TOMLSubset.parse(text) } catch { throw Problem(message: "\(origin): \(error)") }
        for (key, value) in entries {
            do { try config.set(key, value) } catch { throw Problem(message: "\(origin): \(error.message)") }
        }
        for (key, value) in overrides {
            do { try config.set(key, value) } catch { throw Problem(message: "--\(key): \(error.message)") }
        }
        try config.validate()
        return config
    }

    /// Every key, in the order of `deploy/earshotd.toml`.
    public static let keys = [
        "daemon.state_directory", "daemon.log_level", "daemon.name", "daemon.announce",
        "audio.source", "audio.device", "audio.sample_rate", "audio.channels", "audio.period_ms", "audio.buffer_seconds",
        "audio.realtime_priority", "audio.file", "audio.loop",
        "session.catalog", "session.prepare_on_start", "session.follow", "session.attempt_interval_ms",
        "catalogs.max_upload_bytes", "catalogs.max_uploads", "catalogs.max_upload_total_bytes", "catalogs.upload_expiry_s",
        "catalogs.reserve_bytes", "catalogs.trusted_authors", "catalogs.watch",
        "cues.enabled", "cues.lead_ms", "cues.lost_horizon_ms", "cues.hold_ms", "cues.minimum_confidence", "cues.session_gap_s",
        "library.enabled", "library.path", "library.max_items_per_owner", "library.max_bytes_per_owner", "library.max_database_mb",
        "library.reserve_bytes", "library.change_log_length", "library.read_connections",
        "library.catch_up_bytes_per_second",
        "rpc.listen", "rpc.max_message_bytes", "rpc.max_in_flight_per_peer", "rpc.max_in_flight_per_client", "rpc.max_in_flight",
        "rpc.default_timeout_ms", "rpc.max_connections", "rpc.max_connections_per_address",
        "events.listen", "events.heartbeat_ms", "events.send_high_water_mark", "events.load_test_rate",
        "security.mode", "security.allow_list",
    ]

    mutating func set(_ key: String, _ value: TOMLSubset.Value) throws(Problem) {
        switch key {
        case "daemon.state_directory": stateDirectory = try string(key, value)
        case "daemon.log_level": logLevel = try string(key, value)
        case "daemon.name": name = try string(key, value)
        case "daemon.announce": announce = try boolean(key, value)
        case "audio.source":
            let s = try string(key, value)
            guard let kind = AudioSourceKind(rawValue: s) else { throw Problem(message: "\(key) must be \"alsa\" or \"file\", not \"\(s)\"") }
            source = kind
        case "audio.device": device = try string(key, value)
        case "audio.sample_rate": sampleRate = try integer(key, value, 8_000...96_000)
        case "audio.channels": channels = try integer(key, value, 1...2)
        case "audio.period_ms": periodMilliseconds = try integer(key, value, 1...1000)
        case "audio.buffer_seconds": bufferSeconds = try number(key, value, 0.1...600)
        case "audio.realtime_priority": realtimePriority = try integer(key, value, 0...99)
        case "audio.file": file = try string(key, value)
        case "audio.loop": loop = try boolean(key, value)
        case "session.catalog": catalog = try string(key, value)
        case "session.prepare_on_start": prepareOnStart = try boolean(key, value)
        case "session.follow": follow = try boolean(key, value)
        case "session.attempt_interval_ms": attemptIntervalMilliseconds = try integer(key, value, 100...60_000)
        case "catalogs.max_upload_bytes": maximumUploadBytes = try integer(key, value, 1024...(1 << 40))
        case "catalogs.max_uploads": maximumUploads = try integer(key, value, 1...1000)
        case "catalogs.max_upload_total_bytes": maximumUploadTotalBytes = try integer(key, value, 1024...(1 << 42))
        case "catalogs.upload_expiry_s": uploadExpirySeconds = try integer(key, value, 60...(90 * 86_400))
        case "catalogs.reserve_bytes": reserveBytes = try integer(key, value, 0...(1 << 40))
        case "catalogs.trusted_authors": trustedAuthors = try string(key, value)
        case "catalogs.watch": watchCatalogFolder = try boolean(key, value)
        case "cues.enabled": cuesEnabled = try boolean(key, value)
        case "cues.lead_ms": cueLeadMilliseconds = try integer(key, value, 0...600_000)
        case "cues.lost_horizon_ms": cueLostHorizonMilliseconds = try integer(key, value, 1000...3_600_000)
        case "cues.hold_ms": cueHoldMilliseconds = try integer(key, value, 0...60_000)
        case "cues.minimum_confidence": cueMinimumConfidence = try number(key, value, 0...1)
        case "cues.session_gap_s": cueSessionGapSeconds = try integer(key, value, 0...(30 * 86_400))
        case "library.enabled": libraryEnabled = try boolean(key, value)
        case "library.path": libraryPath = try string(key, value)
        case "library.max_items_per_owner": libraryMaximumItemsPerOwner = try integer(key, value, 1...10_000_000)
        case "library.max_bytes_per_owner": libraryMaximumBytesPerOwner = try integer(key, value, 1024...(1 << 40))
        case "library.max_database_mb": libraryMaximumDatabaseMegabytes = try integer(key, value, 0...(1 << 22))
        case "library.reserve_bytes": libraryReserveBytes = try integer(key, value, 0...(1 << 50))
        case "library.change_log_length": libraryChangeLogLength = try integer(key, value, 1...1_000_000)
        case "library.read_connections": libraryReadConnections = try integer(key, value, 1...16)
        case "library.catch_up_bytes_per_second": libraryCatchUpBytesPerSecond = try integer(key, value, 65536...(1 << 40))
        case "rpc.listen": rpcListen = try strings(key, value)
        case "rpc.max_message_bytes": maximumMessageBytes = try integer(key, value, 1024...(256 << 20))
        case "rpc.max_in_flight_per_peer": maximumInFlightPerPeer = try integer(key, value, 1...10_000)
        case "rpc.max_in_flight_per_client": maximumInFlightPerClient = try integer(key, value, 1...100_000)
        case "rpc.max_in_flight": maximumInFlight = try integer(key, value, 1...100_000)
        case "rpc.default_timeout_ms": defaultTimeoutMilliseconds = try integer(key, value, 1...86_400_000)
        case "rpc.max_connections": maximumConnections = try integer(key, value, 1...1_000_000)
        case "rpc.max_connections_per_address": maximumConnectionsPerAddress = try integer(key, value, 1...1_000_000)
        case "events.listen": eventsListen = try strings(key, value)
        case "events.heartbeat_ms": heartbeatMilliseconds = try integer(key, value, 100...60_000)
        case "events.send_high_water_mark": sendHighWaterMark = try integer(key, value, 1...10_000_000)
        case "events.load_test_rate": loadTestRate = try integer(key, value, 0...1_000_000)
        case "security.mode":
            let s = try string(key, value)
            guard let mode = SecurityMode(rawValue: s) else { throw Problem(message: "\(key) must be \"curve\" or \"none\", not \"\(s)\"") }
            securityMode = mode
        case "security.allow_list": allowList = try string(key, value)
        default:
            let section = key.split(separator: ".").first.map(String.init) ?? key
            let known = Self.keys.filter { $0.hasPrefix(section + ".") }
            throw Problem(message: "unknown setting \(key)" + (known.isEmpty ? "; sections are daemon, audio, session, catalogs, cues, library, rpc, events, security"
                : "; [\(section)] has " + known.map { String($0.dropFirst(section.count + 1)) }.joined(separator: ", ")))
        }
    }

    func validate() throws(Problem) {
        guard Self.logLevels.contains(logLevel) else {
            throw Problem(message: "daemon.log_level must be one of \(Self.logLevels.joined(separator: ", ")), not \"\(logLevel)\"")
        }
        if source == .file, file.isEmpty { throw Problem(message: "audio.source = \"file\" needs audio.file") }
        guard !rpcListen.isEmpty else { throw Problem(message: "rpc.listen needs at least one endpoint") }
        guard !eventsListen.isEmpty else { throw Problem(message: "events.listen needs at least one endpoint") }
        guard !stateDirectory.isEmpty else { throw Problem(message: "daemon.state_directory must not be empty") }
        guard name.utf8.count <= 63, !name.unicodeScalars.contains(where: \.isControlCharacter) else {
            throw Problem(message: "daemon.name is at most 63 bytes of UTF-8 without control characters, not \"\(name)\"")
        }
    }

    private func string(_ key: String, _ v: TOMLSubset.Value) throws(Problem) -> String {
        guard case .string(let s) = v else { throw Problem(message: "\(key) must be a string in quotes, not \(v)") }
        return s
    }

    private func strings(_ key: String, _ v: TOMLSubset.Value) throws(Problem) -> [String] {
        if case .string(let s) = v { return [s] }
        guard case .array(let items) = v else { throw Problem(message: "\(key) must be a list of strings, not \(v)") }
        var out: [String] = []
        for item in items {
            guard case .string(let s) = item else { throw Problem(message: "\(key) must be a list of strings, not \(v)") }
            out.append(s)
        }
        return out
    }

    private func boolean(_ key: String, _ v: TOMLSubset.Value) throws(Problem) -> Bool {
        guard case .boolean(let b) = v else { throw Problem(message: "\(key) must be true or false, not \(v)") }
        return b
    }

    private func integer(_ key: String, _ v: TOMLSubset.Value, _ range: ClosedRange<Int>) throws(Problem) -> Int {
        guard case .integer(let i) = v else { throw Problem(message: "\(key) must be a whole number, not \(v)") }
        guard range.contains(i) else { throw Problem(message: "\(key) must be within \(range.lowerBound)…\(range.upperBound), not \(i)") }
        return i
    }

    private func number(_ key: String, _ v: TOMLSubset.Value, _ range: ClosedRange<Double>) throws(Problem) -> Double {
        let d: Double
        switch v {
        case .integer(let i): d = Double(i)
        case .float(let f): d = f
        default: throw Problem(message: "\(key) must be a number, not \(v)")
        }
        guard range.contains(d) else { throw Problem(message: "\(key) must be within \(range.lowerBound)…\(range.upperBound), not \(d)") }
        return d
    }
}

extension DaemonConfiguration {
    /// The configuration as TOML, every key (for `earshotd --check-config`).
    public func rendered(origin: String) -> String {
        func q(_ s: String) -> String { "\"" + s.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\"" }
        func list(_ a: [String]) -> String { "[" + a.map(q).joined(separator: ", ") + "]" }
        return """
            # effective configuration (from \(origin) and the command line)
            [daemon]
            state_directory = \(q(stateDirectory))
            log_level = \(q(logLevel))
            name = \(q(name))
            announce = \(announce)

            [audio]
            source = \(q(source.rawValue))
            device = \(q(device))
            sample_rate = \(sampleRate)
            channels = \(channels)
            period_ms = \(periodMilliseconds)
            buffer_seconds = \(bufferSeconds)
            realtime_priority = \(realtimePriority)
            file = \(q(file))
            loop = \(loop)

            [session]
            catalog = \(q(catalog))
            prepare_on_start = \(prepareOnStart)
            follow = \(follow)
            attempt_interval_ms = \(attemptIntervalMilliseconds)

            [catalogs]
            max_upload_bytes = \(maximumUploadBytes)
            max_uploads = \(maximumUploads)
            max_upload_total_bytes = \(maximumUploadTotalBytes)
            upload_expiry_s = \(uploadExpirySeconds)
            reserve_bytes = \(reserveBytes)
            trusted_authors = \(q(trustedAuthors))
            watch = \(watchCatalogFolder)

            [cues]
            enabled = \(cuesEnabled)
            lead_ms = \(cueLeadMilliseconds)
            lost_horizon_ms = \(cueLostHorizonMilliseconds)
            hold_ms = \(cueHoldMilliseconds)
            minimum_confidence = \(cueMinimumConfidence)
            session_gap_s = \(cueSessionGapSeconds)

            [library]
            enabled = \(libraryEnabled)
            path = \(q(libraryPath))
            max_items_per_owner = \(libraryMaximumItemsPerOwner)
            max_bytes_per_owner = \(libraryMaximumBytesPerOwner)
            max_database_mb = \(libraryMaximumDatabaseMegabytes)
            reserve_bytes = \(libraryReserveBytes)
            change_log_length = \(libraryChangeLogLength)
            read_connections = \(libraryReadConnections)
            catch_up_bytes_per_second = \(libraryCatchUpBytesPerSecond)

            [rpc]
            listen = \(list(rpcListen))
            max_message_bytes = \(maximumMessageBytes)
            max_in_flight_per_peer = \(maximumInFlightPerPeer)
            max_in_flight_per_client = \(maximumInFlightPerClient)
            max_in_flight = \(maximumInFlight)
            default_timeout_ms = \(defaultTimeoutMilliseconds)
            max_connections = \(maximumConnections)
            max_connections_per_address = \(maximumConnectionsPerAddress)

            [events]
            listen = \(list(eventsListen))
            heartbeat_ms = \(heartbeatMilliseconds)
            send_high_water_mark = \(sendHighWaterMark)
            load_test_rate = \(loadTestRate)

            [security]
            mode = \(q(securityMode.rawValue))
            allow_list = \(q(allowList))
            """
    }
}
