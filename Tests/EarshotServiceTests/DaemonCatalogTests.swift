import EarshotCore
import EarshotCrypto
import EarshotStore
import EarshotSync
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

/// Catalog uploads as a client makes them, for the tests of catalogs on a daemon.
enum CatalogUpload {
    static let chunk = 2048

    /// A second catalog, different from the fixture's: piece 2 only, under other ids.
    static let otherCatalog: [UInt8] = {
        var c = CustomCatalog()
        try! c.addReferenceSignature(try! SyntheticSignature.of(DaemonFixture.shared.audio[2]),
                                     representing: [MediaItem(id: "other", title: "Other")])
        return try! c.dataRepresentation()
    }()

    /// The catalog with the programme's piece (piece 1), under its own ids.
    static let programmeCatalog: [UInt8] = {
        var c = CustomCatalog()
        try! c.addReferenceSignature(try! SyntheticSignature.of(DaemonFixture.shared.audio[1]),
                                     representing: [MediaItem(id: "programme", title: "Programme")])
        return try! c.dataRepresentation()
    }()

    static func begin(_ client: RpcClient, _ name: String, _ bytes: [UInt8], sha256: [UInt8]? = nil, enable: Bool = true,
                      signer: [UInt8]? = nil) async throws(RpcError) -> Earshot_V1_UploadStatus {
        var r = Earshot_V1_BeginUploadRequest()
        r.name = name
        r.size = UInt64(bytes.count)
        r.sha256 = Data(sha256 ?? bytes.withUnsafeBytes { SHA256.hash($0) })
        r.enable = enable
        if let signer { r.signerKey = Data(signer) }
        return try await client.call(Methods.Catalogs.beginUpload, r)
    }

    static func send(_ client: RpcClient, _ id: String, _ bytes: [UInt8], at offset: Int, count: Int) async throws(RpcError) -> Earshot_V1_UploadStatus {
        var r = Earshot_V1_UploadChunkRequest()
        r.uploadID = id
        r.offset = UInt64(offset)
        r.data = Data(bytes[offset..<min(bytes.count, offset + count)])
        return try await client.call(Methods.Catalogs.uploadChunk, r)
    }

    static func commit(_ client: RpcClient, _ id: String) async throws(RpcError) -> Earshot_V1_CommitUploadResponse {
        var r = Earshot_V1_UploadRequest()
        r.uploadID = id
        return try await client.call(Methods.Catalogs.commitUpload, r)
    }

    /// A whole push: begin (or resume), chunks from the held offset, commit.
    static func push(_ client: RpcClient, _ name: String, _ bytes: [UInt8], enable: Bool = true,
                     signer: [UInt8]? = nil) async throws(RpcError) -> Earshot_V1_CommitUploadResponse {
        let status = try await begin(client, name, bytes, enable: enable, signer: signer)
        var held = Int(status.offset)
        while held < bytes.count { held = Int(try await send(client, status.uploadID, bytes, at: held, count: chunk).offset) }
        return try await commit(client, status.uploadID)
    }

    static func list(_ client: RpcClient) async throws -> [String: Earshot_V1_CatalogSummary] {
        let reply = try await client.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest())
        return Dictionary(uniqueKeysWithValues: reply.catalogs.map { ($0.name, $0) })
    }

    /// The files in the daemon's catalogs folder and their bytes.
    static func files(_ daemon: some RunningDaemon) -> [String: [UInt8]] {
        let folder = daemon.directory.appendingPathComponent("state/catalogs")
        var out: [String: [UInt8]] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] {
            out[name] = (try? Data(contentsOf: folder.appendingPathComponent(name))).map { Array($0) }
        }
        return out
    }

    static func signed(_ bytes: [UInt8], by key: Ed25519.SigningKey) -> [UInt8] {
        let digest = bytes.withUnsafeBytes { SHA256.hash($0) }
        let signature = CatalogSignature(publicKey: key.publicKey, signature: key.sign(CatalogSignature.message(bodyDigest: digest)))
        return bytes + signature.encoded
    }
}

extension InProcessDaemonTests {
    /// Catalogs over the network, driving the daemon over real CURVE sockets: the resumable
    /// upload's refusals, the events and the snapshot, several catalogs, drop-ins, signed
    /// catalogs. (kill -9 at any point, and what a swap leaves mapped, are
    /// `DaemonCatalogUploadTests`'.)
    @Suite("earshotd catalogs", .serialized)
    struct DaemonCatalogTests {
        /// Chunks already held are acknowledged, not appended twice; a hole or a chunk past the
        /// declared size is refused with OUT_OF_RANGE; a wrong SHA-256 or a corrupt structure is
        /// refused at commit (DATA_LOSS, INVALID_ARGUMENT; the digest checked first) and leaves the
        /// folder exactly as it was;
        /// a size over the limit is refused before a byte is sent; viewer and operator keys may not
        /// upload.
        @Test func badUploadsAreRefusedAndChangeNothing() async throws {
            try await InProcessDaemon.with(settings: ["--catalogs.max_upload_bytes=200000"]) { daemon in
                let client = try daemon.client()
                defer { client.close() }
                let before = CatalogUpload.files(daemon)
                let bytes = CatalogUpload.otherCatalog

                // Duplicates, overlaps, holes.
                let s = try await CatalogUpload.begin(client, "other", bytes)
                #expect(try await CatalogUpload.send(client, s.uploadID, bytes, at: 0, count: CatalogUpload.chunk).offset == UInt64(CatalogUpload.chunk))
                #expect(try await CatalogUpload.send(client, s.uploadID, bytes, at: 0, count: CatalogUpload.chunk).offset == UInt64(CatalogUpload.chunk))
                #expect(try await CatalogUpload.send(client, s.uploadID, bytes, at: CatalogUpload.chunk / 2, count: CatalogUpload.chunk).offset == UInt64(CatalogUpload.chunk + CatalogUpload.chunk / 2))
                await expectCode(.outOfRange) { () throws(RpcError) in _ = try await CatalogUpload.send(client, s.uploadID, bytes, at: 3 * CatalogUpload.chunk, count: CatalogUpload.chunk) }
                var past = Earshot_V1_UploadChunkRequest()
                past.uploadID = s.uploadID
                past.offset = UInt64(bytes.count - 10)
                past.data = Data(repeating: 0, count: 20)
                await expectCode(.outOfRange) { () throws(RpcError) in _ = try await client.call(Methods.Catalogs.uploadChunk, past) }
                // Committing early is refused and keeps the upload.
                await expectCode(.failedPrecondition) { () throws(RpcError) in _ = try await CatalogUpload.commit(client, s.uploadID) }
                var held = Int(CatalogUpload.chunk + CatalogUpload.chunk / 2)
                while held < bytes.count { held = Int(try await CatalogUpload.send(client, s.uploadID, bytes, at: held, count: CatalogUpload.chunk).offset) }
                #expect(try await CatalogUpload.commit(client, s.uploadID).catalog.version == 1)
                #expect(CatalogUpload.files(daemon)["other.earcat"] == bytes)

                // A wrong SHA-256: DATA_LOSS, nothing installed, the upload discarded.
                let wrong = try await CatalogUpload.begin(client, "wrong", bytes, sha256: [UInt8](repeating: 7, count: 32))
                held = 0
                while held < bytes.count { held = Int(try await CatalogUpload.send(client, wrong.uploadID, bytes, at: held, count: CatalogUpload.chunk).offset) }
                await expectCode(.dataLoss) { () throws(RpcError) in _ = try await CatalogUpload.commit(client, wrong.uploadID) }
                // A file whose digest is right but whose structure is corrupt (one bit in the postings).
                var corrupt = DaemonFixture.shared.catalogBytes
                let postings = TestCatalogImage.section(.postings, in: corrupt)
                corrupt[postings.lowerBound + postings.count / 2] ^= 0x10
                let bad = try await CatalogUpload.begin(client, "show", corrupt)
                held = 0
                while held < corrupt.count { held = Int(try await CatalogUpload.send(client, bad.uploadID, corrupt, at: held, count: CatalogUpload.chunk).offset) }
                await expectCode(.invalidArgument) { () throws(RpcError) in _ = try await CatalogUpload.commit(client, bad.uploadID) }
                // The same damaged bytes declared with the intact file's SHA-256: damaged in transit, so
                // the digest is checked first and says so (DATA_LOSS), before the structure is read.
                let damaged = try await CatalogUpload.begin(client, "show", corrupt, sha256: DaemonFixture.shared.catalogBytes.withUnsafeBytes { SHA256.hash($0) })
                held = 0
                while held < corrupt.count { held = Int(try await CatalogUpload.send(client, damaged.uploadID, corrupt, at: held, count: CatalogUpload.chunk).offset) }
                await expectCode(.dataLoss) { () throws(RpcError) in _ = try await CatalogUpload.commit(client, damaged.uploadID) }
                // Too large for this box, refused before a byte is sent, whatever the size declared.
                for size: UInt64 in [300_000, 1 << 63, UInt64.max] {
                    var large = Earshot_V1_BeginUploadRequest()
                    large.name = "large"
                    large.size = size
                    large.sha256 = Data(repeating: 1, count: 32)
                    await expectCode(.resourceExhausted) { () throws(RpcError) in _ = try await client.call(Methods.Catalogs.beginUpload, large) }
                }
                // A bad name.
                await expectCode(.invalidArgument) { () throws(RpcError) in _ = try await CatalogUpload.begin(client, "../etc", bytes) }

                var after = CatalogUpload.files(daemon)
                after["other.earcat"] = nil
                #expect(after == before, "the catalogs folder changed: \(after.keys.sorted()) vs \(before.keys.sorted())")
                let catalogs = try await CatalogUpload.list(client)
                #expect(catalogs.keys.sorted() == ["other", "show"])
                #expect(catalogs["show"]?.version == 1 && catalogs["show"]?.state == .active && catalogs["show"]?.failure == "")
                let uploads = try await client.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest()).uploads
                #expect(uploads.isEmpty, "\(uploads)")

                // Viewer and operator keys: PERMISSION_DENIED.
                for role in [ClientRole.viewer, .operator] {
                    let other = try daemon.client(role)
                    defer { other.close() }
                    await expectCode(.permissionDenied) { () throws(RpcError) in _ = try await CatalogUpload.begin(other, "mine", bytes) }
                    await expectCode(.permissionDenied) { () throws(RpcError) in
                        _ = try await other.call(Methods.Catalogs.remove, { var r = Earshot_V1_CatalogNameRequest(); r.name = "show"; return r }())
                    }
                }
            }
        }

        /// The catalog/ topic tells a dashboard every change, in order, each event with the
        /// catalog's summary; List is its snapshot (epoch and topic heads); the session keeps its
        /// prerecording window across the swaps.
        @Test func catalogEventsAndTheSnapshot() async throws {
            try await InProcessDaemon.with { daemon in
                let client = try daemon.client()
                defer { client.close() }
                let subscriber = try EventSubscriber(endpoint: daemon.eventsEndpoint, topics: [Topics.catalog, Topics.heartbeat],
                                                     security: daemon.security(.viewer))
                defer { subscriber.close() }
                let seen = Locked<[(Earshot_V1_CatalogEvent.Kind, String, UInt64)]>([])
                let heartbeats = Locked(0)
                let reading = Task {
                    for await event in subscriber.events {
                        switch event.body {
                        case .catalog(let c): seen.withLock { $0.append((c.kind, c.catalog.name.isEmpty ? c.upload.name : c.catalog.name, event.seq)) }
                        case .heartbeat: heartbeats.withLock { $0 += 1 }
                        default: break
                        }
                    }
                }
                defer { reading.cancel() }
                try await eventually("a heartbeat arrives") { heartbeats.withLock { $0 } > 0 }
                let heardBefore = try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest()).heardSeconds

                _ = try await CatalogUpload.push(client, "news", CatalogUpload.otherCatalog, enable: false)
                _ = try await CatalogUpload.push(client, "news", CatalogUpload.programmeCatalog)
                var name = Earshot_V1_CatalogNameRequest()
                name.name = "news"
                _ = try await client.call(Methods.Catalogs.enable, name)
                _ = try await client.call(Methods.Catalogs.disable, name)
                let bad = Array(CatalogUpload.otherCatalog.dropLast())
                await expectCode(.invalidArgument) { () throws(RpcError) in _ = try await CatalogUpload.push(client, "news", bad) }
                _ = try await client.call(Methods.Catalogs.remove, name)
                let expected: [Earshot_V1_CatalogEvent.Kind] = [.uploaded, .installed, .uploaded, .replaced, .enabled, .disabled, .uploaded, .failed, .removed]
                try await eventually("every catalog event arrives") { seen.withLock { $0.count } >= expected.count }
                let events = seen.withLock { $0 }
                #expect(events.map(\.0) == expected, "\(events.map(\.0))")
                #expect(events.allSatisfy { $0.1 == "news" })
                // The snapshot's head for the topic is the last event's seq: a late joiner drops up to it.
                let snapshot = try await client.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest())
                #expect(snapshot.topicSeq[Topics.catalog] == events.last?.2 && snapshot.epoch != 0)
                let heardAfter = try await client.call(Methods.Session.getSnapshot, Earshot_V1_GetSnapshotRequest()).heardSeconds
                #expect(heardAfter > heardBefore, "the session's audio restarted across the swaps (\(heardBefore) → \(heardAfter))")
            }
        }

        /// Two uploads of the same name with different bytes, committed one after the other: both
        /// install, the second replaces the first, and the file is the second's, whole.
        @Test func concurrentUploadsOfOneName() async throws {
            try await InProcessDaemon.with { daemon in
                let a = try daemon.client(), b = try daemon.client()
                defer { a.close(); b.close() }
                async let one = CatalogUpload.push(a, "twice", CatalogUpload.otherCatalog)
                async let two = CatalogUpload.push(b, "twice", CatalogUpload.programmeCatalog)
                let (r1, r2) = try await (one, two)
                #expect(Set([r1.catalog.version, r2.catalog.version]) == [1, 2])
                let last = r1.catalog.version == 2 ? CatalogUpload.otherCatalog : CatalogUpload.programmeCatalog
                #expect(CatalogUpload.files(daemon)["twice.earcat"] == last)
                #expect(try await CatalogUpload.list(a)["twice"]?.version == 2)
            }
        }

        /// A file copied into the catalogs folder is picked up once complete: a partial copy is
        /// refused (never loaded), the rest makes it whole and it is installed; hidden temporary
        /// names are ignored; deleting the file removes the catalog.
        @Test func dropInsArePickedUpWhenComplete() async throws {
            try await InProcessDaemon.with { daemon in
                let client = try daemon.client()
                defer { client.close() }
                let folder = daemon.directory.appendingPathComponent("state/catalogs")
                let bytes = CatalogUpload.programmeCatalog
                // A temporary name as rsync makes it: ignored.
                try Data(bytes).write(to: folder.appendingPathComponent(".drop.earcat.Ab12Cd"))
                // Half the file, closed: refused.
                let path = folder.appendingPathComponent("drop.earcat").path
                try Data(bytes[..<(bytes.count / 2)]).write(to: URL(fileURLWithPath: path))
                try await eventually("the half file is refused") { try await CatalogUpload.list(client)["drop"]?.state == .failed }
                #expect(try await CatalogUpload.list(client)["drop"]?.failure.contains("truncated") == true)
                // The rest appended: installed.
                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
                try handle.seekToEnd()
                try handle.write(contentsOf: Data(bytes[(bytes.count / 2)...]))
                try handle.close()
                try await eventually("the whole file is installed") { try await CatalogUpload.list(client)["drop"]?.state == .active }
                let drop = try #require(try await CatalogUpload.list(client)["drop"])
                #expect(drop.version == 1 && drop.failure.isEmpty && drop.referenceCount == 1)
                #expect(try await CatalogUpload.list(client).keys.sorted() == ["drop", "show"])
                // rm: gone.
                try FileManager.default.removeItem(atPath: path)
                try await eventually("the deleted file's catalog is gone") { try await CatalogUpload.list(client)["drop"] == nil }
                #expect(daemon.log.contains("catalog file \(path) refused"))
            }
        }

        /// With a trusted-authors file, only catalogs signed by a listed author are accepted, from
        /// an upload (an unsigned one or another author's refused at BeginUpload, before any byte)
        /// and from the folder alike; List shows the signer. A signature that does not verify is
        /// refused at commit.
        @Test func trustedAuthorsDecideWhatIsAccepted() async throws {
            let trusted = Ed25519.SigningKey(), stranger = Ed25519.SigningKey()
            let folder = try DaemonFolder()
            let authors = try folder.scratch.write("authors", text: "# who may sign\n\(Z85.encode(trusted.publicKey)) studio\n")
            try await InProcessDaemon.with(folder, settings: ["--catalogs.trusted_authors=\(authors)"]) { daemon in
                let client = try daemon.client()
                defer { client.close() }
                // The unsigned catalog found at start is refused, with the reason.
                let show = try #require(try await CatalogUpload.list(client)["show"])
                #expect(show.state == .failed && show.failure.contains("unsigned"), "\(show)")

                do throws(RpcError) {
                    _ = try await CatalogUpload.begin(client, "plain", CatalogUpload.otherCatalog)
                    Issue.record("an unsigned catalog's upload was begun on a box that takes only signed ones")
                } catch {
                    #expect(error.code == .permissionDenied && error.message.contains("is unsigned"), "\(error)")
                }
                #expect(try await client.call(Methods.Catalogs.list, Earshot_V1_ListCatalogsRequest()).uploads.isEmpty)
                let byStranger = CatalogUpload.signed(CatalogUpload.otherCatalog, by: stranger)
                await expectCode(.permissionDenied) { () throws(RpcError) in
                    _ = try await CatalogUpload.begin(client, "strange", byStranger, signer: stranger.publicKey)
                }
                var forged = CatalogUpload.signed(CatalogUpload.otherCatalog, by: trusted)
                forged[forged.count - 1] ^= 1
                await expectCode(.invalidArgument) { () throws(RpcError) in _ = try await CatalogUpload.push(client, "forged", forged, signer: trusted.publicKey) }

                let good = try await CatalogUpload.push(client, "good", CatalogUpload.signed(CatalogUpload.programmeCatalog, by: trusted), signer: trusted.publicKey)
                #expect(good.catalog.signerName == "studio" && good.catalog.signerKey == Z85.encode(trusted.publicKey))
                // Drop-ins: the stranger's refused, the author's accepted.
                let catalogs = daemon.directory.appendingPathComponent("state/catalogs")
                try Data(byStranger).write(to: catalogs.appendingPathComponent("dropped.earcat"))
                try await eventually("the stranger's catalog is refused") { try await CatalogUpload.list(client)["dropped"]?.state == .failed }
                try Data(CatalogUpload.signed(CatalogUpload.otherCatalog, by: trusted)).write(to: catalogs.appendingPathComponent("dropped2.earcat"))
                try await eventually("the author's catalog is installed") { try await CatalogUpload.list(client)["dropped2"]?.state == .active }
                let names = try await CatalogUpload.list(client).filter { $0.value.state == .active }.keys.sorted()
                #expect(names == ["dropped2", "good"])
            }
        }
    }
}
