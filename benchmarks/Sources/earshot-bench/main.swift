import EarshotCore
import Foundation
import EarshotSystem

// earshot-bench: Earshot's benchmarks (recognition, scale, live, daemon, hostile LAN, hot-load, board,
// cues, library), written to benchmarks/RESULTS.md. See benchmarks/README.md.

func benchMain() -> Int32 {
    let options: Options
    do {
        options = try Options.parse(CommandLine.arguments)
    } catch {
        FileHandle.standardError.write(Data("earshot-bench: \(error)\n".utf8))
        return 2
    }
    do {
        if options.command == .probe { return try Probe.run(options) }
        if options.command == .roundTrip { return try ClientRoundTrip.run(options) }
        try runBenchmarks(options)
        return 0
    } catch {
        FileHandle.standardError.write(Data("earshot-bench: \(error)\n".utf8))
        return 1
    }
}

func runBenchmarks(_ options: Options) throws {
    let started = Date()
    let t0 = Clock.now()
    let work = NSTemporaryDirectory() + "earshot-bench-\(getpid())"
    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
    defer {
        if options.keepWork { say("work folder kept: \(work)") } else { try? FileManager.default.removeItem(atPath: work) }
    }
    try? FileManager.default.createDirectory(atPath: "\(options.root)/benchmarks/cache", withIntermediateDirectories: true)

    // board needs root, cgroup v1 and sysbench: refuse before the corpus is loaded.
    if options.command == .board { try BoardBenchmark.preflight(options) }
    var env = RunEnvironment(options: options, started: started)
    say("earshot-bench \(options.command.rawValue)")
    for line in env.conditionLines() { say("  " + line) }

    // Every benchmark but the library's works on the corpus and its catalog.
    var prepared: Prepared!
    if options.command != .library {
        let corpus = options.synthetic ? Corpus.synthetic() : try Corpus.load(directory: options.corpus, useCache: options.decodeCache)
        env.corpus = corpus
        say(String(format: "corpus: %d files, %@ (%@), decoded to mono 16 kHz in %.1f s (%d files from the decode cache)",
                   corpus.files.count, Fmt.duration(corpus.totalDuration) as NSString, corpus.description as NSString,
                   corpus.decodeSeconds, corpus.filesFromCache))
        for s in corpus.skipped { say("  skipped \(s)") }

        let others = try options.negativeCorpus.map { try Corpus.load(directory: $0, useCache: options.decodeCache) }
        if let others {
            say(String(format: "negative corpus: %d files, %@ (%@)", others.files.count, Fmt.duration(others.totalDuration) as NSString,
                       others.description as NSString))
            env.negativeCorpus = others
        }
        prepared = try Preparation.run(options: options, corpus: corpus, negativeCorpus: others, workDirectory: work)
        env.prepared = prepared
    }

    var recognition: [ConditionReport]?
    if options.command == .recognition || options.command == .all {
        if !options.quick { env.catalogCreate = try CatalogCreateBench.run(corpus: prepared.corpus, workDirectory: work) }
        recognition = try RecognitionBenchmark.run(options: options, prepared: prepared, workDirectory: work)
        // Peak RSS of this process so far (decoded corpus + catalog + queries).
        env.recognitionPeakRSS = ProcStatus.megabytes("VmHWM")
    }
    var scale: ScaleReport?
    if options.command == .scale || options.command == .all {
        scale = try ScaleBenchmark.run(options: options, prepared: prepared, workDirectory: work)
    }
    var live: LiveReport?
    if options.command == .live || options.command == .all {
        live = try LiveBenchmark.run(options: options, prepared: prepared, workDirectory: work)
    }
    var daemon: DaemonReport?
    if options.command == .daemon || options.command == .all {
        daemon = try DaemonBenchmark.run(options: options, prepared: prepared, workDirectory: work)
    }
    var hostile: HostileReport?
    if options.command == .hostile || options.command == .all {
        hostile = try HostileBenchmark.run(options: options, prepared: prepared, workDirectory: work)
    }
    var hotload: HotloadReport?
    if options.command == .hotload {  // not part of `all`: it writes and syncs about 1 GB
        hotload = try HotloadBenchmark.run(options: options, prepared: prepared, workDirectory: work)
    }
    var board: BoardReport?
    if options.command == .board {  // not part of `all`: it needs root and cgroup v1, and takes ~14 minutes
        board = try BoardBenchmark.run(options: options, prepared: prepared, workDirectory: work)
    }
    var cues: CueReport?
    if options.command == .cues || options.command == .all {
        cues = try CueBenchmark.run(options: options, prepared: prepared, workDirectory: work)
    }
    var library: LibraryReport?
    if options.command == .library || options.command == .all {
        library = try LibraryBenchmark.run(options: options, workDirectory: work)
    }
    env.totalSeconds = Clock.now() - t0
    let markdown = Report.render(env: env, recognition: recognition, scale: scale, live: live, daemon: daemon, hostile: hostile,
                                 hotload: hotload, board: board, cues: cues, library: library,
                                 previous: try? String(contentsOfFile: options.resultsPath, encoding: .utf8))
    say()
    say(markdown)
    if options.write {
        try FileManager.default.createDirectory(atPath: (options.resultsPath as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try AtomicFile.write(Array(markdown.utf8), to: options.resultsPath)
        say("results written to \(options.resultsPath)")
    }
    say(String(format: "total time %.1f s", env.totalSeconds))
}

exit(benchMain())
