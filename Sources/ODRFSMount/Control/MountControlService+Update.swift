import ODRFSControl

extension MountControlService {
    /// `odrfs update MNT [--check]`: what the origin offers and what moving to it fetches;
    /// without `check`, the move itself (see ``BundleUpdater``).
    public func update(check: Bool) async throws(ControlError) -> UpdateReport {
        guard let updater else { throw ControlError(.unsupported, "this mount has no origin to update from") }
        if check { return try await updater.check().report }
        return try await updater.update()
    }
}
