import CFuse3
import Synchronization

/// The requests that have been detached into `DeferredRequest`s and not yet
/// answered, so that teardown can answer them before unmounting (a process
/// blocked in open(2) would otherwise keep a lazily unmounted filesystem
/// alive) and so that exactly one reply claims each request.
///
/// INVARIANT: a request is in `pending` iff it is detached and unanswered;
/// whoever removes it owns the only right to reply.
/// Lock order: this lock may be held while calling into libfuse for a
/// pending request (which takes libfuse's request and session locks, and may
/// run the interrupt callback, which takes `InterruptTable`'s lock). Nothing
/// takes this lock while holding one of those.
final class RequestRegistry: Sendable {
    private struct State {
        var isClosed = false
        var pending: [UInt64: RawRequest] = [:]
    }

    private let state = Mutex(State())

    /// Adds a detached request. Returns false once teardown has begun.
    func register(_ request: RawRequest, id: UInt64) -> Bool {
        state.withLock { state in
            guard !state.isClosed else { return false }
            state.pending[id] = request
            return true
        }
    }

    /// Removes and returns the request if it is still unanswered: the caller must reply to it.
    func claim(_ id: UInt64) -> RawRequest? {
        state.withLock { $0.pending.removeValue(forKey: id) }
    }

    /// Runs `body` with the request while it is guaranteed unanswered (under the lock);
    /// nil when it was answered already.
    func withPending<Result: Sendable>(_ id: UInt64, _ body: (fuse_req_t) -> Result) -> Result? {
        state.withLock { state in
            guard let request = state.pending[id] else { return nil }
            return body(request.pointer)
        }
    }

    /// Stops accepting requests and hands over every unanswered one.
    func closeAndTakeAll() -> [(id: UInt64, request: RawRequest)] {
        state.withLock { state in
            state.isClosed = true
            let all = state.pending.map { (id: $0.key, request: $0.value) }
            state.pending.removeAll()
            return all
        }
    }

    var pendingCount: Int {
        state.withLock { $0.pending.count }
    }
}
