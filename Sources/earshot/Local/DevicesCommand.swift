import ArgumentParser
import EarshotAudio
import EarshotCore
import Foundation

/// `earshot devices`: the ALSA capture devices `listen --device` can open.
struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List the ALSA capture devices to listen to.",
        discussion: """
            Prints each PCM that can capture, in ALSA's order: its name (what `earshot listen \
            --device` takes), then ALSA's description indented below it. The list holds the \
            PCMs of every sound card and those of the ALSA configuration that have a hint; \
            any other PCM name (a plug: or hw: address, a PCM of an asoundrc) works too. \
            --json prints {"devices": [{"name": ..., "description": ...}]}.

            Example:
              earshot devices
              earshot listen -c show.earcat --device plughw:CARD=Device,DEV=0
            """
    )

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func run() throws {
        let devices: [CaptureDevice]
        do { devices = try CaptureDevices.list() } catch {
            throw CLIFailure(error.message, status: .internalFailure)
        }
        if json {
            print(Format.jsonText(.object([
                "devices": .array(devices.map { .object(["name": .string($0.name), "description": .string($0.description)]) }),
            ])))
            return
        }
        if devices.isEmpty {
            print("No capture devices found.")
            return
        }
        for device in devices {
            print(device.name)
            for line in device.description.split(whereSeparator: \.isNewline) {
                print("    " + line.trimmingCharacters(in: .whitespaces))
            }
        }
    }
}
