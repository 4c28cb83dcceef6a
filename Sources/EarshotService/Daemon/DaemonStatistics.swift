import EarshotLive
import EarshotTransport

/// What GetStats reports: the daemon's counters beside those of capture, RPC, connections,
/// security and events, under stable snake_case names (docs/PROTOCOL.md lists them).
struct DaemonStatistics: Sendable {
    let counters: DaemonCounters
    let session: ManagedSession
    let server: RpcServer
    let publisher: EventPublisher
    let limiter: ConnectionLimiter
    let allowList: ClientAllowList?

    func snapshot() -> [String: UInt64] {
        var all = counters.snapshot
        let status = session.status
        all["session_matches_computed"] = UInt64(status.matchesComputed)
        let capture = status.sourceStatistics
        all["capture_frames"] = UInt64(max(0, capture.framesCaptured))
        all["capture_xruns"] = UInt64(max(0, capture.xruns))
        all["capture_dropped_samples"] = UInt64(max(0, capture.droppedSamples))
        all["capture_reopen_attempts"] = UInt64(max(0, capture.reopenAttempts))
        all["capture_gaps"] = UInt64(max(0, capture.gaps))
        let rpc = server.statistics
        for (status, n) in rpc.callsByStatus { all["rpc_calls_" + status.description.lowercased()] = UInt64(n) }
        all["rpc_dropped_frames"] = UInt64(rpc.droppedFrames)
        all["rpc_dropped_envelopes"] = UInt64(rpc.droppedEnvelopes)
        all["rpc_dropped_replies"] = UInt64(rpc.droppedReplies)
        all["rpc_peers_lost"] = UInt64(rpc.peersLost)
        all["rpc_rejected"] = UInt64(rpc.rejected)
        all["rpc_denied"] = UInt64(rpc.denied)
        all["rpc_disconnects"] = UInt64(rpc.disconnects)
        all["rpc_revoked_calls"] = UInt64(rpc.revokedCalls)
        let connections = limiter.statistics
        all["connections_open"] = UInt64(connections.open)
        all["connections_peak"] = UInt64(connections.peak)
        all["connections_refused"] = UInt64(connections.refused)
        all["connections_limit"] = UInt64(limiter.limits.maximumConnections)
        all["connections_door_closings"] = UInt64(connections.closings)
        all["connections_blocked_addresses"] = UInt64(connections.blockedAddresses)
        let refusals = allowList?.rejections ?? .init()
        all["security_refused"] = UInt64(refusals.count)
        all["security_failed_handshakes"] = UInt64(refusals.failedHandshakes)
        all["rpc_in_flight"] = UInt64(rpc.inFlight)
        let events = publisher.statistics
        all["events_published"] = UInt64(events.published)
        all["events_dropped"] = UInt64(events.dropped)
        all["events_subscriber_resets"] = UInt64(events.resets)
        all["events_subscriptions"] = UInt64(events.subscriptions)
        all["events_subscriptions_ignored"] = UInt64(events.ignoredSubscriptions)
        all["events_subscribers_cut_off"] = UInt64(events.subscribersCutOff)
        return all
    }
}
