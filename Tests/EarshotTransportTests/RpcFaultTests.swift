import EarshotTestSupport
import EarshotWire
import Foundation
import Testing

@testable import EarshotTransport

/// Calls that go wrong and peers that misbehave. After each fault a well-behaved client still
/// gets a correct answer.
@Suite struct RpcFaultTests {
    @Test func deadlineCancelsTheHandlerAndEndsTheCall() async throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let client = try makeClient(echo.endpoint)
        defer { client.close() }
        // Connected first: a call whose deadline passes before the connection is up (a loaded
        // machine) is never sent, and the server would have nothing to cancel.
        _ = try await client.call(Echo.say, Echo.request("warm up"))

        let error = await rpcError { () async throws(RpcError) in
            try await client.call(Echo.hold, Echo.request("slow"), timeout: .milliseconds(150))
        }
        #expect(error?.code == .deadlineExceeded)
        // The server cancelled the handler on its own (its deadline timer), and answered
        // DEADLINE_EXCEEDED.
        try await eventually("echo.endings.first != nil") { echo.endings.first != nil }
        #expect(echo.endings.first?.code == .deadlineExceeded)
        try await eventually("echo.server.statistics.callsByStatus[.deadlineExceeded] == 1") { echo.server.statistics.callsByStatus[.deadlineExceeded] == 1 }
        try await eventually("echo.server.statistics.inFlight == 0") { echo.server.statistics.inFlight == 0 }
        try await echo.expectHealthy()
    }

    @Test func serverDeadlineReachesARawClient() async throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let raw = try RawDealer(echo.endpoint)
        var envelope = RawDealer.envelope(9, Echo.hold.path, payload: try Echo.request("x").serializedBytes())
        envelope.timeoutMs = 100
        try raw.send(envelope)
        let reply = try #require(try await raw.receive())
        #expect(reply.requestID == 9)
        #expect(reply.kind == .end)
        #expect(reply.status.code == RpcStatusCode.deadlineExceeded.rawValue)
        #expect(reply.status.message == "the call did not finish within its timeout of 0.1 s")
        try await echo.expectHealthy()
    }

    @Test func clientCancelOfAStreamReachesTheHandler() async throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let client = try makeClient(echo.endpoint)
        defer { client.close() }

        var received: [String] = []
        for try await item in client.stream(Echo.ticks, Echo.request("")) {
            received.append(item.service)
            if received.count == 3 { break }
        }
        #expect(received == ["0", "1", "2"])
        try await eventually("echo.endings.first != nil") { echo.endings.first != nil }
        #expect(echo.endings.first == RpcError(.cancelled, "cancelled by the client"))
        try await eventually("echo.server.statistics.inFlight == 0") { echo.server.statistics.inFlight == 0 }
        try await echo.expectHealthy()
    }

    @Test func cancelIsIdempotentAndIgnoredForUnknownCalls() async throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let raw = try RawDealer(echo.endpoint)
        try raw.send(RawDealer.envelope(5, Echo.hold.path, payload: try Echo.request("x").serializedBytes()))
        try await eventually("echo.server.statistics.inFlight == 1") { echo.server.statistics.inFlight == 1 }
        try raw.send(RawDealer.envelope(5, control: .cancel))
        try raw.send(RawDealer.envelope(5, control: .cancel))
        try raw.send(RawDealer.envelope(77, control: .cancel))
        let end = try #require(try await raw.receive())
        #expect(end.requestID == 5 && end.kind == .end && end.status.code == RpcStatusCode.cancelled.rawValue)
        // Nothing more: the second CANCEL and the one for an unknown id are ignored.
        #expect(try await raw.receive(timeout: .milliseconds(100)) == nil)
        try await echo.expectHealthy()
    }

    @Test func unknownMethodIsUnimplemented() async throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let client = try makeClient(echo.endpoint)
        defer { client.close() }
        let error = await rpcError { () async throws(RpcError) in try await client.call(Echo.missing, Echo.request("?")) }
        #expect(error == RpcError(.unimplemented, "unknown method \"/earshot.test.Echo/Missing\""))
        #expect(echo.server.statistics.callsByMethod[Echo.missing.path] == nil)
        try await echo.expectHealthy()
    }

    @Test func undecodablePayloadIsInvalidArgument() async throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let client = try makeClient(echo.endpoint)
        defer { client.close() }
        var garbage = Earshot_V1_MatchSignatureRequest()
        garbage.signature = Data([0xFF, 0xFE, 0xFD])  // field 1 as a string: not UTF-8
        let error = await rpcError { () async throws(RpcError) in try await client.call(Echo.sayWrongType, garbage) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.hasPrefix("the payload is not a valid earshot.v1.HealthCheckRequest") == true)
        try await echo.expectHealthy()
    }

    @Test func garbageFramesAreDroppedAndCounted() async throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let raw = try RawDealer(echo.endpoint)
        let junk: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF]
        let valid = try RawDealer.envelope(3).serializedBytes() as [UInt8]

        raw.send([Array("hello".utf8)])  // one frame
        raw.send([Array(rpcSignature.utf8), valid, valid])  // three frames
        raw.send([Array("EARSHOT/0".utf8), junk])  // wrong signature, bad envelope
        raw.send([Array(rpcSignature.utf8), junk])  // bad envelope
        try raw.send(RawDealer.envelope(0))  // request id 0
        try await eventually("3 frames and 2 envelopes are dropped") {
            let s = echo.server.statistics
            return s.droppedFrames == 3 && s.droppedEnvelopes == 2
        }
        #expect(try await raw.receive(timeout: .milliseconds(50)) == nil)

        // A wrong signature with an envelope that parses is answered, so the peer learns why.
        try raw.send(RawDealer.envelope(4), signature: "EARSHOT/2")
        let refusal = try #require(try await raw.receive())
        #expect(refusal.requestID == 4)
        #expect(refusal.status.code == RpcStatusCode.unimplemented.rawValue)
        #expect(refusal.status.message == "unsupported protocol \"EARSHOT/2\"; this server speaks EARSHOT/1")

        // The same connection still works.
        try raw.send(RawDealer.envelope(5, control: .ping))
        let pong = try #require(try await raw.receive())
        #expect(pong.requestID == 5 && pong.kind == .pong)
        try await echo.expectHealthy()
    }

    @Test func oversizedMessageDisconnectsThePeer() async throws {
        let echo = try EchoServer { $0.maximumMessageBytes = 64 << 10 }
        defer { echo.stop() }
        let raw = try RawDealer(echo.endpoint)
        // A stream in flight on that connection: its handler learns of the disconnect.
        try raw.send(RawDealer.envelope(1, Echo.ticks.path))
        let first = try #require(try await raw.receive())
        #expect(first.kind == .message)

        raw.send([Array(rpcSignature.utf8), [UInt8](repeating: 0, count: 100 << 10)])
        try await eventually("echo.endings.first != nil") { echo.endings.first != nil }
        #expect(echo.endings.first == RpcError(.cancelled, "the client disconnected"))
        #expect(echo.server.statistics.peersLost >= 1)
        // The DEALER reconnects by itself (a new routing id) and is served again.
        try raw.send(RawDealer.envelope(2, control: .ping))
        var pong: Earshot_V1_ResponseEnvelope?
        while pong == nil, let reply = try await raw.receive() {
            if reply.kind == .pong { pong = reply }
        }
        #expect(pong?.requestID == 2)
        try await echo.expectHealthy()
    }

    @Test func inFlightLimitsGiveResourceExhausted() async throws {
        let echo = try EchoServer {
            $0.maximumInFlightPerPeer = 2
            $0.maximumInFlight = 3
            $0.guaranteedPerClient = 0
        }
        defer { echo.stop() }
        let first = try makeClient(echo.endpoint)
        let second = try makeClient(echo.endpoint)
        defer {
            first.close()
            second.close()
        }
        let held = (0..<2).map { i in
            Task { () async throws(RpcError) in try await first.call(Echo.hold, Echo.request("a\(i)")) }
        }
        try await eventually("echo.server.statistics.inFlight == 2") { echo.server.statistics.inFlight == 2 }
        let perPeer = await rpcError { () async throws(RpcError) in try await first.call(Echo.say, Echo.request("3rd")) }
        #expect(perPeer?.code == .resourceExhausted)
        #expect(perPeer?.message == "2 calls from this connection are already in flight (at most 2)")

        let third = Task { () async throws(RpcError) in try await second.call(Echo.hold, Echo.request("b")) }
        try await eventually("echo.server.statistics.inFlight == 3") { echo.server.statistics.inFlight == 3 }
        let total = await rpcError { () async throws(RpcError) in try await second.call(Echo.say, Echo.request("4th")) }
        #expect(total == RpcError(.resourceExhausted, "the server is busy: 3 calls are in flight (at most 3; beyond that only a client's first 0 are let in)"))
        #expect(echo.server.statistics.rejected == 2)

        echo.gate.open()
        for task in held + [third] {
            let reply = try await task.value
            #expect(reply.service.hasPrefix("a") || reply.service == "b")
        }
        try await eventually("echo.server.statistics.inFlight == 0") { echo.server.statistics.inFlight == 0 }
        try await echo.expectHealthy()
    }

    @Test func duplicateRequestIDInFlightIsAlreadyExists() async throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let raw = try RawDealer(echo.endpoint)
        let payload = try Echo.request("dup").serializedBytes() as Data
        try raw.send(RawDealer.envelope(7, Echo.hold.path, payload: payload))
        try await eventually("echo.server.statistics.inFlight == 1") { echo.server.statistics.inFlight == 1 }
        try raw.send(RawDealer.envelope(7, Echo.hold.path, payload: payload))
        let refusal = try #require(try await raw.receive())
        #expect(refusal.requestID == 7 && refusal.kind == .end)
        #expect(refusal.status.code == RpcStatusCode.alreadyExists.rawValue)

        echo.gate.open()
        let end = try #require(try await raw.receive())
        #expect(end.requestID == 7 && end.status.code == 0)
        #expect(try Earshot_V1_HealthCheckRequest(serializedBytes: end.payload).service == "dup")
        // Once ended, the id may be used again.
        try raw.send(RawDealer.envelope(7, payload: payload))
        #expect(try await raw.receive()?.status.code == 0)
        try await echo.expectHealthy()
    }

    @Test func clientDisconnectingMidStreamCancelsTheHandler() async throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let client = try makeClient(echo.endpoint)
        var received = 0
        do {
            for try await _ in client.stream(Echo.ticks, Echo.request("")) {
                received += 1
                // Closing drops the connection without a CANCEL: the server must notice by itself.
                if received == 2 { client.close() }
            }
        } catch let error as RpcError {
            #expect(error == RpcError(.cancelled, "the client was closed"))
        }
        #expect(received >= 2)
        try await eventually("echo.endings.first != nil") { echo.endings.first != nil }
        #expect(echo.endings.first == RpcError(.cancelled, "the client disconnected"))
        try await eventually("echo.server.statistics.inFlight == 0") { echo.server.statistics.inFlight == 0 }
        try await echo.expectHealthy()
    }

    @Test func streamToAClientThatDoesNotReadEndsWithResourceExhausted() async throws {
        let echo = try EchoServer { $0.highWaterMark = 4 }
        defer { echo.stop() }
        let raw = try RawDealer(echo.endpoint)
        try raw.socket.set(.receiveHighWaterMark, 4)
        try raw.send(RawDealer.envelope(1, Echo.flood.path))
        // The raw peer reads nothing; TCP buffers fill, then the server's queue for it.
        try await eventually("echo.endings.first != nil") { echo.endings.first != nil }
        let ending = try #require(echo.endings.first)
        #expect(ending.code == .resourceExhausted)
        #expect(ending.message == "the client is not reading its stream fast enough (send queue full)")
        try await eventually("echo.server.statistics.inFlight == 0") { echo.server.statistics.inFlight == 0 }
        try await echo.expectHealthy()
    }

    @Test func peerThatFloodsThenVanishesDoesNotHurtTheServer() async throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let raw = try RawDealer(echo.endpoint)
        try raw.socket.set(.sendHighWaterMark, 0)
        let ping = try RawDealer.envelope(1, control: .ping).serializedBytes() as [UInt8]
        for _ in 0..<20_000 { raw.send([Array(rpcSignature.utf8), ping]) }
        // It never reads its PONGs, then leaves with them unread (the kernel resets the
        // connection).
        try await eventually("PONGs come back") {
            var polls = ZMQPollSet()
            polls.add(raw.socket)
            try polls.poll(timeoutMilliseconds: 0)
            return polls.isReadable(0)
        }
        raw.socket.close()
        try await echo.expectHealthy()
        #expect(echo.server.statistics.inFlight == 0)
    }

    @Test func metadataLimitsAreInvalidArgument() async throws {
        let echo = try EchoServer { $0.maximumMetadataEntries = 4 }
        defer { echo.stop() }
        let client = try makeClient(echo.endpoint)
        defer { client.close() }
        let many = Dictionary(uniqueKeysWithValues: (0..<5).map { ("k\($0)", "v") })
        let tooMany = await rpcError { () async throws(RpcError) in
            try await client.call(Echo.say, Echo.request("m"), metadata: many)
        }
        // Judged on the wire bytes, before the envelope is decoded (EnvelopePrecheck).
        #expect(tooMany == RpcError(.invalidArgument, "more than 4 metadata entries; at most 4 are allowed"))
        let big = await rpcError { () async throws(RpcError) in
            try await client.call(Echo.say, Echo.request("m"), metadata: ["k": String(repeating: "v", count: 9000)])
        }
        #expect(big == RpcError(.invalidArgument, "more than 8192 bytes of metadata; at most 8192 are allowed"))
        // Just over the limit is below what the wire check can tell: the exact rule catches it.
        let justOver = await rpcError { () async throws(RpcError) in
            try await client.call(Echo.say, Echo.request("m"), metadata: ["k": String(repeating: "v", count: 8192)])
        }
        #expect(justOver == RpcError(.invalidArgument, "8193 bytes of metadata; at most 8192 are allowed"))
        let badKey = await rpcError { () async throws(RpcError) in
            try await client.call(Echo.say, Echo.request("m"), metadata: ["X-Trace": "1"])
        }
        #expect(badKey?.code == .invalidArgument)
        try await echo.expectHealthy()
    }

    @Test func shutdownRefusesNewCallsAndCancelsStragglers() async throws {
        let echo = try EchoServer()
        defer { echo.stop() }
        let client = try makeClient(echo.endpoint)
        defer { client.close() }
        let held = Task { () async throws(RpcError) in try await client.call(Echo.hold, Echo.request("x")) }
        try await eventually("echo.server.statistics.inFlight == 1") { echo.server.statistics.inFlight == 1 }
        await echo.server.shutdown(grace: .milliseconds(100))
        #expect(await held.result.failure == RpcError(.unavailable, "the server is shutting down"))
        let refused = await rpcError { () async throws(RpcError) in try await client.call(Echo.say, Echo.request("y")) }
        #expect(refused == RpcError(.unavailable, "the server is shutting down"))
        try await client.ping(timeout: .seconds(60))
    }
}
