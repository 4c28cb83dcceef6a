import Foundation

/// Command-line options, parsed by hand (this target does not depend on ArgumentParser).
struct Options {
    enum Command: String {
        case recognition, scale, live, daemon, hostile, hotload, cues, library, board, all, probe = "_probe", roundTrip = "_rtt"
    }

    var command: Command = .recognition
    var root: String = ""
    var corpus: String = ""
    /// Other music, never in the catalog, that negatives are also cut from (`--negative-corpus`).
    var negativeCorpus: String?
    var results: String?
    var write = true
    var quick = false
    var seed: UInt64 = 1
    var queries: Int?
    var negatives: Int?
    var scaleHours: Double?
    var conditions: [String]?
    /// `hostile`: only these attacks (nil: all).
    var attacks: [String]?
    // _rtt (the Swift client's Match round trip against a running daemon; benchmarks/client-rtt.sh)
    var rttServer = ""
    var rttServerKey = ""
    var rttKey = ""
    var rttCalls = 300
    var synthetic = false
    var decodeCache = true
    var keepWork = false
    var details: String?
    var verbose = false
    /// `board`: the earshotd to run (default: the release build next to earshot-bench).
    var earshotd: String?
    // _probe (a child process that opens a catalog file and matches saved query signatures)
    var probeCatalog = ""
    var probeQueries = ""
    var probeOpens = 20
    /// Postings per key the probe's coarse stage reads instead of the matcher's own limit: a
    /// study compares the two on one binary.
    var probeCoarsePostingLimit: Int?

    var queriesPerCondition: Int { queries ?? (quick ? 30 : 100) }
    var negativesPerCondition: Int { negatives ?? queriesPerCondition }
    var scaleTargetHours: Double { scaleHours ?? (quick ? 20 : 100) }

    var resultsPath: String {
        results ?? (quick ? "\(root)/benchmarks/cache/RESULTS-quick.md" : "\(root)/benchmarks/RESULTS.md")
    }

    var detailsPath: String { details ?? "\(root)/benchmarks/cache/last-run-queries.tsv" }

    static let usage = """
        usage: earshot-bench [recognition|scale|live|daemon|hostile|hotload|cues|library|board|all] [options]

          recognition   recall, false positives, offset/skew error, match time, confidence
                        per degradation condition on the Debian corpus (default)
          scale         a ~100-hour catalog: size, open time, RSS, match time, recall
          live          managed session: prepared result() latency, audio needed without
                        prepare(), predicted-offset drift over 60 s, prerecording cost
                        (about 3 minutes: it plays audio in real time)
          daemon        earshotd as a process: Match round trips, 100 concurrent clients,
                        event latency, 10 000 events/s to 10 subscribers beside a stalled
                        one, CPU and memory while prerecording (about 2 minutes)
          hostile       earshotd (CURVE, 1024 descriptors) under attacks from the LAN while a
                        good client calls Match: connection flood, one key's stream hoarding,
                        metadata bombs, subscription flood, one key's library watches against
                        another owner's reads, the most cues allowed (about 3 minutes)
          hotload       earshotd (CURVE) taking catalogs over the network: a 100 MB
                        push, 100 swaps under 20 clients' Match load, five catalogs vs one,
                        install-to-first-match of a ~100-hour catalog (about 2½ minutes)
          cues          cue firing against the programme's true timeline: 10 min, 60
                        cues, at 1.00 and +4 % with noise, seeks, a lost programme
          library       earshotd's Library service (SQLite, full sync) over CURVE: one item per
                        Add, first pages of a 10 000-item library, 100 clients adding at once
                        with every acknowledged id checked; no corpus needed (about 1 minute)
          board         earshotd on a Raspberry Pi budget: the daemon in cgroup v1 limits (a
                        Pi 3 / Zero 2 W and a Pi 4 share of one core from sysbench, 256 MB):
                        CPU, dropped audio, Match, cue timing, a 10-hour push, the largest
                        catalog within 1 s, the least memory it runs in (about 14 minutes;
                        --quick about 3; needs root, cgroup v1 and sysbench)
          all           all of them except hotload and board (run them on their own)

        options:
          --queries N        positive queries per condition (default 100, --quick 30)
          --negatives N      negative queries per condition (default: same as --queries)
          --seed S           seed for hold-out, query positions and degradations (default 1)
          --quick            fewer queries, 20-hour scale catalog; results go to
                             benchmarks/cache/RESULTS-quick.md unless --results is given
          --scale-hours H    size of the scale catalog in hours (default 100)
          --conditions a,b   only these recognition conditions (keys as printed)
          --attacks a,b      hostile: only these attacks (connections, streams, metadata,
                             subscriptions, library, cues); the idle row always runs
          --corpus DIR       corpus cache (default benchmarks/cache; made by
                             scripts/fetch-benchmark-corpus.sh)
          --negative-corpus DIR  a second corpus cache whose files are all negatives too:
                             other music of the same kind, never in the catalog
          --synthetic        use synthetic music instead of the corpus (no download needed)
          --no-decode-cache  decode the corpus again instead of reading benchmarks/cache/decoded
          --results PATH     where to write the Markdown results (default benchmarks/RESULTS.md)
          --no-write         print only; do not write the results file
          --details PATH     per-query TSV (default benchmarks/cache/last-run-queries.tsv)
          --verbose          print every failed query
          --keep-work        keep the temporary folder (catalog files, query signatures)
          --earshotd PATH    board: run this earshotd (e.g. a static build) instead of the
                             release build next to earshot-bench
        """

    static func parse(_ arguments: [String]) throws -> Options {
        var o = Options()
        var args = arguments.dropFirst()[...]
        func value(_ flag: String) throws -> String {
            guard let v = args.popFirst() else { throw BenchError("\(flag) needs a value") }
            return v
        }
        func number<T: LosslessStringConvertible>(_ flag: String, _ type: T.Type) throws -> T {
            let v = try value(flag)
            guard let n = T(v) else { throw BenchError("\(flag): '\(v)' is not a valid number") }
            return n
        }
        while let arg = args.popFirst() {
            switch arg {
            case "recognition", "scale", "live", "daemon", "hostile", "hotload", "cues", "library", "board", "all", "_probe", "_rtt":
                o.command = Command(rawValue: arg)!
            case "--server": o.rttServer = try value(arg)
            case "--server-key": o.rttServerKey = try value(arg)
            case "--key": o.rttKey = try value(arg)
            case "--calls": o.rttCalls = try number(arg, Int.self)
            case "--queries": o.queries = try number(arg, Int.self)
            case "--negatives": o.negatives = try number(arg, Int.self)
            case "--seed": o.seed = try number(arg, UInt64.self)
            case "--quick": o.quick = true
            case "--scale-hours": o.scaleHours = try number(arg, Double.self)
            case "--conditions": o.conditions = try value(arg).split(separator: ",").map(String.init)
            case "--attacks": o.attacks = try value(arg).split(separator: ",").map(String.init)
            case "--corpus": o.corpus = try value(arg)
            case "--negative-corpus": o.negativeCorpus = try value(arg)
            case "--synthetic": o.synthetic = true
            case "--no-decode-cache": o.decodeCache = false
            case "--keep-work": o.keepWork = true
            case "--results": o.results = try value(arg)
            case "--no-write": o.write = false
            case "--details": o.details = try value(arg)
            case "--verbose", "-v": o.verbose = true
            case "--catalog": o.probeCatalog = try value(arg)
            case "--query-file": o.probeQueries = try value(arg)
            case "--opens": o.probeOpens = try number(arg, Int.self)
            case "--coarse-posting-limit": o.probeCoarsePostingLimit = try number(arg, Int.self)
            case "--earshotd": o.earshotd = try value(arg)
            case "-h", "--help", "help":
                print(usage)
                exit(0)
            default: throw BenchError("unknown argument '\(arg)'\n\n\(usage)")
            }
        }
        if let q = o.queries, q < 1 { throw BenchError("--queries must be at least 1") }
        if let n = o.negatives, n < 0 { throw BenchError("--negatives must not be negative") }
        if let h = o.scaleHours, !(h > 0) { throw BenchError("--scale-hours must be positive") }
        o.root = findRoot()
        if o.corpus.isEmpty { o.corpus = "\(o.root)/benchmarks/cache" }
        return o
    }

    /// The package root: the nearest directory upwards from the working directory (then from the
    /// executable) that holds a Package.swift declaring earshot-bench.
    static func findRoot() -> String {
        let starts = [FileManager.default.currentDirectoryPath,
                      (Machine.executablePath() as NSString).deletingLastPathComponent]
        for start in starts {
            var dir = start
            while dir != "/" && !dir.isEmpty {
                let manifest = "\(dir)/Package.swift"
                if let text = try? String(contentsOfFile: manifest, encoding: .utf8), text.contains("earshot-bench") {
                    return dir
                }
                dir = (dir as NSString).deletingLastPathComponent
            }
        }
        return FileManager.default.currentDirectoryPath
    }
}
