import ODRFSControl
import ODRFSCore
import ODRFSFetch

extension MountControlService {
    /// A subscription to the resource manager's events, with this mount's low-disk-space
    /// events folded in (checked while the subscription lasts, as for `watch-disk`).
    public func mountEvents() -> MountEventSubscription? {
        let subscription = manager.events.subscribe()
        let disk = lowDiskSpaceEvents()
        let forwarder = Task {
            for await low in disk {
                subscription.push(MountEvent(CacheEvent(.lowDiskSpace(availableBytes: low.availableBytes))))
            }
        }
        subscription.onFinish { forwarder.cancel() }
        return subscription
    }
}

extension CacheEvents {
    /// A bounded subscription to these events in their wire form (``MountEvent``),
    /// coalesced and dropped for a slow reader as ``MountEventSubscription`` does; it ends,
    /// and stops observing, when it is finished.
    func subscribe(capacity: Int = MountEvents.defaultCapacity) -> MountEventSubscription {
        let subscription = MountEventSubscription(capacity: capacity)
        // Runs on the publisher's thread (under the cache ledger's lock for retains): the
        // conversion and a push into a bounded queue, never a wait.
        let observation = observe { subscription.push(MountEvent($0)) }
        subscription.onFinish { observation.cancel() }
        return subscription
    }
}

extension MountEvent {
    /// The wire form of a mount's ``CacheEvent``: the one place the control plane's event
    /// is made from the Mount's (the JSON fields are the contract; see ``MountEvent``).
    init(_ event: CacheEvent) {
        func about(_ kind: Kind, _ pack: PackDescriptor, bytes: Int64) -> MountEvent {
            MountEvent(time: event.time, event: kind, pack: pack.id.rawValue, tags: pack.tags.map(\.name), bytes: bytes)
        }
        switch event.what {
        case .fetchStarted(let pack):
            self = about(.fetchStarted, pack, bytes: pack.bytes.value)
        case .fetchProgress(let pack, let received):
            self = about(.fetchProgress, pack, bytes: received)
            total = pack.bytes.value
        case .fetchFinished(let pack):
            self = about(.fetchFinished, pack, bytes: pack.bytes.value)
        case .fetchFailed(let pack, let error):
            self = about(.fetchFailed, pack, bytes: pack.bytes.value)
            reason = error.kind.eventName
            message = error.message
        case .evicted(let eviction):
            self.init(time: event.time, event: .evicted, pack: eviction.pack, tags: eviction.tags.map(\.name), bytes: eviction.bytes)
            reason = EvictionReason(eviction.reason).rawValue
            rule = eviction.rule
        case .retained(let pack):
            self = about(.retained, pack, bytes: pack.bytes.value)
        case .released(let pack):
            self = about(.released, pack, bytes: pack.bytes.value)
        case .lowDiskSpace(let available):
            self.init(time: event.time, event: .lowDiskSpace, bytes: available)
        }
    }
}

extension MountEvent.EvictionReason {
    /// The wire reason of a Mount eviction reason.
    init(_ reason: CacheEvent.EvictionReason) {
        switch reason {
        case .cacheSize: self = .cacheSize
        case .minFree: self = .minFree
        case .manual: self = .manual
        case .update: self = .update
        }
    }
}

extension MountControlService {
    /// This mount's access traces from the cache index (read on the I/O executor).
    public func trace(sessions: Int) async throws(ControlError) -> [[TraceEntry]] {
        do {
            return try await manager.traces(sessions: sessions)
        } catch {
            throw ControlError(.internalError, "cannot read the access traces: \(error)")
        }
    }
}
