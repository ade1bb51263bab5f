import ODRFSControl

extension BundleResourceRequest {
    /// Asks the mount at `mountpoint` whether its origin has a newer revision than the one
    /// it serves (Background Assets' `checkForUpdates`). Downloads no pack: the report says
    /// which packs changed and how many bytes an update would fetch and reuse.
    public static func checkForUpdates(mountpoint: String) async throws(BundleResourceRequestError) -> UpdateReport {
        let reply = try await oneShot(.update(check: true), mountpoint: mountpoint)
        guard let report = reply.update else {
            throw .failed(ControlError(.internalError, "the daemon's update reply has no report"))
        }
        return report
    }
}
