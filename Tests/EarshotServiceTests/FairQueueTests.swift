import Testing

@testable import EarshotService

/// The order in which library reads are served: round-robin across lanes (keys), in order
/// within a lane.
struct FairQueueTests {
    private func drain(_ queue: inout FairQueue<String, String>) -> [String] {
        var out: [String] = []
        while let job = queue.dequeue() { out.append(job) }
        return out
    }

    @Test func aLaneWithAQueueTakesOneTurnPerRound() {
        var queue = FairQueue<String, String>()
        for i in 1...5 { queue.enqueue("v\(i)", lane: "viewer") }
        queue.enqueue("o1", lane: "operator")
        queue.enqueue("a1", lane: "admin")
        queue.enqueue("o2", lane: "operator")
        #expect(queue.count == 8)
        #expect(drain(&queue) == ["v1", "o1", "a1", "v2", "o2", "v3", "v4", "v5"])
        #expect(queue.isEmpty && queue.dequeue() == nil)
    }

    @Test func aLaneThatArrivesLateWaitsAtMostOneJobOfEachOtherLane() {
        var queue = FairQueue<String, String>()
        for i in 1...64 { queue.enqueue("v\(i)", lane: "viewer") }
        #expect(queue.dequeue() == "v1")
        #expect(queue.dequeue() == "v2")
        queue.enqueue("o1", lane: "operator")
        // The viewer's lane is next in the rotation: one more of its jobs, then the operator's.
        #expect(queue.dequeue() == "v3")
        #expect(queue.dequeue() == "o1")
        #expect(drain(&queue) == (4...64).map { "v\($0)" })
    }

    @Test func aLaneThatEmptiedJoinsAgainAtTheBack() {
        var queue = FairQueue<String, String>()
        queue.enqueue("a1", lane: "a")
        queue.enqueue("b1", lane: "b")
        queue.enqueue("b2", lane: "b")
        #expect(queue.dequeue() == "a1")  // a leaves the rotation
        queue.enqueue("c1", lane: "c")
        queue.enqueue("a2", lane: "a")  // a joins behind c; b, served, goes behind a
        #expect(drain(&queue) == ["b1", "c1", "a2", "b2"])
        #expect(queue.count == 0)
    }
}
