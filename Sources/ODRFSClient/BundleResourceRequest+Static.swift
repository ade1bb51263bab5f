import Foundation
import ODRFSControl

extension BundleResourceRequest {
    /// The preservation priority (0…1; ODR's default 0) of `tag` on the mount at
    /// `mountpoint`: under disk pressure, packs of lower priority are purged first.
    public static func preservationPriority(forTag tag: String, mountpoint: String) async throws(BundleResourceRequestError) -> Double {
        let reply = try await oneShot(.priorityGet(tags: [tag]), mountpoint: mountpoint)
        return reply.priorities?[tag] ?? 0
    }

    /// Sets the preservation priority (0…1) of `tags` on the mount at `mountpoint`;
    /// the daemon persists it across remounts.
    public static func setPreservationPriority(_ priority: Double, forTags tags: Set<String>, mountpoint: String) async throws(BundleResourceRequestError) {
        guard priority.isFinite, (0...1).contains(priority) else {
            throw .failed(ControlError(.badRequest, "a preservation priority must be in 0…1, not \(priority)"))
        }
        try await oneShot(.prioritySet(tags: tags.sorted(), value: priority), mountpoint: mountpoint)
    }

    /// Low-disk-space events of the mount at `mountpoint`
    /// (`NSBundleResourceRequestLowDiskSpaceNotification`): when one arrives, end the
    /// requests you can spare. The stream throws ``BundleResourceRequestError/daemonUnavailable(_:)``
    /// when the daemon goes away; stop iterating to unsubscribe.
    public static func lowDiskSpaceEvents(mountpoint: String) -> AsyncThrowingStream<LowDiskSpaceEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: LowDiskSpaceEvent.self)
        let task = Task {
            do throws(ControlError) {
                let client = try ControlClient.connect(mountpoint: mountpoint)
                let watching = await withTaskCancellationHandler { () async -> ControlError? in
                    do throws(ControlError) {
                        try await client.call(.watchDisk) { event in
                            if let available = event.availableBytes {
                                continuation.yield(LowDiskSpaceEvent(availableBytes: available, minimumFree: event.minimumFree))
                            }
                        }
                    } catch {
                        return error
                    }
                    await client.waitUntilClosed()
                    return nil
                } onCancel: {
                    client.close()
                }
                if let watching { throw watching }
                continuation.finish(throwing: BundleResourceRequestError.daemonUnavailable("the ODRFS daemon of \(mountpoint) went away"))
            } catch {
                continuation.finish(throwing: BundleResourceRequestError(error))
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    @discardableResult
    static func oneShot(_ operation: ControlOperation, mountpoint: String) async throws(BundleResourceRequestError) -> ControlResponse {
        do throws(ControlError) {
            let client = try ControlClient.connect(mountpoint: mountpoint)
            defer { client.close() }
            return try await client.call(operation)
        } catch {
            throw BundleResourceRequestError(error)
        }
    }
}
