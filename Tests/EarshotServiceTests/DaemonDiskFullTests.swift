import EarshotCrypto
import EarshotTestSupport
import EarshotTransport
import EarshotWire
import Foundation
import Testing

extension InProcessDaemonTests {
    /// A disk that fills up under the daemon: its folder on a small tmpfs mounted for the test,
    /// filled to the last byte in the middle of an upload and of library writes. Nothing is
    /// acknowledged that is not stored, what was acknowledged stays, and both carry on once space is
    /// freed. The disk reserves are set to 0 so the writes meet the full disk itself.
    @Suite("earshotd on a full disk", .serialized)
    struct DaemonDiskFullTests {
        @Test func aFullDiskRefusesAChunkAndALibraryWriteAndBothResumeOnceFreed() async throws {
            let disk = try SmallDisk(megabytes: 48)
            defer { disk.unmount() }
            try await InProcessDaemon.with(settings: ["--session.prepare_on_start=false", "--catalogs.reserve_bytes=0", "--library.reserve_bytes=0"], under: disk.url) { daemon in
                let admin = try daemon.client(.admin)
                defer { admin.close() }
                let viewer = try daemon.client(.viewer)
                defer { viewer.close() }

                // Before: an upload under way and a library with items.
                let bytes = CatalogUpload.otherCatalog
                let upload = try await CatalogUpload.begin(admin, "other", bytes)
                let first = try await CatalogUpload.send(admin, upload.uploadID, bytes, at: 0, count: CatalogUpload.chunk)
                var kept: [String: String] = [:]
                for n in 0..<5 { try await Self.add(viewer, batch: n, into: &kept) }

                // The disk fills up.
                try disk.fill()
                let piece = 64 << 10  // larger than a page: it needs blocks the disk no longer has
                do throws(RpcError) {
                    _ = try await CatalogUpload.send(admin, upload.uploadID, bytes, at: Int(first.offset), count: piece)
                    Issue.record("a chunk was acknowledged on a full disk")
                } catch {
                    #expect(error.code == .resourceExhausted, "\(error)")
                }
                var status = Earshot_V1_UploadRequest()
                status.uploadID = upload.uploadID
                #expect(try await admin.call(Methods.Catalogs.getUpload, status).offset == first.offset, "nothing past the acknowledged offset")
                var refusal: RpcError?
                for n in 5..<40 where refusal == nil {
                    do throws(RpcError) { try await Self.add(viewer, batch: n, into: &kept) } catch { refusal = error }
                }
                let full = try #require(refusal, "35 batches of 200 KB fitted on a full disk")
                #expect(full.code == .resourceExhausted && full.message.contains("no space left"), "\(full)")
                // Every acknowledged item is there, and the library still serves.
                let all = try await Lib.all(viewer)
                #expect(all.items.count == kept.count && all.items.allSatisfy { kept[$0.id] == $0.item.mediaItem.title })

                // Space is freed: the upload resumes where it was acknowledged, the library takes writes.
                try disk.free()
                var held = Int(first.offset)
                while held < bytes.count {
                    held = Int(try await CatalogUpload.send(admin, upload.uploadID, bytes, at: held, count: piece).offset)
                }
                #expect(try await CatalogUpload.commit(admin, upload.uploadID).catalog.name == "other")
                let installed = try Data(contentsOf: daemon.directory.appendingPathComponent("state/catalogs/other.earcat"))
                #expect([UInt8](installed) == bytes)
                try await Self.add(viewer, batch: 99, into: &kept)
                #expect(try await Lib.all(viewer).items.count == kept.count)
                await daemon.stop()
            }
        }

        /// Adds four items of about 50 KB each (random text: nothing compresses) in one write and
        /// keeps their ids and titles once acknowledged.
        static func add(_ client: RpcClient, batch n: Int, into kept: inout [String: String]) async throws(RpcError) {
            let items = (0..<4).map { i in
                Lib.new(title: "item \(n).\(i) " + String((0..<50_000).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! }))
            }
            let reply = try await Lib.add(client, items)
            for (stored, item) in zip(reply.items, items) { kept[stored.id] = item.item.mediaItem.title }
        }
    }

    /// A tmpfs of a few megabytes mounted for one test (as root, or through `sudo -n`), and a file
    /// that fills it.
    final class SmallDisk {
        /// The mount point; removed after the file system is unmounted (`unmount`, or `deinit`
        /// before the stored properties go).
        private let mountPoint: TemporaryDirectory
        var url: URL { mountPoint.url }
        private var filler: URL { url.appendingPathComponent("filler") }
        private var mounted = false

        init(megabytes: Int) throws {
            mountPoint = try TemporaryDirectory("earshot-small-disk")
            try Self.run(["mount", "-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0755", "tmpfs", url.path])
            mounted = true
        }

        /// Writes zeros until the file system has no block left (dd stops at ENOSPC).
        func fill() throws {
            _ = try? Self.run(["dd", "if=/dev/zero", "of=\(filler.path)", "bs=64k"], asRoot: false)
            var info = statvfs()
            guard statvfs(url.path, &info) == 0, info.f_bavail == 0 else {
                throw HarnessError("\(url.path) still has \(info.f_bavail) blocks free after dd")
            }
        }

        func free() throws { try FileManager.default.removeItem(at: filler) }

        func unmount() {
            guard mounted else { return }
            _ = try? Self.run(["umount", "-l", url.path])
            mounted = false
        }

        deinit { unmount() }

        @discardableResult
        static func run(_ arguments: [String], asRoot: Bool = true) throws -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = (asRoot && getuid() != 0 ? ["sudo", "-n"] : []) + arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw HarnessError("\(arguments.joined(separator: " ")) failed (status \(process.terminationStatus)); mounting a small tmpfs needs root or sudo")
            }
            return process.terminationStatus
        }
    }
}
