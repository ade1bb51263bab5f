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
        watch(.watchEvents, mountpoint: mountpoint, bufferingPolicy: .bufferingNewest(MountEvents.defaultCapacity)) { $0.mount }
    }
}
