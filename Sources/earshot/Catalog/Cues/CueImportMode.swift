import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSystem
import Foundation

/// `--replace` / `--merge`.
enum CueImportMode: String, EnumerableFlag {
    case replace, merge

    static func help(for value: CueImportMode) -> ArgumentHelp? {
        switch value {
        case .replace: "The file's cues replace the reference's (the default)."
        case .merge: "A cue whose id the reference has replaces that cue; the others are added."
        }
    }
}
