import Synchronization

/// The mount's event hub: the owners of what happens (the cache ledger's retains, the
/// purger's evictions, the download coordinator's fetches) ``publish(_:)`` ``CacheEvent``s
/// here, and observers (the control service, which encodes them for `odrfs events` and
/// `BundleResourceRequest`) receive them.
///
/// Publishing costs one atomic load when nobody observes (the event is not even built),
/// and never blocks. An observer is called on the publisher's thread, possibly under the
/// cache ledger's lock (retains), so it must only hand the event on (a bounded queue) and
/// never call back into the mount. The hub's own lock is a leaf.
public final class CacheEvents: Sendable {
    /// One observer's registration: ``cancel()`` ends it.
    public final class Observation: Sendable {
        private let end: @Sendable () -> Void
        private let ended = Atomic<Bool>(false)

        fileprivate init(end: @escaping @Sendable () -> Void) {
            self.end = end
        }

        /// Stops the deliveries; idempotent.
        public func cancel() {
            guard !ended.exchange(true, ordering: .relaxed) else { return }
            end()
        }
    }

    private struct State {
        var observers: [UInt64: @Sendable (CacheEvent) -> Void] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())
    private let listening = Atomic<Int>(0)

    /// An empty hub.
    public init() {}

    /// Whether anyone observes (publishers may skip work when not).
    public var isObserved: Bool { listening.load(ordering: .relaxed) > 0 }

    /// Sends the event built by `make` to every observer; `make` runs only if someone observes.
    func publish(_ make: @autoclosure () -> CacheEvent) {
        guard isObserved else { return }
        let event = make()
        let targets = state.withLock { Array($0.observers.values) }
        for deliver in targets { deliver(event) }
    }

    /// Calls `deliver` with every event published from now on until the observation is
    /// cancelled. `deliver` runs on the publisher's thread: it must not block.
    public func observe(_ deliver: @escaping @Sendable (CacheEvent) -> Void) -> Observation {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.observers[state.nextID] = deliver
            listening.store(state.observers.count, ordering: .relaxed)
            return state.nextID
        }
        return Observation { [weak self] in
            guard let self else { return }
            state.withLock { state in
                state.observers.removeValue(forKey: id)
                listening.store(state.observers.count, ordering: .relaxed)
            }
        }
    }
}
