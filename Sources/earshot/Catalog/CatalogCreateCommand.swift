import ArgumentParser
import EarshotCore

/// `earshot catalog create`: inputs (+ CSV) to a new catalog.
struct CatalogCreateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create a catalog from audio, video or signature files and a media-items CSV.",
        discussion: """
            Each input (an audio file, a video or broadcast file, or an .earsig) becomes one \
            reference; a video file gives the audio track --audio-track or --audio-language \
            picks, by default the file's default track. Without a CSV, each \
            reference gets one media item whose id and title are the file name without its \
            extension. With --media-items, every CSV row is one media item of the input its \
            `signature` cell names; several rows may name the same input (e.g. one row per \
            segment, with time ranges), an input that no row names gets the default item, and a \
            row that names no input is an error.

            Media-items CSV (RFC 4180: comma-separated, "double quotes" around fields \
            holding commas, quotes or line breaks, "" for a quote inside; UTF-8, optional \
            BOM; CRLF or LF). The first row is the header; names are case-insensitive; an \
            empty cell means "not set". Columns:

              signature (or file)
                  the input the item belongs to, by file name (ep1.wav); may be
                  left out when there is a single input
              id  the item's id; empty: the input's file name without extension
                  (with -1, -2, ... when the input has several rows)
              title, subtitle, artist, isrc
                  text
              artworkURL, videoURL, webURL
                  absolute URLs
              genres
                  ;-separated list: Drama;Comedy
              explicitContent
                  true/false, yes/no or 1/0
              creationDate
                  ISO 8601 date or date-time: 2024-05-01, 2024-05-01T20:15:00Z
              timeRanges
                  ;-separated half-open ranges of reference seconds: start-end
                  for non-negative numbers (14-21;31-40.5), or start..<end
              frequencySkewRanges
                  ;-separated ranges of pitch skew (0.01-0.02 is +1 to +2 %);
                  negative numbers need the ..< form: -0.02..<-0.01
              custom.<key> or x-<key>
                  custom property <key> (an x-<key> column keeps its x-); the
                  cell is a JSON value: 42, true, [1,2], {"answer":"B"}, or
                  text in JSON quotes, written \"\"\"text\"\"\" in the CSV
              reference
                  only for `catalog update`: index of an existing reference

            Any other column is an error, so a misspelt header never drops data.

            Example items.csv:
              signature,id,title,timeRanges,custom.question
              quiz.wav,q1,Question 1,14-21,"{""text"":""2+2?"",""answer"":4}"
              quiz.wav,q2,Question 2,31-40.5,"{""text"":""3*3?"",""answer"":9}"
              intro.earsig,,Intro,,

            Example:
              earshot catalog create -o quiz.earcat quiz.wav intro.earsig \\
                  --media-items items.csv
            """
    )

    @Option(name: [.short, .long], help: ArgumentHelp("The catalog file to write.", valueName: "file.earcat"))
    var output: String

    @Argument(help: ArgumentHelp("Audio or video files, or .earsig signatures, one reference each.", valueName: "inputs"))
    var inputs: [String] = []

    @Option(name: .customLong("media-items"), help: ArgumentHelp("Media-items CSV (columns above).", valueName: "items.csv"))
    var mediaItems: String?

    @OptionGroup var limits: QueryLimitOptions
    @OptionGroup var audioTrack: AudioTrackOptions
    @OptionGroup var quietOption: QuietOption

    func validate() throws {
        guard !inputs.isEmpty else { throw ValidationError("give at least one input file") }
    }

    func run() throws {
        let rows = try mediaItems.map(MediaItemsFile.read) ?? []
        let assignment = try MediaItemsFile.assign(rows, from: mediaItems, inputs: inputs)
        try ReferenceInputs.requireAll(inputs)
        let signatures = try ReferenceInputs.signatures(of: inputs, track: audioTrack.choice, quiet: quietOption.quiet)
        var catalog = CustomCatalog()
        catalog.minimumQuerySignatureDuration = 1
        catalog.maximumQuerySignatureDuration = 12
        try limits.apply(to: &catalog)
        try ReferenceInputs.add(signatures, items: assignment.inputItems, to: &catalog, catalogPath: output)
        try CatalogFile.write(catalog, to: output)
        print(CatalogSummary.line(catalog, path: output))
    }
}
