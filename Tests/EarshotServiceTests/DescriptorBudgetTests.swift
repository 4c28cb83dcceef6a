import Testing

@testable import EarshotService

/// How the daemon splits its file descriptors between connections and its own use.
@Suite("descriptor budget")
struct DescriptorBudgetTests {
    @Test func connectionsLeaveTheReserveAndRoomForABurst() {
        // The flood test's 256, systemd's default soft limit and the shipped unit's 16384.
        let small = DescriptorBudget(limitBefore: 256, limit: 256, inUse: 21, configured: 1024)
        #expect(small.reserve == 64)
        #expect(small.limit - small.inUse - small.reserve - small.connections == DescriptorBudget.burstAllowance)
        #expect(small.connections == 256 - 21 - 64 - DescriptorBudget.burstAllowance)
        let systemd = DescriptorBudget(limitBefore: 1024, limit: 1024, inUse: 30, configured: 1024)
        #expect(systemd.reserve == 128)
        #expect(systemd.connections == 1024 - 30 - 128 - DescriptorBudget.burstAllowance)
        // When the limit is ample, the configured cap is what applies.
        let unit = DescriptorBudget(limitBefore: 16384, limit: 16384, inUse: 30, configured: 1024)
        #expect(unit.connections == 1024)
    }

    @Test func aLimitTooSmallForAnyConnectionStillAllowsOne() {
        // The operator's own call must still get in; the log tells them to raise LimitNOFILE.
        let tiny = DescriptorBudget(limitBefore: 64, limit: 64, inUse: 40, configured: 1024)
        #expect(tiny.connections == 1)
    }
}
