import FaultOriginSupport
import Foundation
import NIOCore
import ODRFSCore
import Testing
import TestSupport
@testable import ODRFSFetch

/// The one retry policy every transfer uses (issue 22, item 3): backoff bounds with
/// jitter, Retry-After, the deadline without progress, the unreachable budget, the
/// failures-in-a-row limit, and cancellation during the wait.
@Suite(.timeLimit(.minutes(1)))
struct RetryPolicyTests {
    static func policy(deadline: Duration = .seconds(10), unreachableAfter: Duration = .seconds(2)) -> RetryPolicy {
        RetryPolicy(deadline: deadline, lowSpeedLimit: .kibibytes(1), unreachableAfter: unreachableAfter)
    }

    @Test func backoffStaysWithinItsJitteredBounds() {
        var policy = Self.policy()
        (policy.initialDelay, policy.maximumDelay, policy.jitter) = (.milliseconds(100), .seconds(1), 0.25...0.75)
        var random = SystemRandomNumberGenerator()
        for failures in 1...30 {
            let ceiling = min(Duration.milliseconds(100) * (1 << min(failures - 1, 20)), .seconds(1))
            for _ in 0..<20 {
                let delay = policy.delay(afterFailure: failures, using: &random)
                #expect(delay >= ceiling * 0.25 && delay <= ceiling * 0.75, "failure \(failures): \(delay)")
            }
        }
    }

    @Test func retryAfterIsAFloorOnTheWait() {
        let start = ContinuousClock.now
        var run = RetryRun(Self.policy(), now: start)
        var random = SystemRandomNumberGenerator()
        let started = run.begin(now: start)
        #expect(run.failed(.transient(retryAfter: .seconds(3)), startedAt: started, movedForward: false,
                           now: start, using: &random) == .retry(after: .seconds(3)))
        // Beyond the deadline: no point waiting, the transfer gives up at once and says why.
        let again = run.begin(now: start + .seconds(3))
        #expect(run.failed(.transient(retryAfter: .seconds(3600)), startedAt: again, movedForward: false,
                           now: start + .seconds(3), using: &random) == .giveUp(.retryAfterBeyondDeadline(.seconds(3600))))
    }

    @Test func theDeadlineCountsFromTheLastProgressAndIsUsedWhole() {
        let start = ContinuousClock.now
        var run = RetryRun(Self.policy(deadline: .seconds(2)), now: start)
        var random = SystemRandomNumberGenerator()
        // Close to the deadline the last wait ends exactly at it: one last try there.
        var began = run.begin(now: start + .milliseconds(1900))
        #expect(run.failed(.transient(retryAfter: nil), startedAt: began, movedForward: false,
                           now: start + .milliseconds(1900), using: &random) == .retry(after: .milliseconds(100)))
        // At the deadline without a byte: no progress.
        began = run.begin(now: start + .seconds(2))
        #expect(run.failed(.transient(retryAfter: nil), startedAt: began, movedForward: false,
                           now: start + .seconds(2), using: &random) == .giveUp(.noProgress))
        // Bytes at the low-speed limit move the mark: the same failure is retried.
        var moving = RetryRun(Self.policy(deadline: .seconds(2)), now: start)
        moving.progress.credit(1 << 20, now: start + .seconds(2))
        began = moving.begin(now: start + .seconds(2))
        guard case .retry = moving.failed(.transient(retryAfter: nil), startedAt: began, movedForward: true,
                                          now: start + .seconds(2), using: &random) else {
            Issue.record("a transfer that made progress was not retried")
            return
        }
    }

    @Test func nobodyThereIsRetriedOnlyForTheUnreachableBudget() {
        let start = ContinuousClock.now
        var run = RetryRun(Self.policy(unreachableAfter: .seconds(2)), now: start)
        var random = SystemRandomNumberGenerator()
        var began = run.begin(now: start)
        guard case .retry(let first) = run.failed(.unreachable, startedAt: began, movedForward: false,
                                                  now: start + .milliseconds(1950), using: &random) else {
            Issue.record("the first unreachable failure was not retried")
            return
        }
        // The wait is cut to end with the budget.
        #expect(first <= .milliseconds(50))
        began = run.begin(now: start + .seconds(2))
        #expect(run.failed(.unreachable, startedAt: began, movedForward: false, now: start + .seconds(2),
                           using: &random) == .giveUp(.unreachable(lasted: .seconds(2))))
    }

    @Test func failuresInARowEndATransferUnlessItMovesForward() {
        let start = ContinuousClock.now
        var run = RetryRun(Self.policy().limitingFailuresInARow(to: 3), now: start)
        var random = SystemRandomNumberGenerator()
        var verdicts: [Bool] = []
        for moved in [false, false, true, false, false] {
            let began = run.begin(now: start)
            verdicts.append(run.failed(.transient(retryAfter: nil), startedAt: began, movedForward: moved, now: start, using: &random) != .giveUp(.tooManyFailures(3)))
        }
        #expect(verdicts == [true, true, true, true, false])
    }

    @Test func cancellationDuringTheWaitEndsItAtOnce() async {
        let start = ContinuousClock.now
        let waiting = Task { () async -> FetchError? in
            do throws(FetchError) {
                try await RetryPolicy.pause(.seconds(30), fetching: "a pack")
                return nil
            } catch {
                return error
            }
        }
        try? await Task.sleep(for: .milliseconds(100))
        waiting.cancel()
        let error = await waiting.value
        #expect(error?.kind == .cancelled)
        // Well short of the 30 s pause (the margin is for a loaded machine).
        #expect(ContinuousClock.now - start < .seconds(15))
    }
}

/// The policy under a range fetch (issue 22, item 3): ranges used to retry on their own
/// fixed 200/400 ms schedule, ignoring the origin's Retry-After.
@Suite(.timeLimit(.minutes(1)))
struct RangeRetryTests {
    let path = "/packs/p.tar"
    let file = testBytes(100_000, seed: 5)

    @Test func aRangeFetchWaitsTheOriginsRetryAfter() async throws {
        try await withFaultOrigin { server in
            server.setFile(path, file)
            server.script(path, [.busy(status: 503, retryAfter: "2"), .serve])
            try await withHTTPOrigin(server.baseURL) { origin in
                var got: [UInt8] = []
                try await origin.download("packs/p.tar", range: 1000..<50_000, fileBytes: ByteCount(Int64(file.count))) { (bytes: ByteBuffer) throws(FetchError) in
                    got.append(contentsOf: bytes.readableBytesView)
                }
                #expect(got == Array(file[1000..<50_000]))
            }
            let seen = server.requests(of: path)
            try #require(seen.count == 2)
            #expect(seen[1].at - seen[0].at >= .seconds(1.9), "retried after \(seen[1].at - seen[0].at)")
        }
    }

    @Test func aCancelledRangeRetryEndsPromptly() async throws {
        try await withFaultOrigin { server in
            server.setFile(path, file)
            server.script(path, Array(repeating: .busy(status: 503, retryAfter: "15"), count: 5))
            try await withHTTPOrigin(server.baseURL, options: OriginOptions(fetchDeadline: .seconds(40))) { origin in
                let size = ByteCount(Int64(file.count))
                let fetching = Task { () async -> FetchError? in
                    do throws(FetchError) {
                        try await origin.download("packs/p.tar", range: 0..<1000, fileBytes: size) { (_: ByteBuffer) throws(FetchError) in }
                        return nil
                    } catch {
                        return error
                    }
                }
                // Until the first answer has come and the fetch is waiting.
                let deadline = ContinuousClock.now + .seconds(10)
                while server.requests(of: path).isEmpty && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
                try await Task.sleep(for: .milliseconds(300))
                let cancelled = ContinuousClock.now
                fetching.cancel()
                let error = await fetching.value
                #expect(error?.kind == .cancelled, "\(String(describing: error))")
                // Well before the origin's 15 s Retry-After (the margin is for a loaded machine).
                #expect(ContinuousClock.now - cancelled < .seconds(7))
            }
            #expect(server.requests(of: path).count == 1, "no attempt after the cancellation")
        }
    }
}
