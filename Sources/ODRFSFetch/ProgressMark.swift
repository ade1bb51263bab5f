import ODRFSCore

/// When a fetch last made progress, by the low-speed rule of curl's `--speed-limit` and
/// CernVM-FS's `CVMFS_LOW_SPEED_LIMIT`: the mark starts when the fetch begins and moves
/// forward by the time the bytes received since would take at `lowSpeedLimit`, never past
/// now. A transfer at or above the limit keeps the mark at the present; a trickle below it
/// lets the mark fall behind, across attempts, until `mark + fetch deadline` passes. So a
/// server that sends a hundred bytes and stalls on every attempt fails the fetch after
/// about the deadline, instead of resetting it with every resumed attempt.
public struct ProgressMark: Sendable {
    /// The instant a fetch's deadline counts from.
    public private(set) var instant: ContinuousClock.Instant
    /// Bytes per second below which arriving bytes do not keep the fetch alive; 0: any byte does.
    public let lowSpeedLimit: Int64
    /// Every byte credited so far, however slowly it came: whether an attempt moved forward.
    public private(set) var credited: Int64 = 0

    public init(lowSpeedLimit: ByteCount, now: ContinuousClock.Instant = .now) {
        self.instant = now
        self.lowSpeedLimit = max(0, lowSpeedLimit.value)
    }

    /// Whether `deadline` has passed since the mark: the fetch has made no progress.
    public func hasLapsed(_ deadline: Duration, now: ContinuousClock.Instant = .now) -> Bool {
        now >= instant + deadline
    }

    /// Time the fetch spent handing bytes on (a disk write, a rate limit) is not the
    /// server's: the mark moves forward by it, never past now.
    public mutating func excuse(_ duration: Duration, now: ContinuousClock.Instant = .now) {
        guard duration > .zero else { return }
        instant = min(max(instant, now), instant + duration)
    }

    /// Credits `count` new bytes that arrived `now`.
    public mutating func credit(_ count: Int64, now: ContinuousClock.Instant = .now) {
        guard count > 0 else { return }
        credited = credited.addingReportingOverflow(count).partialValue
        guard lowSpeedLimit > 0 else {
            instant = max(instant, now)
            return
        }
        // count / limit seconds, in nanoseconds; a product too large for Int64 is far past now anyway.
        let (scaled, overflow) = count.multipliedReportingOverflow(by: 1_000_000_000)
        let credit = overflow ? Duration.seconds(Int64.max / 1_000_000_000) : .nanoseconds(scaled / lowSpeedLimit)
        instant = min(max(instant, now), instant + credit)
    }
}
