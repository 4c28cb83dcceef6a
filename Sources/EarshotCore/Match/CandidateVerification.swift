import RealModule

/// Checks candidates against the reference's own peaks (`PeakVerification`) where they place the
/// query, and says how sure a match is. A candidate with a few aligned anchors too few is a match
/// when those peaks stand far enough above chance (`confirmed`): a room breaks most landmarks
/// but leaves single peaks in place.
final class CandidateVerification {
    private let catalog: SearchedCatalogs
    private let requiredInliers: Int
    /// Every peak of the query being searched.
    var signaturePeaks: [Peak] = []
    /// Per reference, its peak cursors once made (`peakCursors(ofReference:)`).
    private var knownPeakCursors: [[MappedCatalog.PeakCursor]?]

    init(catalog: SearchedCatalogs, requiredInliers: Int) {
        self.catalog = catalog
        self.requiredInliers = requiredInliers
        knownPeakCursors = Array(repeating: nil, count: catalog.referenceCount)
    }

    /// Maps aligned-anchor counts to 0…1: chance alignments give a handful of inliers, a real
    /// match of a few seconds gives tens. A catalog that requires more inliers (a larger one)
    /// shifts the scale by as many, so a confidence means the same margin over chance at any
    /// size: the least a match can have is 0.46.
    static func confidence(inliers: Int, required: Int) -> Double {
        let anchors = Double(inliers - required + MatchThresholds.confidenceAnchorsBelowMinimum)
        return max(0, min(1, 1 - Double.exp(-anchors / MatchThresholds.confidenceAnchorScale)))
    }

    /// The query's peaks against the reference's stored peaks where candidate `c` places them.
    func check(_ c: Matcher.Candidate, queryFrames: Double) -> PeakVerification.Result {
        let cursors = peakCursors(ofReference: c.referenceIndex)
        let (member, reference) = catalog.local(c.referenceIndex)
        return signaturePeaks.withUnsafeBufferPointer {
            PeakVerification.check($0, queryFrames: Float(queryFrames), catalog: catalog.members[member], reference: reference,
                                   offset: c.offset, timeScale: c.timeScale, pitch: c.pitchRatio, cursors: cursors)
        }
    }

    /// What the query finds of the reference's peaks moved a few seconds from candidate `c`
    /// (`PeakVerification.chanceAtShifts`).
    private func chanceAtShifts(_ c: Matcher.Candidate, queryFrames: Double) -> Double? {
        let cursors = peakCursors(ofReference: c.referenceIndex)
        let (member, reference) = catalog.local(c.referenceIndex)
        return signaturePeaks.withUnsafeBufferPointer {
            PeakVerification.chanceAtShifts($0, queryFrames: Float(queryFrames), catalog: catalog.members[member], reference: reference,
                                            offset: c.offset, timeScale: c.timeScale, pitch: c.pitchRatio, cursors: cursors)
        }
    }

    /// The peak cursors of reference `r`, made the first time a candidate there is checked (one
    /// walk over its peaks) and kept for the matcher's life; none for a short reference.
    private func peakCursors(ofReference r: Int) -> [MappedCatalog.PeakCursor] {
        guard catalog.references[r].peakRecordCount > MatchThresholds.peakCursorThreshold else { return [] }
        if let known = knownPeakCursors[r] { return known }
        let (member, reference) = catalog.local(r)
        let made = catalog.members[member].peakCursors(ofReference: reference)
        knownPeakCursors[r] = made
        return made
    }

    /// A candidate with fewer aligned anchors than a match needs, confirmed by the reference's own
    /// peaks standing `score` standard deviations above chance (`PeakVerification.Result.score`,
    /// leaving out the peaks the aligned landmarks already account for; by default what a search
    /// asks, `MatchThresholds.confirmationScore(inliers:requiredInliers:)`): a match then, at the
    /// least confidence a match has. Chance is the larger of what the query's peak density
    /// predicts and what the query finds moved along the reference (`chanceAtShifts`): music of
    /// the same key and instruments finds more than the density predicts. `check` is the
    /// candidate's peak check when the caller has already made it.
    func confirmed(_ c: Matcher.Candidate, queryFrames: Double, check: PeakVerification.Result? = nil,
                   score: Double? = nil) -> Matcher.Candidate? {
        let score = score ?? MatchThresholds.confirmationScore(inliers: c.inliers, requiredInliers: requiredInliers)
        let check = check ?? self.check(c, queryFrames: queryFrames)
        let explained = c.inliers + c.alignedHits
        // Chance at the shifts only raises the expectation, which lowers a score above 0: a
        // candidate the density alone turns away (the threshold is above 0) needs no more looks.
        guard check.score(explained: explained) >= score else { return nil }
        let atShifts = check.withChance(atShifts: chanceAtShifts(c, queryFrames: queryFrames)).score(explained: explained)
        guard atShifts >= score else { return nil }
        var c = c
        c.confidence = Self.confidence(inliers: requiredInliers, required: requiredInliers)
        c.peakScore = atShifts
        return c
    }
}
