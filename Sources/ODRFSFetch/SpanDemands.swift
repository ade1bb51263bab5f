import Synchronization

/// Ranges of a pack that readers wait for ahead of its stream: a read of the central
/// directory at the end of a `.pk3` or `.zip`, the first bytes of a file deep in a pack. The
/// mount asks (``request(_:speculative:)``); the download's ``PackPipeline`` fetches the
/// chunks (or frames) holding each range by `Range` while the pack keeps streaming, proves
/// them by the file index's chunk digests or the manifest's chunk hashes, and releases them
/// to readers.
///
/// Two kinds, served one at a time, reads first: a range a reader waits for now, and a
/// *speculative* one (the end of a large file asked for at its cold open, in case it is an
/// archive read from its end), which waits while any read's range does and of which at most
/// ``maximumSpeculative`` are kept, so that opening many large files never holds a real
/// read back. A range already asked for and not yet served is not asked again. Requests
/// made before the download starts wait for it; those left when it ends are dropped (the
/// pack is local then, or failed).
///
/// Thread safety: any thread may request; one download serves.
public final class SpanDemands: Sendable {
    private struct Queue {
        var reads: [Range<Int64>] = []
        var speculative: [Range<Int64>] = []
        var serving: [Range<Int64>] = []

        func covers(_ range: Range<Int64>) -> Bool {
            (reads + speculative + serving).contains { $0.lowerBound <= range.lowerBound && $0.upperBound >= range.upperBound }
        }
    }

    private let queue = Mutex(Queue())
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    /// At most this many reads' ranges wait at once; more are dropped (their readers wait
    /// for the stream).
    public static let maximumPending = 64
    /// At most this many speculative ranges wait at once.
    public static let maximumSpeculative = 4

    public init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .unbounded)
    }

    /// Asks for `range`; false when a pending request already covers it (or too many wait).
    @discardableResult
    public func request(_ range: Range<Int64>, speculative: Bool = false) -> Bool {
        guard !range.isEmpty else { return false }
        let added = queue.withLock { queue -> Bool in
            guard !queue.covers(range) else { return false }
            if speculative {
                guard queue.speculative.count < Self.maximumSpeculative else { return false }
                queue.speculative.append(range)
            } else {
                guard queue.reads.count < Self.maximumPending else { return false }
                queue.reads.append(range)
            }
            return true
        }
        if added { continuation.yield(()) }
        return added
    }

    /// One signal per request, until ``finish()``: take the range with ``next()``.
    var signals: AsyncStream<Void> { stream }

    /// The range to serve now, reads first; nil when none waits.
    func next() -> Range<Int64>? {
        queue.withLock { queue in
            let range = queue.reads.isEmpty ? (queue.speculative.isEmpty ? nil : queue.speculative.removeFirst()) : queue.reads.removeFirst()
            if let range { queue.serving.append(range) }
            return range
        }
    }

    /// `range` was served (or given up): it may be asked again.
    func served(_ range: Range<Int64>) {
        queue.withLock { queue in
            if let index = queue.serving.firstIndex(of: range) { queue.serving.remove(at: index) }
        }
    }

    /// The download ended: no more requests are served.
    public func finish() {
        continuation.finish()
    }
}
