import Foundation

extension Report {
    /// The `board` section of RESULTS.md.
    static func boardSection(_ env: RunEnvironment, _ r: BoardReport) -> String {
        func ms(_ v: Double?, _ digits: Int = 1) -> String { Fmt.f(v, digits) }
        func mb(_ kb: Int) -> String { Fmt.f(Double(kb) / 1024) }
        func mbBytes(_ b: Int) -> String { Fmt.f(Double(b) / 1_048_576) }
        let binary = r.binary.hasPrefix(env.options.root + "/") ? String(r.binary.dropFirst(env.options.root.count + 1)) : r.binary
        var s = "## Board: earshotd on a Raspberry Pi budget\n\n" + runLine(env) + "\n\n"

        s += "`earshotd` (`\(binary)`, \(Fmt.bytes(r.binaryBytes)), Swift runtime \(r.swiftRuntime.isEmpty ? "?" : r.swiftRuntime)) runs as a child "
            + "process inside **cgroup v1** groups made for it: CPU bandwidth of the budget's share of one core (`cpu.cfs_quota_us` = share × "
            + "`cpu.cfs_period_us`, period 10 ms so a throttled daemon waits at most the rest of one period, ≈ 9 ms at 14 %, nearer a slow core "
            + "than the default 100 ms period), `cpuset.cpus` = CPU \(r.cpu) (every thread of the daemon on one core's budget), "
            + "`memory.limit_in_bytes` \(BoardBenchmark.memoryLimit >> 20) MB (no swap here). A shell writes its pid to each group's "
            + "`cgroup.procs` and then execs earshotd, so nothing of the daemon runs outside the limits. As shipped: **CURVE on** (an operator key, "
            + "the phone, and an admin key in the allow-list), `session.follow = true`, cues on. The programme is \(r.programme), played in real time "
            + "by the daemon's own file source (`--audio.source=file --audio.loop=true`). The clients (`RpcClient`, `EventSubscriber`) run in the "
            + "benchmark process outside the limits, on the same \(env.cores) cores (they are the LAN); load average at start \(env.loadAverage) "
            + "(other work on the machine takes from the daemon's core too, never more than its quota).\n\n"

        let runs = r.sysbench.map { String(format: "%.0f", $0.eventsPerSecond) }.joined(separator: ", ")
        let perCPU = r.sysbench.map { String(format: "%.0f", $0.eventsPerCPUSecond) }.joined(separator: ", ")
        s += "**Budgets.** sysbench 1.0.20 `sysbench cpu --threads=1 --time=60 run`, single-core results published by leoncode.co.uk "
            + "(\"Raspberry Pi CPU Benchmarks\"): Raspberry Pi 3B+ (Cortex-A53 @ 1.4 GHz) \(String(format: "%.2f", BoardBenchmark.pi3BPlus)) events/s, "
            + "Raspberry Pi 4 (Cortex-A72) \(String(format: "%.2f", BoardBenchmark.pi4)) events/s. This machine, the same command with "
            + "`--time=\(r.sysbench.first?.seconds ?? 0)`, twice: \(runs) events/s (\(perCPU) per CPU second of sysbench); the best per CPU "
            + "second, **\(String(format: "%.0f", r.hostEvents)) events/s**, is the denominator (a quota hands out CPU time, and on a busy machine "
            + "events per wall second undercount the core). "
        for b in r.budgets {
            s += "**\(b.name)**: \(b.derivation) → \(String(format: "%.0f", b.events)) / \(String(format: "%.0f", r.hostEvents)) = "
                + "**\(Fmt.f(100 * b.share)) % of one core** (`cpu.cfs_quota_us` \(b.quotaMicroseconds) per \(CgroupJail.periodMicroseconds)). "
        }
        s += "Why this ratio: it is the one single-core figure measured on both boards and here with the same tool. sysbench's cpu test is "
            + "integer arithmetic (primes): it does not see SIMD width (FFTW uses AVX here, NEON on the boards), caches (the A53's L2 is 512 KB "
            + "shared) or memory bandwidth, so a budget is an estimate of the board's CPU time, not a simulation of the board. "
            + "Memory is charged to the group for the pages the daemon brings in: its binary and catalogs are dropped from the page cache "
            + "before each start (`posix_fadvise` DONTNEED), but shared libraries this machine already holds (the C libraries\(r.swiftRuntime.hasPrefix("shared") ? ", and here the Swift runtime" : "")) "
            + "stay charged to whoever loaded them: the process RSS beside each number shows them.\n\n"

        // The summary, both budgets side by side.
        let pi = r.budgets
        s += "| measure | " + pi.map { "\($0.name) (\(Fmt.f(100 * $0.share)) %)" }.joined(separator: " | ") + " | target |\n"
        s += "|---|" + pi.map { _ in "---|" }.joined() + "---|\n"
        func row(_ what: String, _ target: String, main: Bool = true, _ cell: (BoardReport.Budget) -> (String, Bool?)) {
            s += "| \(what) | " + pi.map { b -> String in
                if main, b.main.failure != nil { return "the daemon failed (below) **FAIL**" }
                let (text, ok) = cell(b)
                return ok == nil ? text : "\(text) \(Fmt.passFail(ok))"
            }.joined(separator: " | ") + " | \(target) |\n"
        }
        row("start: spawn → listening; → first `Match` naming the programme", "(measured)") { b in
            ("\(Fmt.f(b.main.startSeconds, 2)) s; \(Fmt.f(b.main.firstMatchSeconds, 1)) s", nil)
        }
        row("1. daemon CPU, steady state as shipped (prerecording, following, cues; \(Fmt.f(r.phaseSeconds, 0)) s, /proc/PID/stat)", "≤ 3 % of one core (as prerecording on x86)") { b in
            let p = b.main.steady
            return (String(format: "%.2f %% of one core = **%.1f %% of the budget**; throttled in %d of %d periods (%.2f s)",
                           p.cpuPercent, p.cpuPercent / b.share, p.throttled, p.periods, p.throttledSeconds), p.cpuPercent <= 3)
        }
        row("2. dropped audio (`capture_dropped_samples` / `capture_gaps` / `capture_xruns`, cumulative) at the end of: steady, Match every 200 ms, Match every 100 ms, push", "0 (real time with no dropped audio at a Pi 3 budget)") { b in
            let m = b.main
            let phases = [m.steady, m.matchPhase, m.hotload.baselinePhase, m.hotload.pushPhase]
            let text = phases.map { "\($0.dropped)/\($0.gaps)/\($0.xruns)" }.joined(separator: ", ")
            return (text, phases.allSatisfy { $0.dropped == 0 && $0.gaps == 0 && $0.xruns == 0 })
        }
        row("… real time: audio captured (`capture_frames` ÷ the file's rate) − wall time over the same phases", "within ±\(Fmt.f(BoardReport.Phase.leadTolerance, 1)) s (frames are counted as decoded, 0.256 s at a time)") { b in
            let m = b.main
            let phases = [m.steady, m.matchPhase, m.hotload.baselinePhase, m.hotload.pushPhase]
            return (phases.map { String(format: "%+.3f s of %.0f s", $0.lead, $0.seconds) }.joined(separator: " / "), phases.allSatisfy(\.keepsRealTime))
        }
        row("3. prepared `Match` over CURVE, one call every 200 ms (a second-screen app)", "p50 ≤ 20 ms, p99 ≤ 50 ms") { b in
            let c = b.main.match
            return ("\(c.count) calls: p50 \(ms(c.p50, 2)) ms, **p99 \(ms(c.p99, 2)) ms**, max \(ms(c.latencies.max(), 2)) ms; wrong item \(c.wrongItem), no match \(c.noMatch), errors \(c.rpcErrors + c.errorOutcomes)",
                    (c.p50 ?? .infinity) <= 20 && (c.p99 ?? .infinity) <= 50 && c.rpcErrors == 0)
        }
        row("4. cue STARTED arrival at a subscriber − the programme's true crossing (on-time events): \\|error\\| p50 / p95 / max", "p95 ≤ 50 ms, every cue exactly once") { b in
            let c = b.main.cues
            let p95 = Stats.percentile(c.absErrors, 95)
            let once = c.startedOnce == c.expected && c.unexpected.isEmpty && c.expected > 0
            return ("\(ms(Stats.percentile(c.absErrors, 50))) / **\(ms(p95))** / \(ms(c.absErrors.max())) ms (signed median \(ms(Stats.median(c.errors))) ms); "
                    + "\(c.startedOnce) of \(c.expected) started exactly once over \(Fmt.f(c.windowSeconds, 0)) s, \(c.passes) pass(es); late \(c.late.count), missing \(c.missing.count), duplicates \(c.duplicates), unexpected \(c.unexpected.count)",
                    (p95 ?? .infinity) <= 50 && once)
        }
        row("5a. push of a \(Fmt.f(pi.first?.main.hotload.hours, 0))-hour catalog (BeginUpload → 1 MiB chunks → CommitUpload, admin key) while the phone calls `Match` every 100 ms", "(measured)") { b in
            let h = b.main.hotload
            if let f = h.failure { return ("push failed: \(f)", false) }
            return (String(format: "%@ in %.2f s (%.1f MB/s): chunks %.2f s, commit %.0f ms (install_milliseconds %.1f)", Fmt.bytes(h.bytes), h.push.seconds,
                           h.push.megabytesPerSecond, h.push.uploadSeconds, h.push.commitSeconds * 1000, h.push.installMilliseconds), nil)
        }
        row("5b. commit reply → first `Match` answering with an item of the new catalog", "≤ 2 s (hotload's install to first match)") { b in
            let h = b.main.hotload
            if h.failure != nil { return ("—", false) }
            return ("\(Fmt.f(h.commitToFirstMatchMs, 0)) ms (\(h.matchesUntilFirst) call(s): \(h.firstMatch))", h.push.commitSeconds * 1000 + h.commitToFirstMatchMs <= 2000)
        }
        row("5c. `Match` every 100 ms: p99 during push + swap (to 2 s after) vs the same daemon without a push just before", "≤ 50 ms (the Match p99 target)") { b in
            let h = b.main.hotload
            let slowest = h.slowest.map { String(format: "; slowest %.0f ms, sent %.2f s after BeginUpload (commit reply at %.2f s)", $0.ms, $0.at, h.commitAt - h.pushStart) } ?? ""
            return ("**\(ms(h.during.p99, 2)) ms** (\(h.during.count) calls, errors \(h.during.rpcErrors + h.during.errorOutcomes)\(slowest)) vs \(ms(h.baseline.p99, 2)) ms (\(h.baseline.count) calls); "
                    + "daemon CPU \(Fmt.f(h.pushPhase.cpuPercent, 1)) vs \(Fmt.f(h.baselinePhase.cpuPercent, 1)) % of one core, throttled in \(h.pushPhase.throttled) of \(h.pushPhase.periods) vs \(h.baselinePhase.throttled) of \(h.baselinePhase.periods) periods",
                    (h.during.p99 ?? .infinity) <= 50 && h.during.rpcErrors == 0)
        }
        row("6. largest catalog matching within 1 s p99 with no dropped audio (fresh daemon per size)", "p99 ≤ 1 s, 0 dropped", main: false) { b in
            let passed = b.sweep.filter(\.passed)
            guard let best = passed.last else { return ("none of \(b.sweep.map { Fmt.f($0.hours, 0) + " h" }.joined(separator: ", "))", false) }
            var text = "**\(Fmt.f(best.hours, 0)) h** (\(Fmt.bytes(best.bytes)); p99 \(ms(best.calls.p99, 0)) ms)"
            if let failed = b.sweep.first(where: { !$0.passed }) {
                text += "; \(Fmt.f(failed.hours, 0)) h fails: " + (failed.failure.map { String($0.split(separator: "\n").first ?? "") } ?? BoardBenchmark.failureReason(failed.phase, failed.calls))
            } else {
                text += "; \(b.sweepStop)"
            }
            return (text, true)
        }
        row("7. memory after the Match phase (corpus catalog): RSS / PSS / anonymous (smaps_rollup); catalog pages resident", "RSS ≤ 20 MB + catalog pages") { b in
            let m = b.main.memory
            return ("\(mb(m.rssKB)) / \(mb(m.pssKB)) / \(mb(m.anonymousKB)) MB; catalog \(mb(m.catalogKB)) MB", Double(m.rssKB - m.catalogKB) / 1024 <= 20)
        }
        row("… after the push (two catalogs): RSS / PSS / anonymous; catalog pages", "(measured)") { b in
            let m = b.main.memoryAfterPush
            return ("\(mb(m.rssKB)) / \(mb(m.pssKB)) / \(mb(m.anonymousKB)) MB; catalog \(mb(m.catalogKB)) MB", nil)
        }
        row("… the memory cgroup: peak charged (`memory.max_usage_in_bytes`); now: anonymous (`rss`) + page cache (`cache`, of it mapped)", "≤ \(BoardBenchmark.memoryLimit >> 20) MB (the limit)") { b in
            let m = b.main.memoryAfterPush
            return ("\(mbBytes(m.cgroupMax)) MB; \(mbBytes(m.cgroupRSS)) + \(mbBytes(m.cgroupCache)) MB (\(mbBytes(m.cgroupMappedFile)) mapped)", m.cgroupMax <= BoardBenchmark.memoryLimit && m.failures == 0)
        }
        if let t = r.memoryTrials.last(where: \.passed) {
            let failed = r.memoryTrials.first { !$0.passed }
            s += "| 7b. smallest `memory.limit_in_bytes` tried (\(r.memoryTrials.map { String($0.limitMB) }.joined(separator: ", ")) MB, from the top, at the \(pi.first?.name ?? "") CPU budget) at which the daemon starts, keeps real time with no dropped audio for \(Fmt.f(r.memoryTrialSeconds, 0)) s and answers `Match` | **\(t.limitMB) MB** (peak charged \(mbBytes(t.memory.cgroupMax)) MB, RSS \(mb(t.memory.rssKB)) MB)"
                + (failed.map { "; \($0.limitMB) MB fails" } ?? "; the smallest tried") + " | | (measured) |\n"
        } else if let first = r.memoryTrials.first {
            s += "| 7b. smallest `memory.limit_in_bytes` the daemon runs in | none tried passed (\(first.limitMB) MB: \(first.failure.map { String($0.split(separator: "\n").first ?? "") } ?? "see below")) | | (measured) |\n"
        }

        // Details per budget.
        let cueCount = r.budgets.first?.main.cues.cues ?? 0
        s += "\n**Cues** (row 4): \(cueCount) on the programme's reference (points and 3 s ranges, about every 10 s with up to 4 s of jitter, from 8 s after "
            + "the file's start to 6 s before its end), judged from the start to the push. Truth: the programme file's first open (inotify IN_OPEN, "
            + "timestamped on this process's monotonic clock by a thread that waits for it; the paced file source reads its clock just before "
            + "opening the file and paces every sample from that reading) plus the cue's start minus the file's start in the reference "
            + "(\(Fmt.f(r.programmeStart, 0)) s); loop pass k starts k × the file's length later (the source opens the file again at each pass but "
            + "keeps pacing from its first reading; how late that reopen comes is shown). Error = the STARTED event's arrival at a subscriber in this "
            + "process (CURVE, loopback) − truth: what a second screen sees. A start the daemon itself reports ≥ 0.1 s late (joined inside a range, "
            + "or after the jump back at the loop) is listed, not counted in the error statistics. The daemon fires from what it hears: a match "
            + "every second, stream time put on its clock through the moment it read the newest audio.\n\n"
        s += "**Catalog sizes** (row 6): each the corpus references plus filler references made as in the scale benchmark, the only catalog of a "
            + "fresh daemon at the budget (its pages dropped from the page cache first, so the start reads and checks it from disk); `Match` every "
            + "200 ms once the programme is named; dropped audio counted from the start, catalog check included; 200 h only when 100 h's p99 is "
            + "under 250 ms.\n"
        for b in r.budgets {
            s += "\n### \(b.name): \(Fmt.f(100 * b.share)) % of one core\n\n"
            if let f = b.main.failure {
                s += "The daemon with the cue catalog failed:\n\n```\n\(f)\n```\n\n"
            } else {
                let c = b.main.cues
                s += "| | |\n|---|---|\n"
                s += "| signed errors (ms), on-time STARTED | " + (c.errors.isEmpty ? "—" : c.errors.map { String(format: "%+.1f", $0) }.joined(separator: ", ")) + " |\n"
                if !c.late.isEmpty { s += "| STARTED marked late by the daemon (not in the statistics) | \(c.late.joined(separator: "; ")) |\n" }
                if !c.missing.isEmpty { s += "| missing | \(c.missing.joined(separator: ", ")) |\n" }
                if !c.unexpected.isEmpty { s += "| unexpected (s after the first open) | \(c.unexpected.joined(separator: ", ")) |\n" }
                s += "| loop passes seen; the reopen's lag behind the pass's paced start (the read that crossed the file's end) | \(c.passes); "
                    + (c.reopenLags.isEmpty ? "no reopen in the window" : c.reopenLags.map { String(format: "%+.1f ms", $0) }.joined(separator: ", "))
                    + (c.restarts > 0 ? "; \(c.restarts) open(s) away from a pass boundary (the source restarted)" : "") + " |\n"
                let total = b.main.threadSeconds
                s += "| where the CPU goes in the steady phase (/proc/PID/task/*/stat, % of one core) | "
                    + b.main.threads.filter { $0.seconds > 0 }.prefix(8).map { String(format: "`%@` %.2f %%", $0.name as NSString, 100 * $0.seconds / total) }.joined(separator: ", ") + " |\n"
                let h = b.main.hotload
                if !h.pushThreads.isEmpty, h.pushPhase.seconds > 0 {
                    s += "| where the CPU goes during the push (to 2 s after the first answer from it, \(Fmt.f(h.pushPhase.seconds, 1)) s) | "
                        + h.pushThreads.filter { $0.seconds > 0 }.prefix(8).map { String(format: "`%@` %.1f %%", $0.name as NSString, 100 * $0.seconds / h.pushPhase.seconds) }.joined(separator: ", ") + " |\n"
                }
                let mp = b.main.matchPhase
                s += String(format: "| daemon CPU during the Match phase (%.0f s) | %.2f %% of one core = %.1f %% of the budget; throttled in %d of %d periods (%.2f s) |\n",
                            mp.seconds, mp.cpuPercent, mp.cpuPercent / b.share, mp.throttled, mp.periods, mp.throttledSeconds)
            }
            s += "\nCatalog sizes: \(b.sweepStop).\n\n"
            s += "| catalog | start (spawn → listening) | `Match` p50 / p99 / max | wrong / no match / errors | capture − wall time; dropped / gaps / xruns | daemon CPU | peak charged / RSS | p99 ≤ 1 s, 0 dropped |\n"
            s += "|---|---|---|---|---|---|---|---|\n"
            for pt in b.sweep {
                if let f = pt.failure, pt.calls.latencies.isEmpty {
                    s += "| \(Fmt.f(pt.hours, 1)) h (\(Fmt.bytes(pt.bytes))) | \(f.split(separator: "\n").prefix(1).joined()) | | | | | | **FAIL** |\n"
                    continue
                }
                s += "| \(Fmt.f(pt.hours, 1)) h (\(Fmt.bytes(pt.bytes))) | \(Fmt.f(pt.startSeconds, 2)) s "
                    + "| \(ms(pt.calls.p50)) / \(ms(pt.calls.p99)) / \(ms(pt.calls.latencies.max())) ms (\(pt.calls.count) calls) "
                    + "| \(pt.calls.wrongItem) / \(pt.calls.noMatch) / \(pt.calls.rpcErrors + pt.calls.errorOutcomes) "
                    + "| \(String(format: "%+.3f s of %.0f s", pt.phase.lead, pt.phase.seconds)); \(pt.phase.dropped) / \(pt.phase.gaps) / \(pt.phase.xruns) "
                    + "| \(Fmt.f(pt.phase.cpuPercent, 1)) % (throttled \(pt.phase.throttled) of \(pt.phase.periods)) "
                    + "| \(mbBytes(pt.memory.cgroupMax)) / \(mb(pt.memory.rssKB)) MB | \(Fmt.passFail(pt.passed)) |\n"
            }
        }

        s += "\n### The least memory it runs in\n\n"
        s += "At the \(pi.first?.name ?? "") CPU budget, the daemon with the cue catalog in a fresh state folder under smaller and smaller "
            + "`memory.limit_in_bytes` (no swap: anonymous memory cannot leave; clean file pages — binary, catalog — are reclaimed under "
            + "the limit and read again when touched), stopping at the first that fails. It passes when it starts, names the programme, "
            + "keeps real time with no dropped audio for \(Fmt.f(r.memoryTrialSeconds, 0)) s and answers a `Match` every second. "
            + "The limit counts what is charged to the group: shared libraries already in this machine's page cache are not, "
            + "so a board also needs their resident pages (in the RSS column).\n\n"
        s += "| `memory.limit_in_bytes` | started (spawn → listening) | `Match` answered (wrong / no match / errors) | capture − wall time; dropped / gaps / xruns | peak charged (`max_usage`) | charged now: anonymous + page cache | process RSS / anonymous | limit hits (`failcnt`) / OOM kills | |\n"
        s += "|---|---|---|---|---|---|---|---|---|\n"
        for t in r.memoryTrials {
            if !t.started {
                s += "| \(t.limitMB) MB | no: \((t.failure ?? "").replacingOccurrences(of: "\n", with: " ").prefix(300)) | | | \(mbBytes(t.memory.cgroupMax)) MB | | | \(t.memory.failures) / \(t.oomKills) | **FAIL** |\n"
                continue
            }
            s += "| \(t.limitMB) MB | in \(Fmt.f(t.startSeconds, 2)) s | \(t.calls.latencies.count) of \(t.calls.count) (\(t.calls.wrongItem) / \(t.calls.noMatch) / \(t.calls.rpcErrors + t.calls.errorOutcomes)); p99 \(ms(t.calls.p99)) ms "
                + "| \(String(format: "%+.3f s of %.0f s", t.phase.lead, t.phase.seconds)); \(t.phase.dropped) / \(t.phase.gaps) / \(t.phase.xruns) "
                + "| \(mbBytes(t.memory.cgroupMax)) MB | \(mbBytes(t.memory.cgroupRSS)) + \(mbBytes(t.memory.cgroupCache)) MB "
                + "| \(mb(t.memory.rssKB)) / \(mb(t.memory.anonymousKB)) MB | \(t.memory.failures) / \(t.oomKills) "
                + "| \(Fmt.passFail(t.passed))\(t.failure.map { " (\($0.split(separator: "\n").first ?? ""))" } ?? "") |\n"
        }
        return s
    }
}
