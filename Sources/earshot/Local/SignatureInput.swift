import EarshotAudio
import EarshotCore

/// Inputs that stand for a reference or a query: an `.earsig` file or any audio file.
enum SignatureInput {
    /// Reads `path` as a signature when it has the `.earsig` extension or starts with the
    /// signature magic number, otherwise fingerprints it as audio. `progress` gets 0…1 while
    /// audio is decoded.
    static func load(_ path: String, progress: ((Double) -> Void)? = nil) throws(CLIFailure) -> Signature {
        try InputFile.requireFile(path)
        let head = InputFile.prefix(of: path, count: 6)
        if path.lowercased().hasSuffix(".earsig") || head == Array("EARSIG".utf8) {
            try InputFile.requireMagic("EARSIG", of: path, kind: "an Earshot signature")
            let bytes = try InputFile.read(path)
            do { return try Signature(dataRepresentation: bytes) } catch { throw .badInput(path, error) }
        }
        // A catalog given where a signature belongs deserves a better hint than "unknown audio format".
        if head == Array("EARCAT".utf8) {
            throw .badInput(path, "is an Earshot catalog, not audio or a signature (to combine catalogs use `earshot catalog merge`)")
        }
        do { return try SignatureGenerator.signature(ofFile: path, progress: progress) } catch {
            throw .badInput(path, error)
        }
    }
}
