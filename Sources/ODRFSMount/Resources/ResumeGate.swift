import ODRFSFetch
import ODRFSStore
import Synchronization

/// Bridges a callback that may come before or after the continuation exists, and more
/// than once (a cancellation racing a result), to exactly one resumption.
final class ResumeGate: Sendable {
    typealias Value = Result<VerifiedFile?, FetchError>

    private struct State {
        var continuation: CheckedContinuation<Value, Never>?
        var early: Value?
        var resumed = false
    }

    private let state = Mutex(State())

    func arm(_ continuation: CheckedContinuation<Value, Never>) {
        let early = state.withLock { state -> Value? in
            if let early = state.early {
                state.early = nil
                return early
            }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    func resume(_ value: Value) {
        let continuation = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard !state.resumed else { return nil }
            state.resumed = true
            guard let continuation = state.continuation else {
                state.early = value
                return nil
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume(returning: value)
    }
}
