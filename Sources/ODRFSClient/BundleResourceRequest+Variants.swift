import ODRFSControl

extension BundleResourceRequest {
    /// The variant each of the bundle's variant keys serves on this request's mount
    /// (`["tcf": "astc", "locale": "it"]`; empty when the bundle declares none). Its tags
    /// resolve to these variants' packs. Read-only here: `odrfs variant` changes it.
    public var variants: [String: String] {
        get async throws(BundleResourceRequestError) {
            try await Self.variants(mountpoint: mountpoint)
        }
    }

    /// The variants the mount at `mountpoint` serves (see ``variants``).
    public static func variants(mountpoint: String) async throws(BundleResourceRequestError) -> [String: String] {
        let reply = try await oneShot(.status, mountpoint: mountpoint)
        guard let status = reply.status else {
            throw .failed(ControlError(.internalError, "the daemon's status reply has no snapshot"))
        }
        return status.variants
    }
}
