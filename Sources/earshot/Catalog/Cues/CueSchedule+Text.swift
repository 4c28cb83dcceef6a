import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSystem
import Foundation

extension CueSchedule {
    /// The schedule of cues a catalog already checked (a reference's stored cues).
    static func timeline(_ cues: [Cue], duration: Double) -> CueSchedule {
        (try? CueSchedule(cues, referenceDuration: duration)) ?? .empty(referenceDuration: duration)
    }
}
