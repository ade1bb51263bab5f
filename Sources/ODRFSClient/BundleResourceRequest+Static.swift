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
        watch(.watchDisk, mountpoint: mountpoint) { response in
            response.availableBytes.map { LowDiskSpaceEvent(availableBytes: $0, minimumFree: response.minimumFree) }
        }
    }

    @discardableResult
    static func oneShot(_ operation: ControlOperation, mountpoint: String) async throws(BundleResourceRequestError) -> ControlResponse {
        do throws(ControlError) {
            return try await SharedControlClient.client(mountpoint: mountpoint).call(operation)
        } catch {
            throw BundleResourceRequestError(error)
        }
    }
}
