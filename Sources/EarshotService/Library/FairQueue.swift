/// Jobs queued by lane and taken round-robin across lanes: each lane with work gets one turn
/// per round, however many jobs it holds, so a lane with a long queue delays another lane's
/// next job by at most one job, not by its whole queue. Within a lane, jobs keep their order.
///
/// A lane takes its turn in the order it first had work; a lane whose last job was taken leaves
/// the rotation and, with new work, joins it again at the back.
struct FairQueue<Lane: Hashable, Job> {
    private var jobs: [Lane: [Job]] = [:]
    /// Lanes with work, the next to serve first.
    private var rotation: [Lane] = []

    init() {}

    /// Jobs waiting, over all lanes.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    mutating func enqueue(_ job: Job, lane: Lane) {
        if jobs[lane, default: []].isEmpty { rotation.append(lane) }
        jobs[lane, default: []].append(job)
        count += 1
    }

    /// The next job of the lane whose turn it is; that lane then goes to the back of the rotation.
    mutating func dequeue() -> Job? {
        guard !rotation.isEmpty else { return nil }
        let lane = rotation.removeFirst()
        let job = jobs[lane]!.removeFirst()
        if jobs[lane]!.isEmpty {
            jobs[lane] = nil
        } else {
            rotation.append(lane)
        }
        count -= 1
        return job
    }
}
