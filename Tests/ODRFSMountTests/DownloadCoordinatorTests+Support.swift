import ODRFSFetch
@testable import ODRFSMount
import ODRFSStore
import TestSupport
import Testing

/// What each waiter of a test was resumed with.
final class Outcomes: Sendable {
    enum Outcome: Equatable, Sendable {
        /// Resumed with the pack (or, for a progressive waiter, its prefix) verified.
        case success
        case failure(FetchError.Kind)
    }

    private let results = LockedValue<[UInt64: Outcome]>([:])

    func resume(_ id: UInt64) -> @Sendable (Result<VerifiedFile?, FetchError>) -> Void {
        { [results] result in
            let outcome: Outcome
            switch result {
            case .success: outcome = .success
            case .failure(let error): outcome = .failure(error.kind)
            }
            results.withLock { results in
                precondition(results[id] == nil, "waiter \(id) resumed twice")
                results[id] = outcome
            }
        }
    }

    subscript(_ id: UInt64) -> Outcome? { results.withLock { $0[id] } }
    var count: Int { results.withLock { $0.count } }
}

/// Every event a hub publishes while the log observes it, in order.
final class EventLog: Sendable {
    private let events = LockedValue<[CacheEvent]>([])
    private let observation: CacheEvents.Observation

    init(_ hub: CacheEvents) {
        let events = self.events
        observation = hub.observe { event in events.withLock { $0.append(event) } }
    }

    func stop() { observation.cancel() }

    /// The events about pack `id`, by their wire names.
    func kinds(of id: String) -> [String] {
        events.withLock { $0 }.compactMap { event -> String? in
            switch event.what {
            case .fetchStarted(let pack) where pack.id.rawValue == id: "fetch-started"
            case .fetchProgress(let pack, _) where pack.id.rawValue == id: "fetch-progress"
            case .fetchFinished(let pack) where pack.id.rawValue == id: "fetch-finished"
            case .fetchFailed(let pack, _) where pack.id.rawValue == id: "fetch-failed"
            case .retained(let pack) where pack.id.rawValue == id: "retained"
            case .released(let pack) where pack.id.rawValue == id: "released"
            case .evicted(let eviction) where eviction.pack == id: "evicted"
            default: nil
            }
        }
    }

    /// The bytes received of each progress event about pack `id`.
    func progress(of id: String) -> [Int64] {
        events.withLock { $0 }.compactMap { event in
            if case .fetchProgress(let pack, let received) = event.what, pack.id.rawValue == id { return received }
            return nil
        }
    }

    /// The error kinds of the failed fetches of pack `id`.
    func failures(of id: String) -> [FetchError.Kind] {
        events.withLock { $0 }.compactMap { event in
            if case .fetchFailed(let pack, let error) = event.what, pack.id.rawValue == id { return error.kind }
            return nil
        }
    }
}

/// An unstructured task whose end the test waits for with a bound; if it does not end in
/// time it is cancelled and abandoned, never awaited.
final class Finishing: Sendable {
    private let outcome = LockedValue<Result<Void, any Error>?>(nil)
    private let task = LockedValue<Task<Void, Never>?>(nil)

    init(_ body: @escaping @Sendable () async throws -> Void) {
        let outcome = self.outcome
        let task = Task {
            do { try await body(); outcome.withLock { $0 = .success(()) } } catch { outcome.withLock { $0 = .failure(error) } }
        }
        self.task.withLock { $0 = task }
    }

    func cancel() { task.withLock { $0?.cancel() } }

    /// How it ended, or nil (and cancelled) if it had not within `timeout`.
    func result(within timeout: Duration) async -> Result<Void, any Error>? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let ended = outcome.withLock({ $0 }) { return ended }
            try? await Task.sleep(for: .milliseconds(5))
        }
        cancel()
        Issue.record("the task did not end within \(timeout)")
        return nil
    }
}

extension Result where Success == Void {
    /// The error, if it failed.
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
