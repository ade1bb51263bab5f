import FaultOriginSupport
import NIOCore
import Foundation
import ODRFSCore
import Testing
import TestSupport
@testable import ODRFSFetch

/// Issue 26, item 2: a server that sends a trickle and stalls on every attempt held an open
/// (and `odrfs mount`) for ever, since each resumed attempt's few bytes reset the deadline.
/// Bytes arriving slower than the low-speed limit are no progress, across attempts.
@Suite(.timingSensitive, .timeLimit(.minutes(1)))
struct LowSpeedLimitTests {
    @Test func bytesAtTheLimitKeepTheDeadlineAtThePresent() {
        let start = ContinuousClock.now
        var transfer = ProgressMark(lowSpeedLimit: .kibibytes(1))
        let began = transfer.instant
        // 1 KiB a second for ten seconds: never behind.
        for second in 1...10 {
            transfer.credit(1024, now: start + .seconds(second))
            #expect(transfer.instant == min(start + .seconds(second), began + .seconds(second)))
        }
        // A trickle: 100 bytes in each of the next 30 seconds moves the mark by 100/1024 s each.
        let mark = transfer.instant
        for second in 11...40 { transfer.credit(100, now: start + .seconds(second)) }
        let moved = transfer.instant - mark
        #expect(moved > .milliseconds(2900) && moved < .milliseconds(3000), "\(moved)")
        // A fast burst catches up at once, but never past now.
        transfer.credit(10_000_000, now: start + .seconds(41))
        #expect(transfer.instant == start + .seconds(41))
        // Absurd counts do not trap.
        transfer.credit(.max, now: start + .seconds(42))
        #expect(transfer.instant == start + .seconds(42))
        // Limit 0: every byte is progress.
        var unlimited = ProgressMark(lowSpeedLimit: .zero)
        unlimited.credit(1, now: start + .seconds(50))
        #expect(unlimited.instant == start + .seconds(50))
    }

    /// 100 new bytes per attempt, then silence, on every attempt: the fetch fails after
    /// about the deadline (5 s here: 2 s left a loaded machine's first answer no time to
    /// arrive) instead of resuming for ever, and says why.
    @Test func aTrickleOnEveryAttemptFailsAfterTheDeadline() async throws {
        let file = testBytes(1_000_000)
        try await withFaultOrigin { server in
            server.setFile("/packs/p.tar", file)
            server.script("/packs/p.tar", Array(repeating: .trickle(after: 100), count: 10_000))
            var options = OriginOptions(fetchDeadline: .seconds(5))
            options.lowSpeedLimit = .kibibytes(1)
            let started = ContinuousClock.now
            try await withHTTPOrigin(server.baseURL, options: options) { origin in
                let error = await #expect(throws: FetchError.self) {
                    _ = try await origin.bytes(of: "packs/p.tar", expected: file.count)
                }
                #expect(error?.kind == .unreachable)
                #expect(error?.message.contains("--low-speed-limit") == true, "\(String(describing: error))")
            }
            let took = ContinuousClock.now - started
            // The deadline (5 s) plus the last attempt's read timeout and backoff; never the
            // minutes a resume-per-100-bytes loop over a megabyte takes.
            #expect(took < .seconds(30), "\(took)")
            let attempts = server.requests(of: "/packs/p.tar").count
            #expect(attempts >= 2, "resumed \(attempts) times")
        }
    }

    /// An update's multi-range request, answered with a few bytes and a reset on every
    /// attempt: each attempt delivered new bytes, so the retry count never reached three
    /// (hundreds of requests a minute, for ever). Now it fails after about the deadline.
    @Test func aMultiRangeTrickleFailsAfterTheDeadline() async throws {
        let file = testBytes(1_000_000)
        try await withFaultOrigin { server in
            server.setFile("/packs/p.tar", file)
            server.script("/packs/p.tar", Array(repeating: .reset(after: 400), count: 10_000))
            var options = OriginOptions(fetchDeadline: .seconds(5))
            options.lowSpeedLimit = .kibibytes(1)
            let started = ContinuousClock.now
            try await withHTTPOrigin(server.baseURL, options: options) { origin in
                var received = 0
                let error = await #expect(throws: FetchError.self) {
                    try await origin.download("packs/p.tar", ranges: [0..<500_000, 600_000..<900_000],
                                              fileBytes: ByteCount(Int64(file.count))) { (_: Int64, bytes: ByteBuffer) throws(FetchError) in
                        received += bytes.readableBytes
                    }
                }
                #expect(error?.message.contains("--low-speed-limit") == true, "\(String(describing: error))")
                #expect(received > 0, "the trickle delivered nothing; the test shows nothing")
            }
            let took = ContinuousClock.now - started
            #expect(took < .seconds(30), "\(took)")
        }
    }

    /// One byte every 100 ms on one connection: the read timeout never fires, so only a
    /// check as bytes arrive ends it (the review of issue 26 found this hole).
    @Test func aDripOnOneConnectionFailsAfterTheDeadline() async throws {
        let file = testBytes(100_000)
        try await withFaultOrigin { server in
            server.setFile("/packs/p.tar", file)
            server.script("/packs/p.tar", Array(repeating: .drip(milliseconds: 100), count: 1000))
            var options = OriginOptions(fetchDeadline: .seconds(5))
            options.lowSpeedLimit = .kibibytes(1)
            let started = ContinuousClock.now
            try await withHTTPOrigin(server.baseURL, options: options) { origin in
                let error = await #expect(throws: FetchError.self) {
                    _ = try await origin.bytes(of: "packs/p.tar", expected: file.count)
                }
                #expect(error?.message.contains("--low-speed-limit") == true, "\(String(describing: error))")
                // The same through a range request (an update's span).
                let ranged = await #expect(throws: FetchError.self) {
                    try await origin.download("packs/p.tar", range: 0..<50_000, fileBytes: ByteCount(Int64(file.count))) { (_: ByteBuffer) throws(FetchError) in }
                }
                #expect(ranged?.message.contains("--low-speed-limit") == true, "\(String(describing: ranged))")
            }
            let took = ContinuousClock.now - started
            #expect(took < .seconds(45), "\(took)")
        }
    }
}
