import Foundation
import NIOCore
import ODRFSCore
import ODRFSFetch
import Synchronization

/// An in-memory origin that hands out each file one piece at a time, and only as many
/// pieces as the test allows (``allow(_:pieces:)``): a download's progress is the test's
/// to set, with no timing involved. Every request is recorded with its first byte; a
/// download waiting for its next piece gives up when its task is cancelled (as a socket
/// read does) unless the test holds its cancellation (``holdsCancellation``).
final class HeldOrigin: Origin {
    /// One request: where it started, what it delivered and whether it ended.
    struct Request: Sendable, Equatable {
        var offset: Int64
        var delivered = 0
        var ended = false
    }

    private struct Waiter {
        var path: String
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var permits: [String: Int] = [:]
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        var requests: [String: [Request]] = [:]
        var failures: [String: FetchError] = [:]
    }

    private let files: [String: [UInt8]]
    private let state = Mutex(State())
    /// Bytes per piece: a chunk, so that each piece grows the verified prefix.
    let pieceBytes: Int
    let servesRanges: Bool
    /// While true, a waiting download waits for its piece even when cancelled (it then
    /// fails as cancelled once it gets it): the abandonment is in flight, held.
    let holdsCancellation = Atomic<Bool>(false)

    init(files: [String: [UInt8]], pieceBytes: Int, servesRanges: Bool = true) {
        self.files = files
        self.pieceBytes = pieceBytes
        self.servesRanges = servesRanges
    }

    var displayName: String { "held-origin" }

    /// Lets `pieces` more pieces of `path` through (`Int.max / 2`: all of them).
    func allow(_ path: String, pieces: Int = 1) {
        let woken = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.permits[path, default: 0] += pieces
            var woken: [CheckedContinuation<Bool, Never>] = []
            for (id, waiter) in state.waiters.sorted(by: { $0.key < $1.key }) where waiter.path == path {
                guard state.permits[path, default: 0] > 0 else { break }
                state.permits[path, default: 0] -= 1
                state.waiters.removeValue(forKey: id)
                woken.append(waiter.continuation)
            }
            return woken
        }
        woken.forEach { $0.resume(returning: true) }
    }

    func allowAll(_ path: String) { allow(path, pieces: Int.max / 2) }

    /// The next piece of `path` fails with `error`.
    func fail(_ path: String, with error: FetchError) {
        state.withLock { $0.failures[path] = error }
    }

    /// Whether a download of `path` waits for its next piece now.
    func isWaiting(_ path: String) -> Bool {
        state.withLock { $0.waiters.values.contains { $0.path == path } }
    }

    func requests(_ path: String) -> [Request] {
        state.withLock { $0.requests[path] ?? [] }
    }

    func download(_ path: String, expectedBytes: ByteCount, into consume: (ByteBuffer) async throws(FetchError) -> Void) async throws(FetchError) {
        try await download(path, from: 0, expectedBytes: expectedBytes, into: consume)
    }

    func download(_ path: String, from offset: Int64, expectedBytes: ByteCount,
                  into consume: (ByteBuffer) async throws(FetchError) -> Void) async throws(FetchError) {
        guard let bytes = files[path] else { throw FetchError(.notFound, "no \(path) on the held origin") }
        let number = state.withLock { state -> Int in
            state.requests[path, default: []].append(Request(offset: offset))
            return state.requests[path]!.count - 1
        }
        defer { state.withLock { $0.requests[path]![number].ended = true } }
        var position = Int(offset)
        while position < bytes.count {
            guard await take(path), !Task.isCancelled else { throw FetchError(.cancelled, "cancelled while held") }
            if let failure = state.withLock({ $0.failures.removeValue(forKey: path) }) { throw failure }
            let end = min(bytes.count, (position / pieceBytes + 1) * pieceBytes)
            state.withLock { $0.requests[path]![number].delivered += 1 }
            try await consume(ByteBuffer(bytes: bytes[position..<end]))
            position = end
        }
    }

    /// Waits for a permit of `path`; false if the task was cancelled first (and
    /// cancellation is not held).
    private func take(_ path: String) async -> Bool {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { state -> Bool? in
                    if state.permits[path, default: 0] > 0 {
                        state.permits[path, default: 0] -= 1
                        return true
                    }
                    if Task.isCancelled && !holdsCancellation.load(ordering: .relaxed) { return false }
                    state.waiters[id] = Waiter(path: path, continuation: continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            guard !holdsCancellation.load(ordering: .relaxed) else { return }
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(returning: false)
        }
    }
}
