import ODRFSCore

/// The `variant` operation. A separate requirement with a default, so that services
/// without a mounted bundle (test fakes) need not implement it.
extension ControlService {
    /// Fails with `unsupported`; the mount daemon's service overrides it.
    public func switchVariants(to preferences: VariantPreferences) async throws(ControlError) -> VariantReport {
        throw ControlError(.unsupported, "this daemon serves no bundle whose variants could change")
    }
}
