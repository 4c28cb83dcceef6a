import ArgumentParser
import EarshotCore
import Foundation

/// `earshot match`: which catalog items a query comes from, and where.
struct MatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "match",
        abstract: "Match an audio or video file, or a signature, against a catalog.",
        discussion: """
            Prints each matched media item (best first) with the match offset (the reference \
            position at the query's start), the predicted current offset (at the query's end), \
            the frequency and time skew in percent and the confidence (0…1). Time-ranged items \
            appear only while the offset is inside one of their ranges.

            A query longer than the catalog's maximum query duration is cut to one window of \
            that length, starting at --start (default 0); a note on stderr says so.

            Exit status: 0 when something matched, 1 when nothing did, 2 on usage errors, \
            3 when the catalog or query file is bad, 4 on internal errors.

            Examples:
              earshot match -c show.earcat clip.wav
              earshot match -c show.earcat recording.flac --start 60 --json
            """
    )

    @Option(name: [.short, .long], help: ArgumentHelp("The catalog to match against.", valueName: "file.earcat"))
    var catalog: String

    @Argument(help: ArgumentHelp("The query: an audio or video file, or an .earsig signature.", valueName: "query"))
    var query: String

    @Option(help: ArgumentHelp("Where in the query the matched window starts, in seconds.", valueName: "seconds"))
    var start: Double?

    @Flag(help: #"Print JSON: {"result": "match" | "noMatch", "items": [...]}."#)
    var json = false

    @OptionGroup var audioTrack: AudioTrackOptions
    @OptionGroup var quietOption: QuietOption

    func validate() throws {
        if let start, !(start.isFinite && start >= 0) { throw ValidationError("--start must be a non-negative number of seconds") }
    }

    func run() throws {
        let mapped = try CatalogFile.map(catalog)
        let loaded = try SignatureInput.load(query, track: audioTrack.choice)
        let signature = loaded.signature
        if let source = loaded.source, !quietOption.quiet, !json { Terminal.error("note: \(query): read \(source)") }
        let window = try Self.window(of: signature, start: start, limit: mapped.maximumQuerySignatureDuration,
                                     query: query, quiet: quietOption.quiet)
        let items: [MatchedMediaItem]
        switch Matcher(catalog: mapped).match(window.signature) {
        case .match(let found): items = found
        case .noMatch: items = []
        case .error(let error): throw CLIFailure.badInput(query, error)
        }
        if json {
            var queryJSON: [String: JSONValue] = ["file": .string(query), "start": .number(window.start),
                                                  "duration": .number(window.signature.duration)]
            if let source = loaded.source { queryJSON["audioTrack"] = .string(source) }
            print(Format.jsonText(.object([
                "result": .string(items.isEmpty ? "noMatch" : "match"),
                "catalog": .string(catalog),
                "query": .object(queryJSON),
                "items": .array(items.map(Self.json)),
            ])))
        } else if items.isEmpty {
            print("No match.")
        } else {
            for (k, item) in items.enumerated() {
                print("\(k + 1). \(Format.name(of: item.mediaItem))  [id \(item.mediaItem.id), reference \(item.referenceIndex)]")
                print("   match offset \(Format.seconds(item.matchOffset)), predicted current offset \(Format.seconds(item.predictedCurrentMatchOffset))")
                print("   frequency skew \(Format.percent(item.frequencySkew)), time skew \(Format.percent(item.timeSkew)), "
                    + "confidence \(String(format: "%.2f", item.confidence))")
            }
        }
        if items.isEmpty { throw ExitCode(ExitStatus.noMatch.rawValue) }
    }

    /// The part of the query to match: all of it, or the window the catalog's limit allows.
    static func window(of signature: Signature, start: Double?, limit: Double, query: String, quiet: Bool)
        throws(CLIFailure) -> (signature: Signature, start: Double)
    {
        let from = start ?? 0
        guard from < signature.duration else {
            throw .usage(query, "--start \(from) is past the end of the query (\(Format.seconds(signature.duration)))")
        }
        guard start != nil || signature.duration > limit else { return (signature, 0) }
        let length = min(limit, signature.duration - from)
        if signature.duration - from > limit, !quiet {
            Terminal.error("note: \(query) is \(Format.seconds(signature.duration)) long; the catalog accepts at most "
                + "\(Format.seconds(limit)), so matching \(Format.seconds(from)) to \(Format.seconds(from + length)) "
                + "(choose with --start)")
        }
        do { return (try signature.slice(from: from, duration: length), from) } catch {
            throw .badInput(query, error.message + " (between \(Format.seconds(from)) and \(Format.seconds(from + length)))")
        }
    }

    static func json(_ item: MatchedMediaItem) -> JSONValue {
        var object = Format.json(item.mediaItem)
        object["matchOffset"] = .number(item.matchOffset)
        object["predictedCurrentMatchOffset"] = .number(item.predictedCurrentMatchOffset)
        object["frequencySkew"] = .number(item.frequencySkew)
        object["timeSkew"] = .number(item.timeSkew)
        object["confidence"] = .number(item.confidence)
        object["referenceIndex"] = .number(Double(item.referenceIndex))
        return .object(object)
    }
}
