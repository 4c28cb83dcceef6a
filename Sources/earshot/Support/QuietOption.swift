import ArgumentParser
import EarshotCore

/// `--quiet`: no progress lines or notes on stderr (errors still appear).
struct QuietOption: ParsableArguments {
    @Flag(name: [.short, .long], help: "Print no progress lines or notes on stderr; errors still appear.")
    var quiet = false
}
