import ODRFSCore

/// When a fetch last made progress, by the low-speed rule of curl's `--speed-limit` and
/// CernVM-FS's `CVMFS_LOW_SPEED_LIMIT`: the mark starts when the fetch begins and moves
/// forward by the time the bytes received since would take at `lowSpeedLimit`, never past
/// now. A transfer at or above the limit keeps the mark at the present; a trickle below it
/// lets the mark fall behind, across attempts, until `mark + fetch deadline` passes. So a
/// server that sends a hundred bytes and stalls on every attempt fails the fetch after
/// about the deadline, instead of resetting it with every resumed attempt.
struct ProgressMark: Sendable {
    /// The instant a fetch's deadline counts from.
    private(set) var instant: ContinuousClock.Instant
    /// Bytes per second below which arriving bytes do not keep the fetch alive; 0: any byte does.
    let lowSpeedLimit: Int64

    init(lowSpeedLimit: ByteCount, now: ContinuousClock.Instant = .now) {
        self.instant = now
        self.lowSpeedLimit = max(0, lowSpeedLimit.value)
    }

    /// Credits `count` new bytes that arrived `now`.
    mutating func credit(_ count: Int64, now: ContinuousClock.Instant = .now) {
        guard count > 0 else { return }
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
