import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Headless Chromium driven through the DevTools protocol over a pipe (`--remote-debugging-pipe`:
/// it reads commands on its fd 3 and answers on fd 4, each message JSON ending in a NUL byte), so
/// a test can keep one page open and watch it change as a person would, with no port opened.
///
/// Each call waits, on a thread of its own rather than the tasks' shared ones, until Chromium
/// answers or `timeout` passes.
public final class HeadlessBrowser: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// Headless Chromium from Debian.
    public static let chromium = "/usr/bin/chromium"

    private let pid: pid_t
    /// Our end of the socket pair that is Chromium's fds 3 and 4.
    private let channel: Int32
    private let profile: TemporaryDirectory
    /// Where the calls run, one at a time.
    private let queue = DispatchQueue(label: "earshot.headless-browser")
    private var nextID = 0
    private var pending = [UInt8]()
    private var session: String?
    private let timeout: Duration

    /// Starts Chromium with an empty profile and a window of `width` × `height` CSS pixels.
    public init(width: Int = 1100, height: Int = 700, timeout: Duration = .seconds(15)) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.chromium) else {
            throw Failure("chromium is required at \(Self.chromium) (apt-get install chromium)")
        }
        self.timeout = timeout
        profile = try TemporaryDirectory("earshot-chromium")
        // A write to a Chromium that died must fail, not end the test process.
        signal(SIGPIPE, SIG_IGN)
        // One socket pair, close-on-exec from the start so that no other child of this process
        // inherits it: Chromium reads and writes its end as fds 3 and 4.
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw Failure("socketpair: \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears FD_CLOEXEC on the copies: Chromium keeps exactly fds 3 and 4 of these.
        posix_spawn_file_actions_adddup2(&actions, pair[1], 3)
        posix_spawn_file_actions_adddup2(&actions, pair[1], 4)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own, so that its helper processes end with it.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        let arguments = [Self.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                         "--remote-debugging-pipe", "--user-data-dir=\(profile.path)", "--window-size=\(width),\(height)", "about:blank"]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, Self.chromium, &actions, &attributes, &argv, environ)
        close(pair[1])
        guard spawned == 0 else {
            close(pair[0])
            throw Failure("cannot start chromium: \(String(cString: strerror(spawned)))")
        }
        pid = child
        channel = pair[0]
    }

    deinit {
        _ = try? call("Browser.close", [:], inPage: false)
        close(channel)
        // It closes by itself within a moment; whatever is left of it then is killed, and reaped.
        var status: Int32 = 0
        for _ in 0..<50 {
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(20_000)
        }
        kill(-pid, SIGKILL)
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
    }

    /// Opens `url` in a new page, which later calls act on, and waits for it to load.
    public func open(_ url: String) async throws {
        try await onQueue { [self] in
            let created = try call("Target.createTarget", ["url": url], inPage: false)
            guard let target = created["targetId"] as? String else { throw Failure("no target in \(created)") }
            let attached = try call("Target.attachToTarget", ["targetId": target, "flatten": true], inPage: false)
            guard let id = attached["sessionId"] as? String else { throw Failure("no session in \(attached)") }
            session = id
            let deadline = ContinuousClock.now + timeout
            // While the page is being replaced, an evaluation can fail: not loaded yet.
            while (try? value("location.href !== 'about:blank' && document.readyState")) != "complete" {
                guard ContinuousClock.now < deadline else { throw Failure("\(url) did not load") }
                usleep(50_000)
            }
        }
    }

    /// The value of a JavaScript expression in the page, as JSON text (a string as its JSON).
    @discardableResult
    public func evaluateJSON(_ expression: String) async throws -> String {
        try await onQueue { [self] in try json(expression) }
    }

    /// The value of a JavaScript expression that gives a string (nil when it gives none).
    public func evaluate(_ expression: String) async throws -> String? {
        try await onQueue { [self] in try value(expression) }
    }

    /// The page's document as it stands now.
    public func html() async throws -> String { try await evaluate("document.documentElement.outerHTML") ?? "" }

    /// Writes what the page shows now as a PNG file.
    public func screenshot(to path: String) async throws {
        try await onQueue { [self] in
            let shot = try call("Page.captureScreenshot", ["format": "png"])
            guard let text = shot["data"] as? String, let data = Data(base64Encoded: text) else { throw Failure("no screenshot") }
            try data.write(to: URL(fileURLWithPath: path))
        }
    }

    private func json(_ expression: String) throws -> String {
        let reply = try call("Runtime.evaluate", ["expression": "JSON.stringify((() => (\(expression)))())", "returnByValue": true])
        if let exception = reply["exceptionDetails"] { throw Failure("\(expression) threw: \(exception)") }
        guard let result = reply["result"] as? [String: Any] else { throw Failure("no result in \(reply)") }
        return result["value"] as? String ?? "null"
    }

    private func value(_ expression: String) throws -> String? {
        let text = try json(expression)
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)) as? String
    }

    /// Runs `body` on the browser's own thread.
    private func onQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Sends one command (to the open page unless `inPage` is false) and waits for its answer.
    private func call(_ method: String, _ parameters: [String: Any], inPage: Bool = true) throws -> [String: Any] {
        nextID += 1
        var message: [String: Any] = ["id": nextID, "method": method, "params": parameters]
        if inPage {
            guard let session else { throw Failure("no page is open") }
            message["sessionId"] = session
        }
        var bytes = [UInt8](try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { write(channel, $0.baseAddress, $0.count) }
            guard n > 0 else { throw Failure("chromium stopped reading (\(method))") }
            sent += n
        }
        let deadline = ContinuousClock.now + timeout
        while true {
            let reply = try nextMessage(until: deadline, waiting: method)
            guard reply["id"] as? Int == nextID else { continue }  // an event, or a late answer
            if let error = reply["error"] as? [String: Any] { throw Failure("\(method): \(error["message"] ?? error)") }
            return reply["result"] as? [String: Any] ?? [:]
        }
    }

    /// The next message Chromium wrote.
    private func nextMessage(until deadline: ContinuousClock.Instant, waiting method: String) throws -> [String: Any] {
        while true {
            if let end = pending.firstIndex(of: 0) {
                let json = Data(pending[..<end])
                pending.removeSubrange(...end)
                return (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] ?? [:]
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw Failure("chromium did not answer \(method) in time") }
            var poller = pollfd(fd: channel, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(1000, max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
            guard poll(&poller, 1, milliseconds) >= 0 || errno == EINTR else { throw Failure("poll: \(errno)") }
            guard poller.revents != 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = chunk.withUnsafeMutableBytes { read(channel, $0.baseAddress, $0.count) }
            guard n > 0 else { throw Failure("chromium is gone (\(method))") }
            pending += chunk[..<n]
        }
    }
}
