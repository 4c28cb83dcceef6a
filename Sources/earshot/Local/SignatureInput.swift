import EarshotCore
import EarshotMedia

/// Inputs that stand for a reference or a query: an `.earsig` file, an audio file, or a video or
/// broadcast file's audio track.
enum SignatureInput {
    /// A signature and, for a video or broadcast file, which of its audio tracks it came from
    /// ("audio track 2 of 2 (ac3, stereo, 48 kHz, fra)"), with any damaged packets skipped.
    struct Loaded {
        let signature: Signature
        let source: String?
    }

    /// Reads `path` as a signature when it has the `.earsig` extension or starts with the
    /// signature magic number, otherwise fingerprints the audio (`track` picks among a video
    /// file's audio tracks). `progress` gets 0…1 while audio is decoded.
    static func load(_ path: String, track: AudioTrackChoice = .containerDefault, progress: ((Double) -> Void)? = nil) throws(CLIFailure) -> Loaded {
        try InputFile.requireFile(path)
        let head = InputFile.prefix(of: path, count: 6)
        if path.lowercased().hasSuffix(".earsig") || head == Array("EARSIG".utf8) {
            try InputFile.requireMagic("EARSIG", of: path, kind: "an Earshot signature")
            let bytes = try InputFile.read(path)
            do { return Loaded(signature: try Signature(dataRepresentation: bytes), source: nil) } catch { throw .badInput(path, error) }
        }
        // A catalog given where a signature belongs deserves a better hint than "unknown audio format".
        if head == Array("EARCAT".utf8) {
            throw .badInput(path, "is an Earshot catalog, not audio or a signature (to combine catalogs use `earshot catalog merge`)")
        }
        let result: MediaFileSignature.Result
        do { result = try MediaFileSignature.signature(ofFile: path, track: track, progress: progress) } catch {
            throw .badInput(path, error)
        }
        var repairs: [String] = []
        if result.damagedPackets > 0 { repairs.append("\(Format.count(result.damagedPackets, "damaged packet")) skipped") }
        if result.silenceFilled > 0 { repairs.append("\(Format.seconds(result.silenceFilled)) of gaps filled with silence") }
        let note = repairs.isEmpty ? "" : "; " + repairs.joined(separator: ", ")
        return Loaded(signature: result.signature, source: result.track.map { $0.description + note })
    }
}
