import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotCore

/// Walking a long reference's stored peaks from a cursor instead of from its first peak
/// (`MappedCatalog.peakCursors`): the same peaks, whatever cursor a walk starts from.
struct PeakCursorTests {
    /// One 25-minute reference: peaks every 11–35 frames in three bands, and a silent 100 s in the
    /// middle, longer than one stored time step can say (the file holds skip records there).
    static func longReference() throws -> (MappedCatalog, [Peak]) {
        var random = SeededRandom(seed: 7)
        var peaks: [Peak] = []
        var time: Float = 3
        let duration = 1500.0
        let lastFrame = Float(duration / FingerprintParameters.hopDuration) - 10
        while time < lastFrame {
            if time > 60_000, time < 72_500 { time = 72_500 }
            let bin = [24, 70, 180][Int(random.next() % 3)] + Float(random.next() % 16)
            peaks.append(Peak(time: time, bin: bin, magnitude: 2 + Float(random.next() % 100) / 10))
            time += Float(11 + random.next() % 25) + 0.375
        }
        var catalog = CustomCatalog()
        try catalog.addReferenceSignature(try Signature(duration: duration, peaks: peaks), representing: [MediaItem(id: "long")])
        let mapped = try MappedCatalog(bytes: try catalog.dataRepresentation())
        return (mapped, try mapped.signature(ofReference: 0).peaks)
    }

    private func walk(_ catalog: MappedCatalog, _ frames: ClosedRange<Float>, from cursor: MappedCatalog.PeakCursor) -> [(Float, Float)] {
        var walked: [(Float, Float)] = []
        catalog.forEachPeak(ofReference: 0, in: frames, from: cursor) { walked.append(($0, $1)) }
        return walked
    }

    @Test func cursorsAreEveryStrideRecordsFromTheStart() throws {
        let (catalog, stored) = try Self.longReference()
        let cursors = catalog.peakCursors(ofReference: 0)
        let records = catalog.references[0].peakRecordCount
        #expect(records > stored.count, "the silent gap is stored as skip records")
        #expect(cursors.first == .start)
        #expect(cursors.count == (records - 1) / MappedCatalog.peakCursorStride + 1)
        #expect(cursors.enumerated().allSatisfy { $0.element.record == $0.offset * MappedCatalog.peakCursorStride })
    }

    /// Every span, walked from the cursor `cursor(in:before:)` picks, gives exactly the stored
    /// peaks in it, as a walk from the start does: spans inside a stride, across cursors, in and
    /// around the silent gap, and at the very end.
    @Test func aWalkFromTheChosenCursorMeetsEveryPeakOfTheSpan() throws {
        let (catalog, stored) = try Self.longReference()
        let cursors = catalog.peakCursors(ofReference: 0)
        var random = SeededRandom(seed: 11)
        var spans: [ClosedRange<Float>] = [0...1250, 59_500...61_000, 61_000...73_000, 71_000...74_000, 185_000...190_000]
        for _ in 0..<200 {
            let start = Float(random.next() % 187_000)
            spans.append(start...(start + 1250))
        }
        // Exactly at a stored peak's time, which must stay in.
        spans += stride(from: 0, to: stored.count, by: 97).map { stored[$0].time...(stored[$0].time + 1250) }
        // Exactly at the time of the record just before a cursor: that peak is before the cursor.
        spans += cursors.dropFirst().map { Float($0.units) / PeakCoding.timeUnitsPerFrame }.map { $0...($0 + 1250) }
        for span in spans {
            let cursor = MappedCatalog.cursor(in: cursors, before: span.lowerBound)
            let walked = walk(catalog, span, from: cursor)
            let expected = stored.filter { span.contains($0.time) }
            #expect(walked.count == expected.count, "span \(span)")
            #expect(zip(walked, expected).allSatisfy { $0.0 == $1.time && $0.1 == $1.bin }, "span \(span)")
            #expect(walked.count == walk(catalog, span, from: .start).count)
            if span.lowerBound > 20_000 { #expect(cursor.record > 0, "a late span starts past the first record") }
        }
    }

    /// A cursor that is not this reference's (another reference's, or past its records) is
    /// ignored: the walk starts at the first record instead of reading wrong times or outside
    /// the reference.
    @Test func aForeignCursorFallsBackToTheStart() throws {
        let (catalog, stored) = try Self.longReference()
        let expected = stored.filter { $0.time <= 2000 }.count
        let own = catalog.peakCursors(ofReference: 0)[3]
        let foreign = [
            MappedCatalog.PeakCursor(reference: 0, record: catalog.references[0].peakRecordCount + 5, units: 0),
            MappedCatalog.PeakCursor(reference: 1, record: own.record, units: own.units),
        ]
        for cursor in foreign { #expect(walk(catalog, 0...2000, from: cursor).count == expected) }
        #expect(walk(catalog, 0...2000, from: own).count < expected, "this reference's own cursor is used")
    }

    /// The check a matcher makes with cursors equals the one without, at the reference's end.
    @Test func peakVerificationWithCursorsIsUnchanged() throws {
        let (catalog, stored) = try Self.longReference()
        let cursors = catalog.peakCursors(ofReference: 0)
        let offsetFrames: Float = 180_000
        let query = stored.filter { $0.time >= offsetFrames && $0.time < offsetFrames + 1250 }
            .map { Peak(time: $0.time - offsetFrames, bin: $0.bin, magnitude: $0.magnitude) }
        #expect(query.count > 20)
        let offset = Double(offsetFrames) * FingerprintParameters.hopDuration
        let plain = query.withUnsafeBufferPointer {
            PeakVerification.check($0, queryFrames: 1250, catalog: catalog, reference: 0, offset: offset, timeScale: 1, pitch: 1)
        }
        let sought = query.withUnsafeBufferPointer {
            PeakVerification.check($0, queryFrames: 1250, catalog: catalog, reference: 0, offset: offset, timeScale: 1, pitch: 1,
                                   cursors: cursors)
        }
        #expect(sought == plain)
        #expect(plain.found == plain.referencePeaks && plain.referencePeaks == query.count)
    }
}
