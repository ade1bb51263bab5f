import FUSEKit
import ODRFSControl

/// The one status of a mount. `odrfs status` (through ``MountControlService``) and
/// `<mountpoint>/.odrfs/status` (``BundleFileSystem``) both render what this builds, so the
/// contract that they show the same text holds by construction: only values that change
/// between two reads (free bytes, progress) may differ.
enum MountStatus {
    /// The manager's snapshot with the read path of the cache line: passthrough and transport.
    static func snapshot(of manager: ResourceManager, passthroughSettings: PassthroughSettings,
                         passthrough: Passthrough, transport: IOUringStatus) -> StatusSnapshot {
        var snapshot = manager.snapshot()
        snapshot.readPath = "\(passthroughSettings.readPath(passthrough)); transport \(transport)"
        return snapshot
    }
}
