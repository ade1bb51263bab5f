import ODRFSControl
import ODRFSCore

extension MountControlService {
    /// A subscription to the resource manager's events, with this mount's low-disk-space
    /// events folded in (checked while the subscription lasts, as for `watch-disk`).
    public func mountEvents() -> MountEventSubscription? {
        let subscription = manager.events.subscribe()
        let disk = lowDiskSpaceEvents()
        let forwarder = Task {
            for await low in disk {
                subscription.push(MountEvent(event: .lowDiskSpace, bytes: low.availableBytes))
            }
        }
        subscription.onFinish { forwarder.cancel() }
        return subscription
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
