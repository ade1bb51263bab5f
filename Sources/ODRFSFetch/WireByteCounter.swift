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
