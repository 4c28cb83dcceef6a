import EarshotTestSupport
import Foundation
import Testing

/// `--server` as a box's name, where no LAN is involved (the LAN itself:
/// scripts/discovery-check.sh, between two network namespaces with real avahi-daemons).
struct CLIDiscoveryTests {
    /// Text that is neither an endpoint nor a name is refused at once, as before names existed,
    /// rather than looked for on the LAN.
    @Test(arguments: ["tv-box:7400", "http://tv-box:7400", "boxes/tv", ""])
    func aServerThatIsNeitherAnEndpointNorANameIsAUsageError(server: String) throws {
        let ws = try TemporaryDirectory()
        let run = try ws.earshot("remote", "state", "--server", server)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains("--server must look like tcp://host:port (or ipc://path) or name a box on the LAN"), "\(run.stderr)")
    }

    /// What a box found by name announced reaches the command through options no person gives:
    /// they stay out of the help.
    @Test func theAnnouncedEndpointsAreNotInTheHelp() throws {
        let ws = try TemporaryDirectory()
        let run = try ws.earshot("remote", "watch", "--help")
        #expect(run.status == 0)
        #expect(run.stdout.contains("--server <tcp://host:port|NAME>"), "\(run.stdout)")
        #expect(!run.stdout.contains("announced-"), "\(run.stdout)")
    }
}
