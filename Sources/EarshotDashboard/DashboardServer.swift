import EarshotSync
import FlyingFox
import FlyingSocks
import Foundation

/// The dashboard's web server (FlyingFox): the page, the boxes' state as JSON, and a WebSocket
/// that pushes it on every change. With a token, every request must carry it (`?token=`).
public final class DashboardServer: Sendable {
    private let server: HTTPServer
    private let token: String?
    private let report: @Sendable () -> DashboardReport
    private let sockets = Locked<[Int: AsyncStream<WSMessage>.Continuation]>([:])
    private let nextSocket = Locked(0)
    /// Held while a report is made and handed to the pages, so that every page gets the reports
    /// in the order they were made (an older one arriving last would show an older state until
    /// the next change); it holds the reports' sequence number.
    private let pushing = Locked<UInt64>(0)

    /// Whether requests must name this computer (a loopback address or localhost) as their
    /// Host: true on a loopback address, where another site's page must not reach it by a
    /// name of its own that resolves here (DNS rebinding).
    private let loopbackOnly: Bool

    /// A server on `host` (an IPv4 address) and `port` (0: the kernel picks one) that shows what
    /// `report` returns.
    public init(host: String, port: UInt16, token: String?, report: @escaping @Sendable () -> DashboardReport) throws {
        server = HTTPServer(address: try .inet(ip4: host, port: port), logger: .disabled)
        self.token = token
        self.report = report
        loopbackOnly = host.hasPrefix("127.")
    }

    /// Characters a token may hold: those a URL carries unchanged.
    public static func isValidToken(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D || c == 0x2E || c == 0x5F || c == 0x7E
        }
    }

    /// Serves until the task is cancelled.
    public func run() async throws {
        await server.appendRoute("GET /") { [self] request in
            guard authorised(request) else { return Self.refusal }
            return HTTPResponse(statusCode: .ok, headers: [.contentType: "text/html; charset=utf-8", .init("Cache-Control"): "no-store"],
                                body: Data(DashboardPage.html.utf8))
        }
        await server.appendRoute("GET /state.json") { [self] request in
            guard authorised(request) else { return Self.refusal }
            return HTTPResponse(statusCode: .ok, headers: [.contentType: "application/json", .init("Cache-Control"): "no-store"],
                                body: json())
        }
        await server.appendRoute("GET /socket") { [self] request in
            guard authorised(request) else { return Self.refusal }
            return try await WebSocketHTTPHandler(handler: MessageFrameWSHandler(handler: Pusher(server: self))).handleRequest(request)
        }
        try await server.run()
    }

    /// The port it listens on, once it does.
    public func port() async throws -> UInt16 {
        try await server.waitUntilListening()
        guard case .ip4(_, let port)? = await server.listeningAddress else { throw DashboardError("the dashboard is not listening") }
        return port
    }

    /// Sends the current report to every open page.
    public func push() {
        pushing.withLock { seq in
            let pages = sockets.withLock { Array($0.values) }
            guard !pages.isEmpty else { return }
            seq += 1
            let text = String(decoding: json(seq: seq), as: UTF8.self)
            for continuation in pages { continuation.yield(.text(text)) }
        }
    }

    /// Pages connected now.
    public var connectedPages: Int { sockets.withLock { $0.count } }

    /// The report now as JSON, numbered `seq` (pushes), or with the number of the last push
    /// (`/state.json`).
    private func json(seq: UInt64? = nil) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "0", negativeInfinity: "0", nan: "0")
        var made = report()
        made.seq = seq ?? pushing.withLock { $0 }
        return (try? encoder.encode(made)) ?? Data("{}".utf8)
    }

    /// The request names this computer (on loopback), comes from the dashboard's own page when
    /// a browser says where from (Origin), and carries the token when there is one.
    private func authorised(_ request: HTTPRequest) -> Bool {
        let host = request.headers[HTTPHeader("Host")] ?? ""
        if loopbackOnly {
            let name = host.split(separator: ":").first.map(String.init) ?? ""
            guard name.hasPrefix("127.") || name == "localhost" else { return false }
        }
        if let origin = request.headers[HTTPHeader("Origin")], origin != "http://" + host { return false }
        guard let token else { return true }
        return Self.sameBytes(request.query.first(where: { $0.name == "token" })?.value ?? "", token)
    }

    /// Compares in a time that depends on the lengths only.
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private static let refusal = HTTPResponse(statusCode: .forbidden, headers: [.contentType: "text/plain; charset=utf-8"],
                                              body: Data("Refused: open the dashboard at the address earshot printed (with its ?token=… when it has one).\n".utf8))

    /// One page's WebSocket: the current report at once, then one on every change.
    private struct Pusher: WSMessageHandler {
        let server: DashboardServer

        func makeMessages(for client: AsyncStream<WSMessage>) async throws -> AsyncStream<WSMessage> {
            let (messages, continuation) = AsyncStream<WSMessage>.makeStream(bufferingPolicy: .bufferingNewest(4))
            let id = server.nextSocket.withLock { n -> Int in
                n += 1
                return n
            }
            // Registered and sent its first report in turn with the pushes: nothing older follows it.
            server.pushing.withLock { seq in
                server.sockets.withLock { $0[id] = continuation }
                seq += 1
                continuation.yield(.text(String(decoding: server.json(seq: seq), as: UTF8.self)))
            }
            let sockets = server.sockets
            Task {
                for await _ in client {}
                _ = sockets.withLock { $0.removeValue(forKey: id) }
                continuation.finish()
            }
            return messages
        }
    }
}

public struct DashboardError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
