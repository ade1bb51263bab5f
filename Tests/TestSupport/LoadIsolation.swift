import Testing

/// Keeps a test that disturbs the whole machine on purpose (the storm test: dozens of
/// busy threads for half a minute; the benchmark smoke test, which drops the kernel's
/// page and dentry caches and so the readdir cache another FUSE test checks) apart from
/// the tests whose assertions measure latency (a reply within 0.5 s, a control reply
/// within 5 s) or wait for a real mount with a bounded `eventually` (one such wait, for
/// a download to start, once ran out under the storm): on two cores those would fail
/// for the load, not for a defect. Everything else runs in parallel with both.
///
/// `.timingSensitive` tests share the lock among themselves; `.disturbsTheMachine` takes
/// it alone, once no timing-sensitive test runs (and one at a time). Waiting suspends
/// the task (an actor and continuations), so no thread of the cooperative pool is blocked.
public struct LoadIsolation: TestTrait, SuiteTrait, TestScoping {
    enum Mode: Sendable { case shared, exclusive }
    let mode: Mode

    /// Applied to a suite, it applies to each of its tests (not the suite as a whole).
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        switch mode {
        case .shared: await LoadLock.shared.lockShared()
        case .exclusive: await LoadLock.shared.lockExclusive()
        }
        do {
            try await function()
        } catch {
            await unlock()
            throw error
        }
        await unlock()
    }

    private func unlock() async {
        switch mode {
        case .shared: await LoadLock.shared.unlockShared()
        case .exclusive: await LoadLock.shared.unlockExclusive()
        }
    }
}

extension Trait where Self == LoadIsolation {
    /// The test asserts latencies: it never runs while a machine-saturating test does.
    public static var timingSensitive: Self { LoadIsolation(mode: .shared) }
    /// The test loads or disturbs the machine on purpose: it runs while no timing-sensitive
    /// test (and no other such test) does.
    public static var disturbsTheMachine: Self { LoadIsolation(mode: .exclusive) }
}
