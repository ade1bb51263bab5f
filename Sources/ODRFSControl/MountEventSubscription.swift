import Synchronization

/// One subscriber's bounded queue of ``MountEvent``s, filled by ``MountEvents/publish(_:)``
/// (any thread, never blocking) and drained by ``next()``.
///
/// A subscriber that reads slowly never slows the mount: the queue holds at most
/// ``capacity`` events. A progress event replaces the queued progress of the same pack
/// (only the latest figure matters); when the queue is full, queued progress is dropped
/// first, then the oldest event, and ``droppedCount`` says how many were lost.
public final class MountEventSubscription: Sendable {
    /// Events queued per subscriber at most.
    public let capacity: Int

    private struct State {
        var queue: [MountEvent] = []
        var head = 0
        var waiter: CheckedContinuation<MountEvent?, Never>?
        var finished = false
        var dropped = 0
        var onFinish: [@Sendable () -> Void] = []

        var count: Int { queue.count - head }

        mutating func popFirst() -> MountEvent? {
            guard head < queue.count else { return nil }
            let event = queue[head]
            head += 1
            // Compact now and then so the array does not grow without bound.
            if head > 64 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            return event
        }
    }

    private let state = Mutex(State())

    /// An empty subscription holding at most `capacity` events: a publisher that is not a
    /// ``MountEvents`` hub (the mount, which converts its own events) pushes into it.
    public init(capacity: Int = MountEvents.defaultCapacity) {
        self.capacity = max(capacity, 1)
    }

    /// Queues `event` or hands it to a waiting ``next()``. Never blocks on the reader.
    /// The hub calls it for every event; call it directly for an event only this
    /// subscriber should see.
    public func push(_ event: MountEvent) {
        let waiter = state.withLock { state -> CheckedContinuation<MountEvent?, Never>? in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            if event.event == .fetchProgress,
               let queued = state.queue[state.head...].lastIndex(where: { $0.event == .fetchProgress && $0.pack == event.pack }) {
                state.queue[queued] = event
                return nil
            }
            if state.count >= capacity {
                state.dropped += 1
                if let progress = state.queue[state.head...].firstIndex(where: { $0.event == .fetchProgress }) {
                    state.queue.remove(at: progress)
                } else if event.event == .fetchProgress {
                    return nil
                } else {
                    state.head += 1
                }
            }
            state.queue.append(event)
            return nil
        }
        waiter?.resume(returning: event)
    }

    /// The next event, waiting for one; nil once ``finish()`` was called or the calling
    /// task is cancelled.
    public func next() async -> MountEvent? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<MountEvent?, Never>) in
                let ready = state.withLock { state -> MountEvent?? in
                    if let event = state.popFirst() { return .some(event) }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    precondition(state.waiter == nil, "one reader per MountEventSubscription")
                    state.waiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }

    /// Events lost because the queue was full.
    public var droppedCount: Int { state.withLock { $0.dropped } }

    /// Ends the subscription: ``next()`` returns nil, nothing more is queued.
    public func finish() {
        let (waiter, hooks) = state.withLock { state in
            guard !state.finished else { return (nil as CheckedContinuation<MountEvent?, Never>?, [@Sendable () -> Void]()) }
            state.finished = true
            state.queue.removeAll()
            state.head = 0
            defer { state.waiter = nil; state.onFinish.removeAll() }
            return (state.waiter, state.onFinish)
        }
        waiter?.resume(returning: nil)
        hooks.forEach { $0() }
    }

    /// Runs `hook` once when the subscription ends (at once if it has ended).
    public func onFinish(_ hook: @escaping @Sendable () -> Void) {
        let ended = state.withLock { state -> Bool in
            if state.finished { return true }
            state.onFinish.append(hook)
            return false
        }
        if ended { hook() }
    }

    /// Whether the subscription has ended.
    var isFinished: Bool { state.withLock { $0.finished } }
}
