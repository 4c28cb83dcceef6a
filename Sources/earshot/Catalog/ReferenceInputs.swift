import Dispatch
import EarshotAuthoring
import EarshotCore
import EarshotMedia
import EarshotSync
import Foundation
import Synchronization

/// Turns input files into reference signatures with progress, for `catalog create/add/update`.
enum ReferenceInputs {
    /// Checks that every input exists before the (slow) fingerprinting starts.
    static func requireAll(_ inputs: [String]) throws(CLIFailure) {
        for input in inputs { try InputFile.requireFile(input) }
    }

    /// The signature of each input, in order (`track` picks among a video file's audio tracks). Files are decoded and fingerprinted on every core
    /// at once, one file per core; the first failure (in input order) is the command's, and no
    /// new file is started after one. `forCatalog`: progress counts the peaks a catalog keeps of
    /// each (its selection), the number `catalog display` shows.
    static func signatures(
        of inputs: [String], track: AudioTrackChoice = .containerDefault, quiet: Bool, forCatalog: Bool = true
    ) throws(CLIFailure) -> [SignatureInput.Loaded] {
        let progress = ProgressLine(total: inputs.count, quiet: quiet)
        defer { progress.end() }
        let results = Locked([Result<SignatureInput.Loaded, CLIFailure>?](repeating: nil, count: inputs.count))
        let next = Atomic<Int>(0), failed = Atomic<Bool>(false)
        let workers = max(1, min(inputs.count, ProcessInfo.processInfo.activeProcessorCount))
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while !failed.load(ordering: .relaxed) {
                let k = next.add(1, ordering: .relaxed).oldValue
                guard k < inputs.count else { return }
                let input = inputs[k]
                let name = input.split(separator: "/").last.map(String.init) ?? input
                progress.update(k, name, fraction: 0)
                let result: Result<SignatureInput.Loaded, CLIFailure>
                do throws(CLIFailure) {
                    let loaded = try SignatureInput.load(input, track: track) { progress.update(k, name, fraction: $0) }
                    let signature = loaded.signature
                    let peaks = forCatalog
                        ? "\(Format.count(PeakSelection.select(signature.peaks, PeakSelection.reference).count)) peaks kept of \(Format.count(signature.peaks.count))"
                        : "\(Format.count(signature.peaks.count)) peaks"
                    let source = loaded.source.map { ", \($0)" } ?? ""
                    progress.finished(k, name, detail: "\(Format.seconds(signature.duration)), \(peaks)\(source)")
                    result = .success(loaded)
                } catch {
                    failed.store(true, ordering: .relaxed)
                    result = .failure(error)
                }
                results.withLock { $0[k] = result }
            }
        }
        // Files are taken in input order, so any file never started comes after a failure: the
        // first failure in input order is thrown before a gap is reached.
        var out: [SignatureInput.Loaded] = []
        for case let result? in results.withLock({ $0 }) { out.append(try result.get()) }
        return out
    }

    /// Adds one reference per input to `catalog` (the catalog at `catalogPath`, for messages).
    static func add(_ signatures: [SignatureInput.Loaded], items: [[MediaItem]], to catalog: inout CustomCatalog, catalogPath: String) throws(CLIFailure) {
        for (signature, mediaItems) in zip(signatures, items) {
            do { try catalog.addReferenceSignature(signature.signature, representing: mediaItems) } catch {
                throw .badInput(catalogPath, error)
            }
        }
    }

    /// Refuses new media items whose id an untouched reference already uses, so ids stay unique
    /// and `catalog remove --id` removes what the author means.
    static func requireUniqueIDs(
        _ newItems: [MediaItem], in catalog: CustomCatalog, except replaced: Set<Int> = [], catalogPath: String,
        rows: [MediaItemCSV.Row], csvPath: String?
    ) throws(CLIFailure) {
        var owner: [String: Int] = [:]
        for (i, reference) in catalog.references.enumerated() where !replaced.contains(i) {
            for item in reference.mediaItems { owner[item.id] = owner[item.id] ?? i }
        }
        for item in newItems {
            guard let reference = owner[item.id] else { continue }
            if let csvPath, let row = rows.first(where: { $0.item.id == item.id }) {
                throw .badInput(csvPath, "line \(row.line), column id: id \"\(item.id)\" is already used by reference \(reference) of \(catalogPath)")
            }
            throw .badInput(catalogPath, "reference \(reference) already has a media item with id \"\(item.id)\"; give the new item another id in a media-items CSV")
        }
    }
}
