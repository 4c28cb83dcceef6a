import EarshotCore
import EarshotTestSupport
import Foundation
import Testing

/// Files the listen tests share, made once: a catalog of two synthetic episodes built with the
/// CLI, and excerpts of episode 2 from 20 s: 10 s and 3 s as WAV for `--source file:`, and the
/// 10 s as raw 16-bit stereo at 48 kHz for ALSA's file PCM.
private let listenFixture = Result { () throws -> TemporaryDirectory in
    let ws = try TemporaryDirectory(removedAtExit: true)
    let episode2 = AudioFixtures.music(seed: 42, duration: 40)
    try AudioFixtures.writeWAV("ep1.wav", seed: 41, duration: 40, in: ws)
    try ws.write("ep2.wav", WAVFile.bytes(episode2))
    try ws.write("items.csv", text: "signature,id,title\nep1.wav,ep1,Episode 1\nep2.wav,ep2,Episode 2\n")
    let create = try ws.earshot("catalog", "create", "-o", "show.earcat", "ep1.wav", "ep2.wav", "--media-items", "items.csv", "-q")
    guard create.status == 0 else { throw ListenFixtureFailure(run: create) }
    try AudioFixtures.writeExcerpt("clip.wav", of: episode2, from: 20, length: 10, in: ws)
    try AudioFixtures.writeExcerpt("short.wav", of: episode2, from: 20, length: 3, in: ws)
    _ = try RawPCM.writeS16(RawPCM.int16(stereo48k(episode2, from: 20, seconds: 10)), to: ws.path("clip-48k-stereo.s16"))
    return ws
}

private struct ListenFixtureFailure: Error, CustomStringConvertible {
    var run: CLIHarness.Run
    var description: String { "catalog create failed with \(run.status): \(run.stderr)" }
}

/// `seconds` of 16 kHz mono `samples` from `from`, as interleaved stereo at 48 kHz (linear
/// interpolation), a format a USB microphone might deliver.
private func stereo48k(_ samples: [Float], from: Double, seconds: Double) -> [Float] {
    let n = Int(seconds * 48_000)
    var out = [Float](repeating: 0, count: 2 * n)
    for i in 0..<n {
        let t = from * 16_000 + Double(i) / 3
        let k = Int(t), f = Float(t - Double(k))
        let a = samples[min(k, samples.count - 1)], b = samples[min(k + 1, samples.count - 1)]
        out[2 * i] = a + (b - a) * f
        out[2 * i + 1] = out[2 * i]
    }
    return out
}

/// The ALSA configuration with the file PCM, for the child process.
private var alsaEnvironment: [String: String] { ["ALSA_CONFIG_PATH": AlsaTestEnvironment.configurationPath] }

/// The seconds after "at " in a text result line ("match: … at 23.45 s, …").
private func offset(in line: String) -> Double? {
    guard let at = line.range(of: "] at ") else { return nil }
    return Double(line[at.upperBound...].prefix { $0 != " " })
}

/// The seconds of the closing summary, "listened 6.01 s (…): …".
private func listened(_ stderr: String) -> Double? {
    guard let line = stderr.split(separator: "\n").last(where: { $0.hasPrefix("listened ") }) else { return nil }
    return Double(line.dropFirst("listened ".count).prefix { $0 != " " })
}

/// The seconds of audio in the summary line ("…: heard 5.98 s of audio; …").
private func heard(_ stderr: String) -> Double? {
    guard let line = stderr.split(separator: "\n").last(where: { $0.hasPrefix("listened ") }),
          let range = line.range(of: ": heard ") else { return nil }
    return Double(line[range.upperBound...].prefix { $0 != " " })
}

private func lines(_ text: String, starting prefix: String) -> [String] {
    text.split(separator: "\n").map(String.init).filter { $0.hasPrefix(prefix) }
}

/// `earshot listen` and `earshot devices` as a user runs them: the real executable, a file
/// played in real time, and ALSA's real code path through a file PCM.
@Suite("earshot listen and devices")
struct CLIListenTests {
    /// Off a terminal: the first match as a line, then repeats as lines, offsets advancing.
    @Test func fileSourcePrintsMatchesLive() throws {
        let ws = try listenFixture.get()
        let run = try ws.earshot(["listen", "-c", "show.earcat", "--source", "file:clip.wav", "--duration", "6"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.errorLines.isEmpty, "\(run.stderr)")
        let matches = lines(run.stdout, starting: "match: ")
        #expect(matches.count == 1, "\(run.stdout)")
        let first = try #require(matches.first)
        #expect(first.hasPrefix("match: Episode 2 [id ep2, reference 1] at "), "\(first)")
        #expect(first.contains("frequency skew") && first.contains("confidence"))
        // The clip starts 20 s into episode 2, and at most 6 s of it were heard.
        let start = try #require(offset(in: first))
        #expect(start > 20.5 && start < 26.5, "\(first)")
        let repeats = lines(run.stdout, starting: "repeat: ")
        #expect(!repeats.isEmpty, "\(run.stdout)")
        let offsets = repeats.compactMap(offset(in:))
        #expect(offsets.count == repeats.count && offsets.allSatisfy { $0 < 26.5 })
        #expect(zip([start] + offsets, offsets).allSatisfy { $0 < $1 }, "offsets do not advance: \(run.stdout)")
        #expect(!run.stdout.contains("\r") && !run.stdout.contains("Episode 1"))
        let seconds = try #require(listened(run.stderr), "\(run.stderr)")
        #expect(seconds >= 6 && seconds < 8, "\(run.stderr)")
        #expect(run.stderr.contains("(--duration)") && run.stderr.contains("; 1 match,"), "\(run.stderr)")
        // Paced audio: what was heard is about what the clock says (one read period behind at most).
        let audio = try #require(heard(run.stderr), "\(run.stderr)")
        #expect(audio > seconds - 1 && audio <= seconds + 0.05, "\(run.stderr)")
    }

    @Test func fileSourceJSONIsOneObjectPerLine() throws {
        let ws = try listenFixture.get()
        let run = try ws.earshot(["listen", "-c", "show.earcat", "--source", "file:clip.wav", "--duration", "6", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let objects = try run.stdout.split(separator: "\n").map { try JSONValue.parse(String($0)) }
        #expect(objects.count >= 2)
        for object in objects {
            #expect(["match", "noMatch", "error"].contains(object["result"]?.string ?? ""), "\(object)")
            #expect(object["repeat"]?.bool != nil && object["streamTime"]?.double != nil && object["items"]?.array != nil)
        }
        let first = try #require(objects.first { $0["result"]?.string == "match" })
        #expect(first["repeat"]?.bool == false)
        let item = try #require(first["items"]?[0])
        #expect(item["id"]?.string == "ep2" && item["title"]?.string == "Episode 2")
        #expect(item["referenceIndex"]?.double == 1)
        let matchOffset = try #require(item["matchOffset"]?.double)
        #expect(abs(matchOffset - 20) < 0.25, "match offset \(matchOffset)")
        // The predicted offset is where the reference is at the end of the window heard.
        let predicted = try #require(item["predictedCurrentMatchOffset"]?.double)
        let streamTime = try #require(first["streamTime"]?.double)
        #expect(abs(predicted - streamTime - 20) < 0.25, "predicted \(predicted) at stream time \(streamTime)")
        #expect((item["confidence"]?.double ?? 0) > 0.3)
        #expect(abs(item["frequencySkew"]?.double ?? 1) < 0.01)
        #expect(objects.contains { $0["repeat"]?.bool == true && $0["items"]?[0]?["id"]?.string == "ep2" })
    }

    /// Without --loop, listening ends with the file, and the end is not reported as a problem.
    @Test func fileSourceWithoutLoopEndsWithTheFile() throws {
        let ws = try listenFixture.get()
        let run = try ws.earshot(["listen", "-c", "show.earcat", "--source", "file:short.wav"], timeout: 30)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.errorLines.isEmpty, "\(run.stderr)")
        #expect(run.stderr.contains("(end of the file)"), "\(run.stderr)")
        #expect(run.stderr.contains("heard 2.") || run.stderr.contains("heard 3."), "\(run.stderr)")
    }

    @Test(arguments: [SIGINT, SIGTERM])
    func signalEndsListeningWithASummary(_ number: Int32) throws {
        let ws = try listenFixture.get()
        let run = try ws.earshot(["listen", "-c", "show.earcat", "--source", "file:clip.wav", "--loop"],
                                 signal: (number, after: 2), timeout: 30)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.errorLines.isEmpty, "\(run.stderr)")
        let summary = try #require(run.stderr.split(separator: "\n").last.map(String.init))
        let seconds = try #require(listened(summary), "\(run.stderr)")
        #expect(seconds > 1 && seconds < 5, "\(summary)")
        #expect(summary.contains(number == SIGINT ? "(interrupted)" : "(terminated)"), "\(summary)")
    }

    /// A played file that is deleted is a capture problem, as an unplugged device is: reported
    /// once, retried, and played again from its start once it is back.
    @Test func fileSourceThatGoesAwayIsRetriedUntilItIsBack() throws {
        let ws = try listenFixture.get()
        let name = "vanishing-\(UUID().uuidString).wav"
        try ws.copy("clip.wav", from: ws, as: name)
        let programme = Data(try ws.bytes("clip.wav"))
        let (file, staged) = (ws.path(name), ws.path(name + ".staged"))
        // Gone from 4 s to 6 s of a 15 s run: time for a retry to find it back and match again.
        let faults = DispatchGroup()
        faults.enter()
        DispatchQueue.global().asyncAfter(deadline: .now() + 4) { unlink(file) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 6) {
            try? programme.write(to: URL(fileURLWithPath: staged))
            rename(staged, file)
            faults.leave()
        }
        let run = try ws.earshot(["listen", "-c", "show.earcat", "--source", "file:\(name)", "--loop", "--duration", "15", "--json"])
        faults.wait()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.errorLines == ["earshot: \(name): no such file (the file does not exist) (retrying)"], "\(run.stderr)")
        #expect(run.stderr.contains("note: \(name): capturing again\n"), "\(run.stderr)")
        let objects = try run.stdout.split(separator: "\n").map { try JSONValue.parse(String($0)) }
        let failure = try #require(objects.firstIndex { $0["result"]?.string == "error" }, "\(run.stdout)")
        #expect(objects[failure]["error"]?.string == "audio capture failed: \(name): no such file (the file does not exist)")
        #expect(objects[(failure + 1)...].contains { $0["result"]?.string == "match" && $0["items"]?[0]?["id"]?.string == "ep2" },
                "no match once the file was back: \(run.stdout)")
    }

    /// Real ALSA: the file PCM delivers programme audio as 48 kHz stereo (as asked with --rate
    /// and --channels); it is not paced, so the ring holds all of it.
    @Test func alsaDeviceMatchesThroughTheFilePCM() throws {
        let ws = try listenFixture.get()
        let device = AlsaTestEnvironment.device(reading: ws.path("clip-48k-stereo.s16"))
        let run = try ws.earshot(["listen", "-c", "show.earcat", "--device", device, "--rate", "48000", "--channels", "2",
                                  "--buffer-seconds", "30", "--no-realtime", "--duration", "3", "--json"],
                                 environment: alsaEnvironment)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.errorLines.isEmpty, "\(run.stderr)")
        #expect(run.stderr.contains("note: capturing from \(device): S16_LE 48000 Hz 2 ch"), "\(run.stderr)")
        #expect(run.stderr.contains("note: capture thread: normal scheduling (realtime not requested)"))
        let objects = try run.stdout.split(separator: "\n").map { try JSONValue.parse(String($0)) }
        let first = try #require(objects.first { $0["result"]?.string == "match" }, "\(run.stdout)")
        #expect(first["repeat"]?.bool == false)
        #expect(first["items"]?[0]?["id"]?.string == "ep2")
        let matchOffset = try #require(first["items"]?[0]?["matchOffset"]?.double)
        #expect(abs(matchOffset - 20) < 0.25, "match offset \(matchOffset)")
        #expect(abs(first["items"]?[0]?["frequencySkew"]?.double ?? 1) < 0.005)
    }

    /// A device that does not exist: reported while retrying, then exit 3 naming it and why.
    @Test func missingDeviceExitsWithThree() throws {
        let ws = try listenFixture.get()
        let run = try ws.earshot(["listen", "-c", "show.earcat", "--device", "earshot_no_such_pcm", "--duration", "2"],
                                 environment: alsaEnvironment)
        #expect(run.status == 3, "\(run.stderr)")
        let prefix = #"earshot: capture device "earshot_no_such_pcm": cannot open for capture: no such device"#
        let last = try #require(run.errorLines.last)
        #expect(last.hasPrefix(prefix) && !last.hasSuffix("(retrying)"), "\(run.stderr)")
        #expect(run.errorLines.first?.hasPrefix(prefix) == true && run.errorLines.first?.hasSuffix("(retrying)") == true,
                "\(run.stderr)")
        #expect(run.stderr.contains("heard 0.00 s of audio"))
        #expect(run.stdout.isEmpty, "\(run.stdout)")
    }

    @Test func devicesListsTheCapturePCMs() throws {
        let ws = try listenFixture.get()
        let text = try ws.earshot(["devices"], environment: alsaEnvironment)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("earshot_test\n    Earshot test: raw samples from a file\n"), "\(text.stdout)")
        let json = try ws.earshot(["devices", "--json"], environment: alsaEnvironment)
        #expect(json.status == 0, "\(json.stderr)")
        let devices = try #require(try JSONValue.parse(json.stdout)["devices"]?.array)
        #expect(devices.contains { $0["name"]?.string == "earshot_test" && $0["description"]?.string?.hasPrefix("Earshot test") == true })

        // A configuration without capture PCMs.
        try ws.write("empty.conf", text: "pcm.quiet { type null }\n")
        let none = try ws.earshot(["devices"], environment: ["ALSA_CONFIG_PATH": ws.path("empty.conf")])
        #expect(none.status == 0 && none.stdout == "No capture devices found.\n", "\(none.stdout)")
    }

    @Test(arguments: [
        (["--device", "default", "--source", "file:clip.wav"], 2, "earshot: give either --device or --source, not both"),
        (["--source", "http://example.com/x.wav"], 2, #"earshot: --source takes file:<path>"#),
        (["--source", "file:"], 2, #"earshot: --source takes file:<path>"#),
        (["--loop"], 2, "earshot: --loop applies to --source"),
        (["--source", "file:clip.wav", "--rate", "48000"], 2, "earshot: --rate and --channels apply to --device"),
        (["--channels", "3"], 2, "earshot: --channels must be 1 or 2"),
        (["--duration", "0"], 2, "earshot: --duration must be a positive number"),
        (["--source", "file:missing.wav"], 3, "earshot: missing.wav: no such file"),
        (["--source", "file:items.csv"], 3, "earshot: items.csv: "),
        (["-c", "nowhere.earcat"], 3, "earshot: nowhere.earcat: no such file"),
    ])
    func listenUsageErrors(_ arguments: [String], _ status: Int32, _ message: String) throws {
        let ws = try listenFixture.get()
        let catalog = arguments.contains("-c") ? [] : ["-c", "show.earcat"]
        let run = try ws.earshot(["listen"] + catalog + arguments + ["--duration", "5"].filter { _ in !arguments.contains("--duration") },
                                 timeout: 10)
        #expect(run.status == status, "\(run.stderr)")
        #expect(run.stderr.hasPrefix(message), "\(run.stderr)")
        #expect(run.stdout.isEmpty)
    }

    @Test func helpTeachesListenAndDevices() throws {
        let ws = try TemporaryDirectory()
        let help = try ws.earshot("listen", "--help")
        #expect(help.status == 0)
        // Lines are wrapped to the terminal's width: compare with single spaces.
        let words = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for text in ["earshot listen -c show.earcat", "--device plughw:1,0", "--source file:episode.wav --loop",
                     "no ALSA file PCM", "Exit status", "3 when the catalog or file is bad", "--duration", "--json"] {
            #expect(words.contains(text), "listen --help lacks \(text)")
        }
        #expect(!help.stdout.contains("--buffer-seconds"))
        let devices = try ws.earshot("devices", "--help")
        #expect(devices.status == 0 && devices.stdout.contains("Example") && devices.stdout.contains("--json"))
    }
}
