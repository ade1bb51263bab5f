import Synchronization

/// Counts the opens waiting for a download, so that prefetch and background downloads can
/// step aside while a program waits (Unreal's chunk downloader pauses background work while
/// the game loads), and remembers when one last waited, for `--prefetch-delay`'s quiet period.
///
/// A leaf lock: taken under the cache ledger's lock (a waiter registers there), never the
/// other way round.
final class ForegroundGate: Sendable {
    private struct State {
        var waiting = 0
        var lastActivity = ContinuousClock.now
    }

    private let state = Mutex(State())

    /// Whether any open waits for bytes now.
    var isBusy: Bool { state.withLock { $0.waiting > 0 } }

    /// How long since an open last waited (zero while one waits).
    var quietFor: Duration {
        state.withLock { $0.waiting > 0 ? .zero : ContinuousClock.now - $0.lastActivity }
    }

    /// Wraps a waiter's `resume` (called exactly once) so that the gate counts it as waiting
    /// until then. Call only for a waiter that is registered.
    func track<T>(_ resume: @escaping @Sendable (T) -> Void) -> @Sendable (T) -> Void {
        state.withLock { state in
            state.waiting += 1
            state.lastActivity = .now
        }
        return { [self] value in
            state.withLock { state in
                state.waiting -= 1
                state.lastActivity = .now
            }
            resume(value)
        }
    }
}
