/// The `update` operation. A separate requirement with a default, so that services that
/// serve no origin (test fakes) need not implement it.
extension ControlService {
    /// Fails with `unsupported`; the mount daemon's service overrides it.
    public func update(check: Bool) async throws(ControlError) -> UpdateReport {
        throw ControlError(.unsupported, "this daemon does not check for updates")
    }
}
