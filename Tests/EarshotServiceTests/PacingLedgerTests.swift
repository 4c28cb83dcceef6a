import Testing

@testable import EarshotService

/// How one owner's catch-up reads are paced: a burst for an idle lane, then its rate, many
/// waiters staggered, lanes apart from each other.
struct PacingLedgerTests {
    typealias Ledger = PacingLedger<String>
    let t0 = ContinuousClock.now

    @Test func anIdleLaneMayUseItsBurstThenWaitsForItsRate() {
        var ledger = Ledger(unitsPerSecond: 1000, burst: .seconds(2))
        #expect(ledger.book(1000, for: "viewer", now: t0) == .zero)
        #expect(ledger.book(1000, for: "viewer", now: t0) == .zero)
        // The burst (2000 units) is spent: the next piece waits until the first two are paid for.
        #expect(ledger.book(500, for: "viewer", now: t0) == .zero)
        #expect(ledger.book(500, for: "viewer", now: t0) == .milliseconds(500))
        #expect(ledger.book(100, for: "viewer", now: t0) == .seconds(1))
    }

    @Test func manyWaitersOfOneLaneStartOneCostApart() {
        var ledger = Ledger(unitsPerSecond: 1000, burst: .zero)
        let waits = (0..<5).map { _ in ledger.book(100, for: "viewer", now: t0) }
        #expect(waits == [.zero, .milliseconds(100), .milliseconds(200), .milliseconds(300), .milliseconds(400)])
    }

    @Test func settlingCorrectsTheBookingBothWays() {
        var ledger = Ledger(unitsPerSecond: 1000, burst: .zero)
        #expect(ledger.book(100, for: "viewer", now: t0) == .zero)
        ledger.settle(booked: 100, actual: 400, for: "viewer")
        #expect(ledger.book(100, for: "viewer", now: t0) == .milliseconds(400))
        // A call that ends before its turn gives its booking back.
        ledger.settle(booked: 100, actual: 0, for: "viewer")
        #expect(ledger.book(0, for: "viewer", now: t0) == .milliseconds(400))
        #expect(ledger.book(0, for: "viewer", now: t0 + .milliseconds(400)) == .zero)
    }

    @Test func lanesArePacedApart() {
        var ledger = Ledger(unitsPerSecond: 1000, burst: .zero)
        #expect(ledger.book(10_000, for: "viewer", now: t0) == .zero)
        #expect(ledger.book(1, for: "viewer", now: t0) == .seconds(10))
        #expect(ledger.book(1, for: "operator", now: t0) == .zero)
    }

    @Test func aLaneIdleForItsBurstHasAllOfItAgain() {
        var ledger = Ledger(unitsPerSecond: 1000, burst: .seconds(1))
        #expect(ledger.book(5000, for: "viewer", now: t0) == .zero)  // paid for at t0 + 4 s
        #expect(ledger.book(1, for: "viewer", now: t0 + .seconds(2)) == .seconds(2))
        let later = t0 + .seconds(6)  // idle for a second (its burst) since
        #expect(ledger.book(1000, for: "viewer", now: later) == .zero)
        #expect(ledger.book(1, for: "viewer", now: later) == .zero)  // the burst is spent: from here on, its rate
        #expect(ledger.book(1, for: "viewer", now: later) == .milliseconds(1))
        // Many lanes: idle ones are forgotten, a busy one keeps its debt.
        #expect(ledger.book(10_000, for: "busy", now: later) == .zero)
        for i in 0..<200 { _ = ledger.book(1, for: "lane \(i)", now: later + .seconds(2)) }
        #expect(ledger.book(1, for: "busy", now: later + .seconds(2)) == .seconds(7))
    }
}
