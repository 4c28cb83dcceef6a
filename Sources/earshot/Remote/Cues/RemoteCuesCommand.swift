import ArgumentParser
import EarshotAuthoring
import EarshotCore
import EarshotSync
import EarshotTransport
import EarshotWire
import Foundation

/// `earshot remote cues`: follow the daemon's cues, show a reference's schedule, or set and
/// clear cues at run time (the controller).
struct RemoteCuesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cues",
        abstract: "Follow the cues the daemon fires as the programme plays; show, set or clear a reference's cues.",
        discussion: """
            Cues are events on a reference's timeline, modelled on HLS interstitials (see \
            `earshot catalog cues --help`). The daemon fires them from what it hears: UPCOMING a \
            few seconds before (time to preload), STARTED when the programme crosses a cue, ENDED, \
            SKIPPED when playback jumps over one, SEEK, PROGRAMME_LOST.

            Examples:
              earshot remote cues                    (follow: events, the current and next cue)
              earshot remote cues follow --json
              earshot remote cues schedule --id episode-1
              earshot remote cues set --catalog show --reference 0 quiz.m3u8
              earshot remote cues clear --catalog show --reference 0

            set and clear need an operator or admin key (the controller).
            """,
        subcommands: [RemoteCuesFollowCommand.self, RemoteCuesScheduleCommand.self, RemoteCuesSetCommand.self,
                      RemoteCuesClearCommand.self],
        defaultSubcommand: RemoteCuesFollowCommand.self
    )
}
