import Synchronization

/// Ranges of a pack that readers wait for ahead of its stream: a read of the central
/// directory at the end of a `.pk3` or `.zip`, the first bytes of a file deep in a pack. The
/// mount asks (``request(_:)``); the download's ``PackPipeline`` fetches the chunks (or
/// frames) holding each range by `Range` while the pack keeps streaming, proves them by the
/// file index's chunk digests or the manifest's chunk hashes, and releases them to readers.
///
/// A range already asked for and not yet served is not asked again. Requests made before the
/// download starts wait for it; those left when it ends are dropped (the pack is local then,
/// or failed).
///
/// Thread safety: any thread may request; one download serves.
public final class SpanDemands: Sendable {
    private let stream: AsyncStream<Range<Int64>>
    private let continuation: AsyncStream<Range<Int64>>.Continuation
    private let pending = Mutex<[Range<Int64>]>([])

    /// At most this many ranges wait at once; more are dropped (their readers wait for the stream).
    public static let maximumPending = 64

    public init() {
        (stream, continuation) = AsyncStream.makeStream(of: Range<Int64>.self, bufferingPolicy: .bufferingOldest(Self.maximumPending))
    }

    /// Asks for `range`; false when a pending request already covers it (or too many wait).
    @discardableResult
    public func request(_ range: Range<Int64>) -> Bool {
        guard !range.isEmpty else { return false }
        let added = pending.withLock { pending -> Bool in
            if pending.contains(where: { $0.lowerBound <= range.lowerBound && $0.upperBound >= range.upperBound }) { return false }
            guard pending.count < Self.maximumPending else { return false }
            pending.append(range)
            return true
        }
        guard added else { return false }
        if case .dropped = continuation.yield(range) {
            served(range)
            return false
        }
        return true
    }

    /// The ranges asked for, in order, until ``finish()``.
    var requests: AsyncStream<Range<Int64>> { stream }

    /// `range` was served (or given up): it may be asked again.
    func served(_ range: Range<Int64>) {
        pending.withLock { pending in
            if let index = pending.firstIndex(of: range) { pending.remove(at: index) }
        }
    }

    /// The download ended: no more requests are served.
    public func finish() {
        continuation.finish()
    }
}
