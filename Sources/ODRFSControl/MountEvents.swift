import Synchronization

/// A hub of wire events: a control service that makes ``MountEvent``s itself
/// ``publish(_:)``es here, and each `odrfs events` client or `BundleResourceRequest`
/// subscriber gets its own bounded ``MountEventSubscription``. (A mount publishes its own
/// event type; its control service converts each event once and pushes it into the same
/// kind of subscription.)
///
/// Publishing costs one atomic load when nobody listens (the event is not even built),
/// and never blocks: a slow subscriber loses progress events, not the mount's time.
/// Its lock is a leaf; it never calls back into its publishers.
public final class MountEvents: Sendable {
    /// Events queued per subscriber at most.
    public static let defaultCapacity = 1024

    private let subscribers = Mutex<[ObjectIdentifier: MountEventSubscription]>([:])
    private let listening = Atomic<Int>(0)

    /// An empty hub.
    public init() {}

    /// Whether anyone listens (publishers may skip work when not).
    public var isObserved: Bool { listening.load(ordering: .relaxed) > 0 }

    /// Sends the event built by `make` to every subscriber; `make` runs only if someone listens.
    public func publish(_ make: @autoclosure () -> MountEvent) {
        guard isObserved else { return }
        let event = make()
        let targets = subscribers.withLock { Array($0.values) }
        for subscriber in targets { subscriber.push(event) }
    }

    /// A new subscription; it receives events published from now on until it is finished.
    public func subscribe(capacity: Int = MountEvents.defaultCapacity) -> MountEventSubscription {
        let subscription = MountEventSubscription(capacity: capacity)
        let key = ObjectIdentifier(subscription)
        subscribers.withLock { subscribers in
            subscribers[key] = subscription
            listening.store(subscribers.count, ordering: .relaxed)
        }
        subscription.onFinish { [weak self] in
            guard let self else { return }
            subscribers.withLock { subscribers in
                subscribers.removeValue(forKey: key)
                listening.store(subscribers.count, ordering: .relaxed)
            }
        }
        return subscription
    }
}
