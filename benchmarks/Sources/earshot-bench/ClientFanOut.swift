import EarshotTransport
import Foundation

/// Many RPC clients (one client I/O thread, as on a LAN) calling at once, from this process.
enum ClientFanOut {
    /// Every client makes `calls` calls one after another, all clients at once; returns the
    /// latencies of the calls that succeeded (from `origin` when given, else from each call's
    /// start) and how many failed or returned false.
    static func timedCalls(_ clients: [RpcClient], calls: Int, from origin: Double? = nil,
                           _ call: @escaping @Sendable (RpcClient) async throws -> Bool) -> (latencies: [Double], errors: Int) {
        let latencies = SharedList()
        let errors = SharedCounter()
        let group = DispatchGroup()
        for c in clients {
            group.enter()
            Task.detached { @Sendable in
                defer { group.leave() }
                for _ in 0..<calls {
                    let t = origin ?? Clock.now()
                    do {
                        let ok = try await call(c)
                        latencies.append((Clock.now() - t) * 1000)
                        if !ok { errors.add() }
                    } catch {
                        errors.add()
                    }
                }
            }
        }
        group.wait()
        return (latencies.all, errors.count)
    }
}
