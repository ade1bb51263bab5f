import ODRFSControl
import ODRFSCore

extension MountControlService {
    /// `odrfs update MNT [--check]`: what the origin offers and what moving to it fetches;
    /// without `check`, the move itself (see ``BundleUpdater``).
    public func update(check: Bool) async throws(ControlError) -> UpdateReport {
        guard let updater else { throw ControlError(.unsupported, "this mount has no origin to update from") }
        do {
            if check { return try await updater.check() }
            return try await updater.update()
        } catch {
            throw Self.controlError(error)
        }
    }

    /// `odrfs variant MNT KEY=VALUE…`: serve other variants (see ``BundleUpdater/switchVariants(to:)``).
    public func switchVariants(to preferences: VariantPreferences) async throws(ControlError) -> VariantReport {
        guard let updater else { throw ControlError(.unsupported, "this mount cannot switch its variants") }
        do {
            return try await updater.switchVariants(to: preferences)
        } catch {
            throw Self.controlError(error)
        }
    }

    /// An update's failure → the control plane's error: the kind picks the code, the
    /// message passes unchanged.
    static func controlError(_ error: UpdateError) -> ControlError {
        let code: ControlError.Code
        switch error.kind {
        case .busy, .invalidRequest: code = .badRequest
        case .rollbackRefused: code = .rollbackRefused
        case .originUnreachable: code = .originUnreachable
        case .cancelled: code = .cancelled
        case .resourceUnavailable: code = .resourceUnavailable
        case .internalError: code = .internalError
        }
        return ControlError(code, error.message)
    }
}
