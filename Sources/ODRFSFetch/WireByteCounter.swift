import Synchronization

/// Bytes received from origins for pack downloads, compressed as they travelled: what the
/// network (and a per-byte CDN bill) saw, against the uncompressed bytes the cache counts.
/// Shared by every download of a mount (update assemblies too); read by `odrfs status`.
public final class WireByteCounter: Sendable {
    private let total = Atomic<Int64>(0)

    public init() {}

    /// Bytes received so far, since the mount started.
    public var bytes: Int64 { total.load(ordering: .relaxed) }

    public func add(_ count: Int64) {
        total.wrappingAdd(count, ordering: .relaxed)
    }
}

/// The bytes one download received from the origin, handed on in pieces: whoever reports
/// them (the `odrfs_fetched_bytes_total` counter, by the download's current cause) takes
/// what is not yet reported, at each progress report and once more at the end, so the
/// counter matches what the origin sent, compressed as it travelled.
public final class DownloadWireTally: Sendable {
    private let received = Atomic<Int64>(0)
    private let reported = Atomic<Int64>(0)

    public init() {}

    public func add(_ count: Int64) {
        received.wrappingAdd(count, ordering: .relaxed)
    }

    /// Bytes received and not yet taken; each byte is taken once.
    public func takeUnreported() -> Int64 {
        let now = received.load(ordering: .acquiring)
        let before = reported.exchange(now, ordering: .acquiringAndReleasing)
        return max(0, now - before)
    }
}
