/// Orders what the searches found as a result lists it: references by their evidence, and within
/// one reference the place that holds clearly more of the reference's own peaks first.
enum MatchRanking {
    /// Candidates as a result lists them: references best first, each reference's best position
    /// followed by its other positions that score alike (music and TV repeat choruses, jingles
    /// and intros: the query alone cannot tell them apart, a session that heard what came
    /// before can). The same position found under two hypotheses counts once, and references
    /// far weaker than the best are dropped (a shared intro matches several equally well).
    static func ranked(_ found: [Matcher.Candidate]) -> [Matcher.Candidate] {
        // One group per reference, in the order references first appear; each group's first
        // (best) position leads it.
        var groups: [[Matcher.Candidate]] = []
        for c in found.sorted(by: { $0.inliers > $1.inliers }) {
            guard let r = groups.firstIndex(where: { $0[0].referenceIndex == c.referenceIndex }) else {
                groups.append([c])
                continue
            }
            if Double(c.inliers) >= MatchThresholds.alikeShare * Double(groups[r][0].inliers),
               !groups[r].contains(where: { abs($0.offset - c.offset) < MatchThresholds.distinctPositions }) {
                groups[r].append(c)
            }
        }
        guard let best = groups.first?[0].inliers else { return [] }
        return groups.joined().filter { $0.inliers * MatchThresholds.keptReferenceDivisor >= best }
    }

    /// Chooses, within each reference `ranked` keeps, which position leads: among every position
    /// of that reference in `found` and `elsewhere`, the one where the query finds most of the
    /// reference's own peaks (`score`), when it beats the ranked leader by
    /// `MatchThresholds.leadMargin` (by `elsewhereMargin` for a place of `elsewhere`, which no
    /// search found); the positions that score alike follow, ordered by the same measure. Aligned
    /// anchors are a coarse count: in a room or in noise, a repeat that shares most of its notes
    /// with the right place can gather more of them by chance of what survived, while the right
    /// place holds more of its peaks where the query has them. Near ties are real repeats, which
    /// the query alone cannot tell apart: they keep the anchors' order. Only references `ranked`
    /// keeps are considered, so this changes where in a reference a match is, never whether there
    /// is one, and references keep their order: the leader carries the best confidence of its
    /// reference's places.
    static func leading(_ ranked: [Matcher.Candidate], among found: [Matcher.Candidate], elsewhere: [Matcher.Candidate] = [],
                        score: (Matcher.Candidate) -> Double) -> [Matcher.Candidate] {
        let leadMargin = MatchThresholds.leadMargin, distinctPositions = MatchThresholds.distinctPositions
        var ordered: [Matcher.Candidate] = []
        var start = 0
        while start < ranked.count {
            var end = start + 1
            while end < ranked.count, ranked[end].referenceIndex == ranked[start].referenceIndex { end += 1 }
            let group = Array(ranked[start..<end])
            start = end
            // Every position of this reference, the ranked ones first, then by aligned anchors
            // (the better fit of a place found both ways; at a tie, the search's, listed first:
            // the sort is stable), each with the margin it needs.
            var positions = group
            var margins = [Double](repeating: leadMargin, count: group.count)
            let others = (found.map { ($0, leadMargin) } + elsewhere.map { ($0, MatchThresholds.elsewhereMargin) })
                .filter { $0.0.referenceIndex == group[0].referenceIndex }
                .sorted { $0.0.inliers > $1.0.inliers }
            for (c, margin) in others where !positions.contains(where: { abs($0.offset - c.offset) < distinctPositions }) {
                positions.append(c)
                margins.append(margin)
            }
            guard positions.count > 1 else {
                ordered += group
                continue
            }
            let scores = positions.map(score)
            // The best-scoring place among those that beat the ranked leader by their margin.
            let leader = positions.indices.filter { $0 == 0 || scores[$0] >= scores[0] + margins[$0] }
                .max { scores[$0] != scores[$1] ? scores[$0] < scores[$1] : $0 > $1 }!
            var rest = group.indices.filter { abs(group[$0].offset - positions[leader].offset) >= distinctPositions }
            rest.sort { scores[$0] != scores[$1] ? scores[$0] > scores[$1] : $0 < $1 }
            // The reference is matched as surely as its best place says; the leader says where.
            // So what gates on the first item's confidence (a session's jump check, cues) and
            // the ordering of references by confidence see the reference as its best place has it.
            var lead = positions[leader]
            lead.confidence = group.map(\.confidence).max()!
            ordered.append(lead)
            ordered += rest.map { group[$0] }
        }
        return ordered
    }
}
