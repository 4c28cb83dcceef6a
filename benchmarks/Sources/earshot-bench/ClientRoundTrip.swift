import EarshotTransport
import EarshotWire
import Foundation

/// `earshot-bench _rtt`: the Swift client's `Match` round trip against a running daemon, over
/// CURVE with key files, as `benchmarks/client-rtt.sh` measures the C and Python clients: 10
/// warm-up calls, then `--calls` sequential ones; prints "p50 p99" in milliseconds.
enum ClientRoundTrip {
    static func run(_ o: Options) throws -> Int32 {
        var configuration = RpcClient.Configuration()
        configuration.security = ClientSecurity(serverPublicKey: try CurveKeyFile.key(fromTextOrFile: o.rttServerKey),
                                                keyPair: try CurveKeyFile.readKeyPair(o.rttKey))
        let client = try RpcClient(endpoint: o.rttServer, configuration: configuration)
        defer { client.close() }
        var times: [Double] = []
        for k in 0..<(10 + o.rttCalls) {
            let t = Clock.now()
            _ = try DaemonBenchmark.blocking { () throws(RpcError) in
                try await client.call(Methods.Recognizer.match, Earshot_V1_MatchRequest())
            }
            if k >= 10 { times.append((Clock.now() - t) * 1000) }
        }
        print(String(format: "%.3f %.3f", Stats.percentile(times, 50) ?? -1, Stats.percentile(times, 99) ?? -1))
        return 0
    }
}
