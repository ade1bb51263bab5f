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

extension BundleResourceRequest {
    /// Background Assets' `requireLatestVersion`: when true, a begin first moves the mount to
    /// its origin's newest revision (`odrfs update`), so the resources come from it; a
    /// failed update fails the request. Read when a begin method runs. Default false.
    public var requireLatestVersion: Bool {
        get { state.withLock { $0.requireLatestVersion } }
        set { state.withLock { $0.requireLatestVersion = newValue } }
    }

    func updateFirstIfRequired(_ client: ControlClient) async throws(BundleResourceRequestError) {
        guard requireLatestVersion else { return }
        do throws(ControlError) {
            _ = try await client.call(.update(check: false))
        } catch {
            throw BundleResourceRequestError(error)
        }
    }
}
