import Foundation
import Synchronization

/// One physical pack file — a download in progress or a published pack — together with
/// which of its bytes are proven, *in this very file*: a leading prefix proven by the
/// manifest's chunk hashes, and ranges beyond it proven by the file index's chunk digests
/// (a large file's chunks released as they verify, or fetched by range ahead of the
/// stream; see `PackChunkMap`).
///
/// This is where "never an unverified byte" is enforced for readers: a reader holds the
/// `VerifiedFile` it opened and may read only bytes ``isVerified(_:)`` says are proven.
/// What is proven only grows, and only for bytes written to this file; a later download of
/// the same pack is a different file with its own record, so a reader of a download that
/// failed halfway can never be let past what its own file proved by someone else's success.
/// Writers write only proven bytes into the file, so two writers of one range (the stream
/// and a range fetch) write the same bytes.
///
/// The descriptor is read-only, shared by every reader of the file (replies use
/// `pread`/splice at explicit offsets, so no file position is shared), and closed when
/// the last reference goes. A published pack keeps the inode its download wrote, so
/// readers that opened it mid-download go on reading it after publication.
///
/// Readers that need bytes not yet verified register a waiter; it is called exactly
/// once: when the bytes are verified (from the thread that wrote them), when the file
/// fails, or with `.cancelled` when the waiter is withdrawn (a FUSE interrupt). Callbacks
/// run outside the lock.
public final class VerifiedFile: Sendable {
    /// Why a waiter will not get its bytes.
    public enum Failure: Error, Sendable, Equatable {
        /// The download writing this file failed or was abandoned; `reason` says why.
        case incomplete(reason: String)
        /// The waiter was withdrawn (interrupted) before its bytes came.
        case cancelled
    }

    public typealias Callback = @Sendable (Result<Void, Failure>) -> Void

    fileprivate struct Waiter {
        var needed: Range<Int64>
        var callback: Callback
    }

    private struct State {
        /// The proven prefix.
        var verified: Int64
        /// Proven ranges past the prefix: sorted, disjoint, not touching each other or the prefix.
        var ranges: [Range<Int64>] = []
        var failure: Failure?
        var waiters: [UInt64: Waiter] = [:]

        func covers(_ range: Range<Int64>) -> Bool {
            if range.isEmpty || range.upperBound <= verified { return true }
            let start = max(range.lowerBound, verified)
            // The last range starting at or before `start`.
            var low = 0, high = ranges.count
            while low < high {
                let middle = low + (high - low) / 2
                if ranges[middle].lowerBound <= start { low = middle + 1 } else { high = middle }
            }
            return low > 0 && ranges[low - 1].upperBound >= range.upperBound
        }

        /// Adds `range` as proven, merging it into the prefix or its neighbours.
        mutating func insert(_ range: Range<Int64>) {
            guard !range.isEmpty, range.upperBound > verified else { return }
            var merged = max(range.lowerBound, verified)..<range.upperBound
            var kept: [Range<Int64>] = []
            kept.reserveCapacity(ranges.count + 1)
            var placed = false
            for existing in ranges {
                if existing.upperBound < merged.lowerBound {
                    kept.append(existing)
                } else if existing.lowerBound > merged.upperBound {
                    if !placed { kept.append(merged); placed = true }
                    kept.append(existing)
                } else {
                    merged = min(existing.lowerBound, merged.lowerBound)..<max(existing.upperBound, merged.upperBound)
                }
            }
            if !placed { kept.append(merged) }
            ranges = kept
            absorb()
        }

        /// Moves ranges that now touch the prefix into it.
        mutating func absorb() {
            var dropped = 0
            for range in ranges {
                guard range.lowerBound <= verified else { break }
                verified = max(verified, range.upperBound)
                dropped += 1
            }
            if dropped > 0 { ranges.removeFirst(dropped) }
        }

        /// Takes out the waiters whose bytes are now proven.
        mutating func takeReady(size: Int64) -> [Waiter] {
            var ready: [Waiter] = []
            for (id, waiter) in waiters where verified >= size || covers(waiter.needed) {
                ready.append(waiter)
                waiters.removeValue(forKey: id)
            }
            return ready
        }
    }

    /// The read-only descriptor; valid for the life of this object.
    public let descriptor: Int32
    /// The pack's full size: `verifiedBytes` reaches it when the pack is complete.
    public let size: Int64
    private let state: Mutex<State>
    private static let nextWaiter = Atomic<UInt64>(1)

    /// Takes ownership of `descriptor`.
    init(descriptor: Int32, size: Int64, verified: Int64) {
        self.descriptor = descriptor
        self.size = size
        self.state = Mutex(State(verified: verified))
    }

    /// Opens a published (complete, verified) pack file. Blocking: call it off the
    /// cooperative pool. Returns nil with `errno` set if the file cannot be opened.
    public static func openPublished(path: String, size: Int64) -> VerifiedFile? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        return VerifiedFile(descriptor: fd, size: size, verified: size)
    }

    deinit {
        close(descriptor)
    }

    /// Leading bytes proven right in this file.
    public var verifiedBytes: Int64 { state.withLock { $0.verified } }

    /// Whether every byte of `range` (clamped to the file) is proven in this file.
    public func isVerified(_ range: Range<Int64>) -> Bool {
        let clamped = range.clamped(to: 0..<size)
        return state.withLock { $0.covers(clamped) }
    }

    /// The proven ranges past the prefix (for status and tests).
    public var verifiedRanges: [Range<Int64>] { state.withLock { $0.ranges } }

    /// Every proven span that shares a byte with `range` — the prefix and the ranges past it,
    /// read together under one lock (a range may join the prefix at any moment).
    public func provenSpans(overlapping range: Range<Int64>) -> [Range<Int64>] {
        state.withLock { state in
            var spans: [Range<Int64>] = []
            if state.verified > range.lowerBound && !range.isEmpty { spans.append(0..<state.verified) }
            for proven in state.ranges where proven.upperBound > range.lowerBound && proven.lowerBound < range.upperBound {
                spans.append(proven)
            }
            return spans
        }
    }

    /// Whether the whole file is verified.
    public var isComplete: Bool { state.withLock { $0.verified >= size } }

    /// A fresh waiter identity (unique for the life of the process).
    public static func makeWaiterID() -> UInt64 {
        nextWaiter.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// Calls `callback` once the first `bytes` bytes are verified. Returns true (and does
    /// not call it) when they already are, so the fast path needs no closure call.
    public func whenVerified(_ bytes: Int64, waiter id: UInt64, _ callback: @escaping Callback) -> Bool {
        whenVerified(0..<max(0, bytes), waiter: id, callback)
    }

    /// Calls `callback` once every byte of `range` is proven. Returns true (and does not
    /// call it) when they already are.
    public func whenVerified(_ range: Range<Int64>, waiter id: UInt64, _ callback: @escaping Callback) -> Bool {
        let bytes = range.clamped(to: 0..<size)
        let outcome = state.withLock { state -> Result<Bool, Failure> in
            if state.covers(bytes) { return .success(true) }
            if let failure = state.failure { return .failure(failure) }
            state.waiters[id] = Waiter(needed: bytes, callback: callback)
            return .success(false)
        }
        switch outcome {
        case .success(let ready): return ready
        case .failure(let failure):
            callback(.failure(failure))
            return false
        }
    }

    /// Withdraws a waiter; it is called with `.cancelled` unless it was already answered.
    public func cancelWaiter(_ id: UInt64) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.callback(.failure(.cancelled))
    }

    /// Records that the first `bytes` bytes are written and proven, and answers the
    /// waiters they satisfy. Called by the writer, from the thread that wrote them.
    public func advance(to bytes: Int64) {
        let ready = state.withLock { state -> [Waiter] in
            guard state.failure == nil, bytes > state.verified else { return [] }
            state.verified = min(bytes, size)
            state.absorb()
            return state.takeReady(size: size)
        }
        for waiter in ready { waiter.callback(.success(())) }
    }

    /// Records that the bytes of `range` are written and proven (by the file index's chunk
    /// digests or the manifest's chunk hashes), and answers the waiters they satisfy.
    /// Called by a writer, from the thread that wrote them.
    public func release(_ range: Range<Int64>) {
        recordRelease(range).answer()
    }

    /// The waiters a release made ready, to be answered outside the caller's own lock.
    public struct ReadyWaiters: Sendable {
        fileprivate let waiters: [Waiter]

        /// Answers them (FUSE replies: splices of the bytes just released).
        public func answer() {
            for waiter in waiters { waiter.callback(.success(())) }
        }
    }

    /// Records `range` as proven now and returns the waiters it satisfies, not yet answered:
    /// a writer holding a lock of its own records under it and answers after.
    public func recordRelease(_ range: Range<Int64>) -> ReadyWaiters {
        let bytes = range.clamped(to: 0..<size)
        let ready = state.withLock { state -> [Waiter] in
            guard state.failure == nil, !bytes.isEmpty, !state.covers(bytes) else { return [] }
            state.insert(bytes)
            return state.takeReady(size: size)
        }
        return ReadyWaiters(waiters: ready)
    }

    /// The whole file is verified (the pack was published).
    public func complete() {
        advance(to: size)
    }

    /// No more bytes will be verified in this file: every waiter fails. Bytes verified so
    /// far stay readable.
    public func fail(_ reason: String) {
        let waiters = state.withLock { state -> [Waiter] in
            guard state.failure == nil, state.verified < size else { return [] }
            state.failure = .incomplete(reason: reason)
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.callback(.failure(.incomplete(reason: reason))) }
    }
}
