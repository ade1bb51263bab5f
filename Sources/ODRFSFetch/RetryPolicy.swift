import Foundation
import ODRFSCore

/// The one rule every transfer of the fetcher retries by: whole files, single ranges,
/// multi-range requests and a mirror set going round its servers again (as the AWS SDKs'
/// standard retry strategy and gcsfuse's storage retry keep one value for every call).
///
/// - Between attempts it waits an exponential backoff (``initialDelay`` doubling up to
///   ``maximumDelay``) scaled by a random factor in ``jitter``, so that many mounts whose
///   origin comes back at once do not return in lock step; a server's `Retry-After` is a
///   floor on that wait.
/// - A transfer fails when ``deadline`` (`--fetch-timeout`) passes without progress: new
///   bytes at ``lowSpeedLimit`` (`--low-speed-limit`) or faster, across attempts, by the
///   rule of ``ProgressMark`` (a trickle is no progress). The last wait is cut to end at
///   the deadline, so the whole timeout is used; a `Retry-After` beyond it fails at once.
/// - While no connection can be made at all, it retries only for ``unreachableAfter``:
///   nobody is there, and an open must not wait half a minute to learn it.
/// - ``failuresInARowLimit``, when set, ends a transfer after that many failed attempts
///   without a new byte (ranges and multi-range requests: three).
/// - Cancellation ends the wait at once with `.cancelled` (``pause(_:fetching:)``), never
///   swallowed.
///
/// The state of one transfer under the policy is a ``RetryRun``.
public struct RetryPolicy: Sendable {
    public var initialDelay: Duration = .milliseconds(200)
    public var maximumDelay: Duration = .seconds(5)
    /// The random factor each backoff delay is scaled by.
    public var jitter: ClosedRange<Double> = 0.5...1.0
    /// How long a transfer may go without progress (`--fetch-timeout`).
    public var deadline: Duration
    /// Below this many bytes per second arriving bytes are no progress (`--low-speed-limit`).
    public var lowSpeedLimit: ByteCount
    /// How long a run of "nobody there" failures is retried.
    public var unreachableAfter: Duration
    /// Failed attempts in a row, without a new byte, after which a transfer gives up; nil: none.
    public var failuresInARowLimit: Int?

    public init(deadline: Duration = .seconds(30), lowSpeedLimit: ByteCount = OriginOptions.defaultLowSpeedLimit,
                unreachableAfter: Duration = .milliseconds(2500), failuresInARowLimit: Int? = nil) {
        self.deadline = deadline
        self.lowSpeedLimit = lowSpeedLimit
        self.unreachableAfter = unreachableAfter
        self.failuresInARowLimit = failuresInARowLimit
    }

    /// The policy an origin made with `options` retries by.
    public init(_ options: OriginOptions) {
        self.init(deadline: options.fetchDeadline, lowSpeedLimit: options.lowSpeedLimit,
                  unreachableAfter: options.unreachableAfter)
    }

    /// The same policy, ending a transfer after `limit` failed attempts in a row.
    public func limitingFailuresInARow(to limit: Int) -> RetryPolicy {
        var policy = self
        policy.failuresInARowLimit = max(1, limit)
        return policy
    }

    /// The delay after the `failures`-th consecutive failure (1-based): `initial · 2^(n-1)`,
    /// capped at `maximumDelay`, then scaled by a random factor in ``jitter``.
    public func delay(afterFailure failures: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let exponent = min(max(failures - 1, 0), 20)
        let capped = min(initialDelay * (1 << exponent), maximumDelay)
        return capped * Double.random(in: jitter, using: &generator)
    }

    /// Waits `delay` between attempts; a cancelled task ends the wait at once with
    /// `.cancelled` naming what was being fetched.
    public static func pause(_ delay: Duration, fetching what: String) async throws(FetchError) {
        do {
            try await Task.sleep(for: delay)
        } catch {
            throw FetchError(.cancelled, "fetch of \(what) was cancelled")
        }
    }

    /// "1.2 s": durations in messages, without Duration's attosecond digits.
    static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return String(format: "%.1f s", Double(milliseconds) / 1000)
    }
}
