import EarshotTestSupport
import Foundation
import Testing

@testable import EarshotCore

struct PeakSelectionTests {
    /// Peaks at `bin`, 2 frames apart from `firstFrame`, magnitudes `magnitudes` in order.
    private func peaks(bin: Float, firstFrame: Float, _ magnitudes: [Float]) -> [Peak] {
        magnitudes.enumerated().map { Peak(time: firstFrame + 2 * Float($0.offset), bin: bin, magnitude: $0.element) }
    }

    /// Every peak here lies within half a window of every other, so each ranking sees them all.
    @Test func oneBandKeepsItsStrongestOverall() {
        let all = peaks(bin: 20, firstFrame: 0, (0..<25).map { Float(($0 * 7) % 25) })
        let kept = PeakSelection.select(all, PeakSelection.reference)
        let allowed = Int(PeakSelection.reference.perSecond * PeakSelection.window)
        #expect(kept.count == allowed)
        #expect(Set(kept.map(\.magnitude)) == Set((25 - allowed..<25).map(Float.init)))
    }

    /// A loud band takes every place of the overall ranking; the quiet band still keeps its
    /// strongest few, as a room's louder foreground leaves the programme's other bands.
    @Test func aQuietBandKeepsItsStrongestBesideALoudOne() {
        let loud = peaks(bin: 30, firstFrame: 0, (0..<20).map { 100 + Float($0) })
        let quiet = peaks(bin: 150, firstFrame: 1, (0..<10).map { Float($0) })
        let all = (loud + quiet).sorted { $0.time < $1.time }
        let kept = PeakSelection.select(all, PeakSelection.reference)
        let overall = Int(PeakSelection.reference.perSecond * PeakSelection.window)
        let perBand = Int(PeakSelection.reference.perBandPerSecond * PeakSelection.window)
        #expect(Set(kept.filter { $0.bin == 30 }.map(\.magnitude)) == Set((20 - overall..<20).map { 100 + Float($0) }))
        #expect(Set(kept.filter { $0.bin == 150 }.map(\.magnitude)) == Set((10 - perBand..<10).map(Float.init)))
        #expect(zip(kept, kept.dropFirst()).allSatisfy { $0.time <= $1.time })
    }

    @Test func bandsSplitAt625HzAnd1600Hz() {
        #expect(PeakSelection.band(ofBin: 39.9) == 0)
        #expect(PeakSelection.band(ofBin: 40) == 1)
        #expect(PeakSelection.band(ofBin: 101.9) == 1)
        #expect(PeakSelection.band(ofBin: 102) == 2)
    }

    /// A catalog selects again when it is edited and written back: that must keep every peak.
    @Test func selectingASelectionAgainKeepsIt() throws {
        let signature = try SyntheticSignature.of(SyntheticMusic.make(seed: 77, duration: 20))
        for rule in [PeakSelection.reference, PeakSelection.query] {
            let once = PeakSelection.select(signature.peaks, rule)
            #expect(once.count < signature.peaks.count)
            #expect(PeakSelection.select(once, rule) == once)
        }
    }

    /// The programme's quiet high band identifies it while other, louder music covers the rest
    /// (the living room's "other music at the same level"). Ranked only by strength, the
    /// reference would keep none of the high band and the query none of the reference's peaks.
    @Test func aProgrammeUnderLouderMusicIsFoundByItsQuietBand() throws {
        let highBand = Float(PeakSelection.bandStarts.1)
        let programme = try SyntheticSignature.of(SyntheticMusic.make(seed: 601, duration: 30))
        // The programme's high band 8 nepers (35 dB) below its strongest peaks.
        let reference = try Signature(duration: programme.duration, peaks: programme.peaks.map {
            $0.bin >= highBand ? Peak(time: $0.time, bin: $0.bin, magnitude: $0.magnitude - 8) : $0
        })
        let strongestOnly = PeakSelection.select(reference.peaks, PeakSelection.Rule(perSecond: PeakSelection.reference.perSecond, perBandPerSecond: 0))
        let shipped = PeakSelection.select(reference.peaks, PeakSelection.reference)
        #expect(strongestOnly.filter { $0.bin >= highBand }.count * 20 < shipped.filter { $0.bin >= highBand }.count)
        var catalog = CustomCatalog()
        try catalog.addReferenceSignature(reference, representing: [MediaItem(id: "programme")])
        let matcher = Matcher(catalog: try MappedCatalog(bytes: try catalog.dataRepresentation()))

        // 10 s from 12 s: the programme's high band, and another piece's louder lower bands.
        let start: Float = 12 / Float(FingerprintParameters.hopDuration)
        let length: Float = 10 / Float(FingerprintParameters.hopDuration)
        let other = try SyntheticSignature.of(SyntheticMusic.make(seed: 602, duration: 10))
        let kept = reference.peaks.filter { $0.bin >= highBand && $0.time >= start && $0.time < start + length }
            .map { Peak(time: $0.time - start, bin: $0.bin, magnitude: $0.magnitude) }
        let louder = other.peaks.filter { $0.bin < highBand }.map { Peak(time: $0.time, bin: $0.bin, magnitude: $0.magnitude + 2) }
        let query = try Signature(duration: 10, peaks: (kept + louder).sorted { $0.time < $1.time })
        let top = try #require(matcher.match(query).mediaItems.first)
        #expect(top.mediaItem.id == "programme")
        #expect(abs(top.matchOffset - 12) < 0.05)
    }
}
