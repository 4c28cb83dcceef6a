// libFuzzer harness: the RPC request envelope and every request payload, decoded as the server
// decodes them — `WireCoding.decodingOptions` (message depth limit 32) for the envelope,
// `WireCoding.decodeRequest` for the payload, `MetadataRules` with the default limits — and the
// MatchSignature payload's signature bytes as RecognizerService reads them.
//
// The payload is decoded as the request type of the envelope's method; for a method the server
// does not know (what a mutation usually makes) it is decoded as the type picked by the request
// id, so every payload type sees every input. Whatever decodes must encode and decode again.
import EarshotCore
import EarshotWire
@testable import EarshotTransport
import Foundation
import SwiftProtobuf
import FuzzSupport

@_cdecl("fuzz_envelope_main")
public func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    fuzzMain(argc, argv, fuzzEnvelope, seeds: seeds)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEnvelope(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let frame = data.map { Data(bytes: $0, count: size) } ?? Data()
    // The client's side of the same frame, for free.
    _ = try? Earshot_V1_ResponseEnvelope(serializedBytes: frame, options: WireCoding.decodingOptions)
    guard let envelope = try? Earshot_V1_RequestEnvelope(serializedBytes: frame, options: WireCoding.decodingOptions),
        envelope.requestID != 0
    else { return 0 }
    roundTrip(envelope)
    _ = WireCoding.printable(Array(envelope.method.utf8.prefix(128)))
    let limits = RpcServer.Configuration(endpoints: [])
    _ = MetadataRules.problem(with: envelope.metadata, maximumBytes: limits.maximumMetadataBytes,
                              maximumEntries: limits.maximumMetadataEntries)
    if envelope.timeoutMs != 0 { _ = min(.milliseconds(Int64(envelope.timeoutMs)), limits.maximumTimeout) }

    let index = decoders.firstIndex { $0.path == envelope.method } ?? Int(envelope.requestID % UInt64(decoders.count))
    decoders[index].decode(envelope.payload)
    return 0
}

private func roundTrip<M: SwiftProtobuf.Message>(_ message: M) {
    guard let bytes: [UInt8] = try? message.serializedBytes() else { fatalError("\(M.protoMessageName) does not encode") }
    guard let again = try? M(serializedBytes: bytes, options: WireCoding.decodingOptions) else {
        fatalError("\(M.protoMessageName) does not decode from its own encoding")
    }
    precondition(again.isEqualTo(message: message), "\(M.protoMessageName) changes through its own encoding")
}

private struct Decoder: Sendable {
    let path: String
    let decode: @Sendable (Data) -> Void
}

private func decoder<Request, Response>(_ method: RpcMethod<Request, Response>, then use: @escaping @Sendable (Request) -> Void = { _ in })
    -> Decoder
{
    Decoder(path: method.path) { payload in
        guard case .success(let request) = WireCoding.decodeRequest(Request.self, payload) else { return }
        roundTrip(request)
        use(request)
    }
}

private let decoders: [Decoder] = [
    decoder(Methods.Recognizer.prepare),
    decoder(Methods.Recognizer.match),
    decoder(Methods.Recognizer.streamMatches) { _ = $0.includeRepeats },
    decoder(Methods.Recognizer.matchSignature) { request in
        if let signature = try? Signature(dataRepresentation: Array(request.signature)) { _ = signature.duration }
    },
    decoder(Methods.Recognizer.cancel),
    decoder(Methods.Session.getSnapshot),
    decoder(Methods.Catalogs.list),
    decoder(Methods.Catalogs.describe) { _ = $0.name.utf8.count },
    decoder(Methods.Health.check) { _ = $0.service.utf8.count },
    decoder(Methods.Health.watch),
    decoder(Methods.Health.getStats),
]

private func seeds() -> [[UInt8]] {
    func envelope(_ id: UInt64, _ method: String, _ payload: [UInt8] = [], control: Earshot_V1_RequestEnvelope.Control = .call,
                  metadata: [String: String] = [:], timeout: UInt32 = 0) -> [UInt8] {
        var e = Earshot_V1_RequestEnvelope()
        e.requestID = id
        e.method = method
        e.payload = Data(payload)
        e.control = control
        e.metadata = metadata
        e.timeoutMs = timeout
        return try! e.serializedBytes()
    }
    let peaks = seedPeaks(seconds: 2, perSecond: 20, seed: 7).map { Peak(time: $0.time, bin: $0.bin, magnitude: $0.magnitude) }
    var matchSignature = Earshot_V1_MatchSignatureRequest()
    matchSignature.signature = Data(try! Signature(duration: 2, peaks: peaks).dataRepresentation)
    var stream = Earshot_V1_StreamMatchesRequest()
    stream.includeRepeats = true
    var describe = Earshot_V1_DescribeCatalogRequest()
    describe.name = "quiz"
    var health = Earshot_V1_HealthCheckRequest()
    health.service = "earshot.v1.Recognizer"
    return [
        envelope(1, Methods.Recognizer.prepare.path, metadata: ["client": "fuzz", "trace-id": "0af7651916cd43dd"], timeout: 500),
        envelope(2, Methods.Recognizer.match.path, timeout: 12_000),
        envelope(3, Methods.Recognizer.streamMatches.path, try! stream.serializedBytes()),
        envelope(4, Methods.Recognizer.matchSignature.path, try! matchSignature.serializedBytes()),
        envelope(5, Methods.Recognizer.cancel.path),
        envelope(6, Methods.Session.getSnapshot.path),
        envelope(7, Methods.Catalogs.list.path),
        envelope(8, Methods.Catalogs.describe.path, try! describe.serializedBytes()),
        envelope(9, Methods.Health.check.path, try! health.serializedBytes()),
        envelope(10, Methods.Health.watch.path, try! health.serializedBytes()),
        envelope(11, Methods.Health.getStats.path),
        envelope(12, "", control: .ping),
        envelope(2, "", control: .cancel),
    ]
}
