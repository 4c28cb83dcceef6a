import EarshotCore
import EarshotCrypto
import EarshotSystem

/// The one verification every catalog gets before anything uses it — the CLI's `catalog
/// display` and `catalog sign`, the daemon at start, for a file dropped into its folder and for
/// an upload: the full structural check of `MappedCatalog`, the SHA-256 of the whole file, and
/// the author's signature when there is one (required, from a trusted author, when `trust`
/// says so).
public enum CatalogCheck {
    /// Who may sign catalogs a daemon accepts.
    public enum Trust: Sendable {
        /// Any catalog, signed or not (a signature present must still be valid).
        case anyone
        /// Only catalogs signed by one of these authors.
        case authors([AuthorKeyFile.Author])
    }

    /// Why a catalog is refused.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public enum Kind: Sendable {
            /// Not a whole, valid catalog (truncated, corrupt, foreign).
            case invalid
            /// The file's SHA-256 is not the one declared for it.
            case digestMismatch
            /// The signature does not verify.
            case badSignature
            /// Unsigned, or signed by an author the box does not trust.
            case untrusted
            /// A stop was asked for before the end.
            case stopped
        }
        public let kind: Kind
        public let message: String
        public var description: String { message }
        public init(kind: Kind, message: String) {
            self.kind = kind
            self.message = message
        }
    }

    /// A verified catalog, mapped, with what identifies it.
    public struct Verified: Sendable {
        public let catalog: MappedCatalog
        /// SHA-256 of the whole file.
        public let sha256: [UInt8]
        /// SHA-256 of the bytes an author signs (the file without its signature trailer).
        public let signedSHA256: [UInt8]
        public let byteCount: Int
        /// The author's public key (Z85) and the trusted-authors name, when signed.
        public let signer: Signer?

        init(catalog: MappedCatalog, sha256: [UInt8], signedSHA256: [UInt8]? = nil, byteCount: Int, signer: Signer?) {
            self.catalog = catalog
            self.sha256 = sha256
            self.signedSHA256 = signedSHA256 ?? sha256
            self.byteCount = byteCount
            self.signer = signer
        }
    }

    public struct Signer: Sendable, Equatable {
        public let publicKey: String
        /// The name the trusted-authors file gives the key ("" when no file is in force).
        public let name: String
        public var description: String { name.isEmpty ? publicKey : "\(name) (\(publicKey))" }
    }

    /// Maps and verifies the file at `path`. `expectedSHA256`, when given, must be the file's and
    /// is checked before anything else; `knownSHA256` is a digest already computed while the
    /// bytes arrived (skips a pass).
    public static func verify(path: String, trust: Trust, expectedSHA256: [UInt8]? = nil, knownSHA256: [UInt8]? = nil,
                              shouldStop: () -> Bool = { false }) throws(Refusal) -> Verified {
        let file: MappedFile
        do { file = try MappedFile(path: path) } catch { throw Refusal(kind: .invalid, message: error.message) }
        // The declared digest first: bytes damaged in transit are DATA_LOSS (send them again),
        // whatever their damage did to the structure.
        var whole = knownSHA256
        if let expectedSHA256 {
            if whole == nil {
                guard let d = digests(file, bodyLength: file.bytes.count, shouldStop: shouldStop) else {
                    throw Refusal(kind: .stopped, message: "verification stopped (asked to stop)")
                }
                whole = d.whole
            }
            if let whole, whole != expectedSHA256 {
                throw Refusal(kind: .digestMismatch, message: "SHA-256 mismatch: the file's is \(SHA256.hex(whole)), \(SHA256.hex(expectedSHA256)) was declared (damaged in transit, or a different file)")
            }
        }
        let catalog: MappedCatalog
        do {
            catalog = try MappedCatalog(image: MappedCatalogImage(file), verification: .full, shouldStop: shouldStop)
        } catch {
            if shouldStop() { throw Refusal(kind: .stopped, message: "verification stopped (asked to stop)") }
            throw Refusal(kind: .invalid, message: error.message)
        }
        // One pass gives both digests: the signed body's and the whole file's (only the body is
        // read when the whole file's digest is known already).
        var bodyDigest: [UInt8]?
        let digest: [UInt8]
        if let whole, catalog.signature == nil {
            digest = whole
        } else {
            guard let d = digests(file, bodyLength: catalog.signedByteCount, wholeKnown: whole != nil, shouldStop: shouldStop) else {
                throw Refusal(kind: .stopped, message: "verification stopped (asked to stop)")
            }
            digest = whole ?? d.whole
            bodyDigest = d.body
        }
        var signer: Signer?
        if let signature = catalog.signature, let bodyDigest {
            guard Ed25519.isValid(signature: signature.signature, of: CatalogSignature.message(bodyDigest: bodyDigest),
                                  by: signature.publicKey)
            else {
                throw Refusal(kind: .badSignature, message: "the author signature does not verify: the catalog was changed after it was signed, or the signature is not the key's")
            }
            signer = Signer(publicKey: Z85.encode(signature.publicKey), name: "")
        }
        if case .authors(let authors) = trust {
            guard let s = catalog.signature else {
                throw Refusal(kind: .untrusted, message: "unsigned: this box accepts only catalogs signed by a trusted author (sign with `earshot catalog sign`)")
            }
            guard let author = authors.first(where: { $0.publicKey == s.publicKey }) else {
                throw Refusal(kind: .untrusted, message: "signed by \(Z85.encode(s.publicKey)), which is not in this box's trusted authors file")
            }
            signer = Signer(publicKey: Z85.encode(s.publicKey), name: author.name)
        }
        return Verified(catalog: catalog, sha256: digest, signedSHA256: bodyDigest ?? digest, byteCount: catalog.byteCount, signer: signer)
    }

    /// SHA-256 of the file's first `bodyLength` bytes and of all of it, read a megabyte at a
    /// time through the mapping and given back as it goes (nil if `shouldStop` said so). With
    /// `wholeKnown`, reading stops after the body (`whole` is then the body's digest).
    static func digests(_ file: MappedFile, bodyLength: Int, wholeKnown: Bool = false,
                        shouldStop: () -> Bool) -> (body: [UInt8], whole: [UInt8])? {
        let bytes = file.bytes
        let length = wholeKnown ? min(bodyLength, bytes.count) : bytes.count
        let chunk = 1 << 20
        var hash = SHA256()
        var body: [UInt8]?
        var start = 0
        while start < length {
            if shouldStop() { return nil }
            let end = min(length, start + chunk, start < bodyLength ? bodyLength : length)
            file.willRead(start..<end)
            hash.update(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
            file.doneReading(start..<end)
            start = end
            if start == bodyLength { body = hash.finish() }
        }
        let whole = hash.finish()
        return (body ?? whole, whole)
    }
}
