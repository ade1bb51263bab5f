import ODRFSControl
import Synchronization

/// Bounds the fetch phase of an update the way one fetch is bounded: when no pack has
/// moved forward (bytes of a span, a verified chunk, a pack published) for the fetch
/// timeout, the phase is cancelled and the update fails, saying so, with the mount left on
/// its revision. Each fetch bounds itself too, but an update is many of them, in turn, from
/// every server: without this, a mirror that corrupts every pack and an origin that resets
/// every request kept `odrfs update` going for minutes.
///
/// Thread safety: the mark is a `Mutex`; `advance()` is called from any fetch's callbacks.
final class UpdateProgressWatchdog: Sendable {
    private let mark = Mutex(ContinuousClock.now)
    let limit: Duration

    init(limit: Duration) {
        self.limit = limit
    }

    /// Something moved forward.
    func advance() {
        mark.withLock { $0 = .now }
    }

    /// Runs `body`; cancels it and throws `failure` once `limit` passes without ``advance()``.
    func bound(failure: @escaping @Sendable (Duration) -> ControlError,
               _ body: @escaping @Sendable () async throws(ControlError) -> Void) async throws(ControlError) {
        advance()
        let outcome: Result<Void, ControlError> = await withTaskGroup(of: Result<Void, ControlError>?.self) { group in
            group.addTask {
                do throws(ControlError) { try await body() } catch { return .failure(error) }
                return .success(())
            }
            group.addTask { [self] in
                while !Task.isCancelled {
                    let idle = ContinuousClock.now - mark.withLock { $0 }
                    if idle >= limit { return .failure(failure(idle)) }
                    // Cancellation ends the sleep early; the loop condition then ends the watch.
                    try? await Task.sleep(for: min(limit - idle, .milliseconds(250)))
                }
                return nil
            }
            // The first answer wins; the watch returning nil (cancelled from outside) leaves
            // the body to report its own cancellation.
            for await answer in group {
                if let answer {
                    group.cancelAll()
                    return answer
                }
            }
            return .failure(ControlError(.cancelled, "the update was cancelled"))
        }
        try outcome.get()
    }
}
