import Synchronization

/// Measures the time to a download's first bytes: started at init, read once.
final class FirstByteClock: Sendable {
    private let start = ContinuousClock.now
    private let called = Atomic<Bool>(false)

    /// The time since init on the first call, nil on every later one.
    func elapsedOnFirstCall() -> Duration? {
        called.exchange(true, ordering: .relaxed) ? nil : ContinuousClock.now - start
    }
}
