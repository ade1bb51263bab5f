import Foundation
import ODRFSControl

extension BundleResourceRequest {
    /// Everything the mount at `mountpoint` does, live — the events `odrfs events`
    /// prints: fetches starting, progressing, finishing and failing, packs evicted (with
    /// their reason and rule), retained and released, and low disk space. Progress is
    /// coalesced for a slow consumer. The stream throws
    /// ``BundleResourceRequestError/daemonUnavailable(_:)`` when the daemon goes away;
    /// stop iterating to unsubscribe.
    public static func mountEvents(mountpoint: String) -> AsyncThrowingStream<MountEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: MountEvent.self, bufferingPolicy: .bufferingNewest(MountEvents.defaultCapacity))
        let task = Task {
            do throws(ControlError) {
                let client = try await SharedControlClient.client(mountpoint: mountpoint)
                let reply = try await client.call(.watchEvents) { response in
                    if let event = response.mount { continuation.yield(event) }
                }
                await client.waitUntilClosed()   // or until the consumer stops iterating
                if Task.isCancelled {
                    if let id = reply.id { client.post(.end(request: id)) }
                    continuation.finish()
                } else {
                    continuation.finish(throwing: BundleResourceRequestError.daemonUnavailable("the ODRFS daemon of \(mountpoint) went away"))
                }
            } catch {
                continuation.finish(throwing: BundleResourceRequestError(error))
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
