import Synchronization

/// Runs `body` on a task of its own and waits up to `timeout` for it: its result, or nil if it
/// has not finished by then (it goes on; its result is dropped). For asserting that something
/// does, or does not, wait (a read held behind a paused stream) without hanging the test.
public func finishes<T: Sendable>(within timeout: Duration, _ body: @escaping @Sendable () async -> T) async -> T? {
    let result = Mutex<T?>(nil)
    let task = Task { let value = await body(); result.withLock { $0 = value } }
    let deadline = ContinuousClock.now + timeout
    while result.withLock({ $0 }) == nil && ContinuousClock.now < deadline {
        try? await Task.sleep(for: .milliseconds(20))
    }
    _ = task
    return result.withLock { $0 }
}
