// libFuzzer harness: the daemon's configuration file — the TOML subset (`TOMLSubset.parse`) and
// `DaemonConfiguration.load`, which applies and validates every key — as `earshotd` reads it,
// plus `TOMLSubset.parseValue` as it reads a `--section.key=value` override.
import EarshotService
#if canImport(Glibc)
import Glibc
#endif
import FuzzSupport

@_cdecl("fuzz_config_main")
public func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    fuzzMain(argc, argv, fuzzConfig, seeds: seeds)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: data == nil ? 0 : size), as: UTF8.self)
    _ = try? DaemonConfiguration.load(text: text, origin: "fuzz.toml")
    if let line = text.split(separator: "\n").first, let equals = line.firstIndex(of: "=") {
        let value = TOMLSubset.parseValue(String(line[line.index(after: equals)...]))
        _ = try? DaemonConfiguration.load(text: "", origin: "fuzz.toml",
                                          overrides: [(key: String(line[..<equals]), value: value)])
    }
    return 0
}

private func seeds() -> [[UInt8]] {
    var texts = [
        "[audio]\nsource = \"file\"\nfile = \"/tmp/a.wav\"\nloop = true\nbuffer_seconds = 4.5\n",
        "rpc.listen = [\"tcp://127.0.0.1:7400\", \"ipc:///run/earshot.sock\"] # two\n[events]\nheartbeat_ms = 1_000\n",
        "session.catalog = 'quiz'\nsession.follow = false\n[daemon]\nlog_level = \"debug\"\n",
    ]
    if let file = fopen("deploy/earshotd.toml", "rb") {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case let n = fread(&buffer, 1, buffer.count, file), n > 0 { bytes += buffer[0..<n] }
        fclose(file)
        texts.append(String(decoding: bytes, as: UTF8.self))
    }
    return texts.map { Array($0.utf8) }
}
