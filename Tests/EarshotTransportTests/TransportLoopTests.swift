import EarshotSync
import Foundation
import Testing

@testable import EarshotTransport

/// The loop's own rules, apart from any protocol: what was handed to it before a stop still
/// happens, and everything attached leaves it closed.
@Suite struct TransportLoopTests {
    /// Records what the loop did with it.
    final class Probe: LoopAttachment, @unchecked Sendable {
        let detachedCount = Locked(0)
        var pollSocket: ZMQSocket? { nil }
        func socketReadable(now: ContinuousClock.Instant) {}
        func nextWakeup() -> ContinuousClock.Instant? { nil }
        func timerFired(now: ContinuousClock.Instant) {}
        func detached() { detachedCount.withLock { $0 += 1 } }
    }

    /// Attached, then stopped before the loop thread ever ran the attach (a client closed at
    /// once, on a loaded machine): it still leaves the loop, once.
    @Test func anAttachmentQueuedBeforeAStopLeavesTheLoop() throws {
        let loop = try TransportLoop()
        let probe = Probe()
        loop.engine.attach(probe)
        loop.stop()
        #expect(probe.detachedCount.withLock { $0 } == 1)
        // After the stop, an attachment is refused and told at once.
        let late = Probe()
        loop.engine.attach(late)
        #expect(late.detachedCount.withLock { $0 } == 1)
    }

    /// The self-test of a secure daemon in miniature: a client with a refused key, closed as soon
    /// as it is refused, its loop's thread perhaps not yet running. Its socket and its monitor are
    /// closed in order every time: a monitor left sending to a closed reader would block
    /// libzmq's I/O thread, and the next close of the client's socket with it.
    @Test func clientsClosedAtOnceAfterARefusalNeverHang() async throws {
        let secure = try SecureServer()
        for _ in 0..<30 {
            let before = secure.allowList.rejections.count
            let client = try secure.client(try CurveKeyPair.generate())
            let refused = ContinuousClock.now + .seconds(10)
            while secure.allowList.rejections.count == before, ContinuousClock.now < refused { usleep(1000) }
            client.close()
        }
        // libzmq's I/O thread still serves: a known client gets its answer (in time: the process's
        // one I/O thread and ZAP handler also serve the floods of tests running beside this one).
        let known = try secure.client(secure.clientKeys[.viewer])
        defer { known.close() }
        let reply = try await known.call(SecureServer.viewing, Echo.request("still there"), timeout: .seconds(60))
        #expect(reply.service == "still there")
    }
}
