import Synchronization

/// Calls the readiness callback exactly once, whichever of the probe and the loop's end
/// comes first.
final class ReadinessLatch: Sendable {
    private let state: Mutex<(callback: (@Sendable (Result<Void, MountError>) -> Void)?, ready: Bool)>

    init(_ callback: @escaping @Sendable (Result<Void, MountError>) -> Void) {
        state = Mutex((callback, false))
    }

    func resolve(_ result: Result<Void, MountError>) {
        let callback = state.withLock { state -> (@Sendable (Result<Void, MountError>) -> Void)? in
            defer { state.callback = nil }
            if state.callback != nil, case .success = result { state.ready = true }
            return state.callback
        }
        callback?(result)
    }

    var wasReady: Bool { state.withLock { $0.ready } }
}
