import ArgumentParser
import EarshotCore

/// `--min-query` / `--max-query`: the query durations a catalog accepts.
struct QueryLimitOptions: ParsableArguments {
    @Option(name: .customLong("min-query"), help: ArgumentHelp(
        "Shortest query the catalog accepts, in seconds (default for new catalogs: 1).", valueName: "seconds"))
    var minQuery: Double?

    @Option(name: .customLong("max-query"), help: ArgumentHelp(
        "Longest query the catalog accepts, in seconds; also the live listening window (default for new catalogs: 12).",
        valueName: "seconds"))
    var maxQuery: Double?

    func validate() throws {
        for (name, value) in [("--min-query", minQuery), ("--max-query", maxQuery)] {
            if let value, !(value.isFinite && value > 0) { throw ValidationError("\(name) must be a positive number of seconds") }
        }
        if let lo = minQuery, let hi = maxQuery, lo > hi {
            throw ValidationError("--min-query (\(lo)) must not exceed --max-query (\(hi))")
        }
    }

    /// Applies the given limits to `catalog`; refuses a combination that is not a valid range.
    func apply(to catalog: inout CustomCatalog) throws {
        if let minQuery { catalog.minimumQuerySignatureDuration = minQuery }
        if let maxQuery { catalog.maximumQuerySignatureDuration = maxQuery }
        if catalog.minimumQuerySignatureDuration > catalog.maximumQuerySignatureDuration {
            throw ValidationError(
                "query limits would become \(catalog.minimumQuerySignatureDuration)–\(catalog.maximumQuerySignatureDuration) s; "
                    + "the minimum must not exceed the maximum")
        }
    }

    var isEmpty: Bool { minQuery == nil && maxQuery == nil }
}
