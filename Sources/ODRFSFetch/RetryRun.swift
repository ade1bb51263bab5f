import Logging
import ODRFSCore

/// One transfer's attempts under a ``RetryPolicy``: its progress mark (kept across
/// attempts), the failures in a row and when the current run of "nobody there" began.
/// ``perform(fetching:logger:_:giveUp:)`` is the fetcher's one retry loop.
public struct RetryRun: Sendable {
    public let policy: RetryPolicy
    /// Progress at the low-speed limit across every attempt of the transfer.
    public var progress: ProgressMark
    public private(set) var attempts = 0
    private var failuresInARow = 0
    /// When the current run of unreachable failures began; nil after any answer.
    private var unreachableSince: ContinuousClock.Instant?

    public init(_ policy: RetryPolicy, now: ContinuousClock.Instant = .now) {
        self.policy = policy
        self.progress = ProgressMark(lowSpeedLimit: policy.lowSpeedLimit, now: now)
    }

    /// How an attempt that did not finish the transfer failed, as far as retrying goes.
    public enum Failure: Sendable, Equatable {
        /// The server had a bad moment; it asked to wait `retryAfter`, if it said.
        case transient(retryAfter: Duration?)
        /// No connection could be made at all.
        case unreachable
    }

    /// Why a transfer stops retrying; the caller words the error for its kind of transfer.
    public enum GiveUp: Sendable, Equatable {
        /// Nobody was there for ``RetryPolicy/unreachableAfter``; `lasted` since the first such failure.
        case unreachable(lasted: Duration)
        /// The server asked to wait `retryAfter`, beyond the deadline.
        case retryAfterBeyondDeadline(Duration)
        /// ``RetryPolicy/deadline`` passed without progress.
        case noProgress
        /// ``RetryPolicy/failuresInARowLimit`` attempts in a row failed without a new byte.
        case tooManyFailures(Int)
    }

    /// What to do after a failed attempt.
    public enum Verdict: Sendable, Equatable {
        case retry(after: Duration)
        case giveUp(GiveUp)
    }

    /// Marks the start of an attempt; returns its start instant for ``failed(_:startedAt:movedForward:now:using:)``.
    public mutating func begin(now: ContinuousClock.Instant = .now) -> ContinuousClock.Instant {
        attempts += 1
        return now
    }

    /// Decides after a failed attempt that began at `started`; `movedForward`: it delivered new bytes.
    public mutating func failed(_ failure: Failure, startedAt started: ContinuousClock.Instant, movedForward: Bool,
                                now: ContinuousClock.Instant = .now,
                                using generator: inout some RandomNumberGenerator) -> Verdict {
        let retryAfter: Duration?
        switch failure {
        case .transient(let wait):
            retryAfter = wait
            unreachableSince = nil
        case .unreachable:
            retryAfter = nil
            unreachableSince = unreachableSince ?? started
        }
        // A transfer that moved forward starts its backoff afresh.
        failuresInARow = movedForward ? 1 : failuresInARow + 1
        if let limit = policy.failuresInARowLimit, failuresInARow >= limit { return .giveUp(.tooManyFailures(failuresInARow)) }
        var delay = max(policy.delay(afterFailure: failuresInARow, using: &generator), retryAfter ?? .zero)
        if let since = unreachableSince {
            // Nobody there: retry only within the short budget, the last try at its end.
            guard now < since + policy.unreachableAfter else { return .giveUp(.unreachable(lasted: now - since)) }
            delay = min(delay, since + policy.unreachableAfter - now)
        }
        let deadline = progress.instant + policy.deadline
        if now + delay >= deadline {
            if let retryAfter, retryAfter == delay { return .giveUp(.retryAfterBeyondDeadline(retryAfter)) }
            // The deadline has not passed yet: one last try at it (the whole timeout is used).
            guard now + .milliseconds(50) < deadline else { return .giveUp(.noProgress) }
            delay = deadline - now
        }
        return .retry(after: delay)
    }

    /// Runs `attempt` until it succeeds, a failure is fatal, or the policy gives up (then
    /// `giveUp` words the error from the reason, the last failure's text and the attempts). Each retry is
    /// logged (notice; debug while nobody is there) and waited for with
    /// ``RetryPolicy/pause(_:fetching:)``. `attempt` credits the bytes it delivers to the
    /// progress mark it is handed; a credit counts as moving forward.
    mutating func perform<Result>(
        fetching shown: String,
        logger: Logger,
        retrying message: Logger.Message = "fetch attempt failed; retrying",
        _ attempt: (inout ProgressMark) async throws(AttemptFailure) -> Result,
        giveUp: (GiveUp, String, Int) -> FetchError
    ) async throws(FetchError) -> Result {
        var random = SystemRandomNumberGenerator()
        while true {
            let started = begin()
            let before = progress.credited
            let failure: Failure
            let reason: String
            do throws(AttemptFailure) {
                return try await attempt(&progress)
            } catch {
                switch error {
                case .fatal(let error): throw error
                case .transient(let text, let wait): (failure, reason) = (.transient(retryAfter: wait), text)
                case .unreachable(let text): (failure, reason) = (.unreachable, text)
                }
            }
            switch failed(failure, startedAt: started, movedForward: progress.credited > before, using: &random) {
            case .giveUp(let why):
                throw giveUp(why, reason, attempts)
            case .retry(let delay):
                logger.log(level: failure == .unreachable ? .debug : .notice, message, metadata: [
                    "fetch.url": "\(shown)", "fetch.attempt": "\(attempts)", "fetch.error": "\(reason)",
                    "fetch.retry_in": "\(delay)",
                ])
                try await RetryPolicy.pause(delay, fetching: shown)
            }
        }
    }
}
