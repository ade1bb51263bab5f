import Foundation

/// The trust decision of a mount with `--trust-key`: pure (no I/O, no clock), so that every
/// case is a unit test. The daemon's manifest loading calls it with the bytes it fetched (or
/// the cached copies, offline), the time, and the revisions the cache has seen; it records
/// the revision of a manifest it accepts.
///
/// Checks, in this order, so that no byte of an unauthenticated manifest reaches the JSON
/// parser: a signature file is present and well formed; its key is trusted; the signature
/// covers the exact manifest bytes; the manifest decodes and validates; it has not expired
/// (`now` before `expires`); its revision is at least the highest revision seen with any of
/// the trusted keys (equal is allowed: the same manifest mounted again). Comparing with all
/// trusted keys, not only the signer, keeps a rotation from reopening rollbacks: revisions
/// count builds of the dist dir, whichever key signed them.
public struct ManifestTrust: Sendable {
    public let trustedKeys: [TrustKey]

    public init(trustedKeys: [TrustKey]) {
        self.trustedKeys = trustedKeys
    }

    /// A manifest that passed every check, and the key that signed it.
    public struct Verified: Sendable {
        public let manifest: Manifest
        public let signer: TrustKey
    }

    /// Manifest bytes whose signature a trusted key made: only ``authenticate(manifest:signature:)``
    /// makes one. Its bytes may be read (a mount reads the file index's name from them to
    /// start that download early); nothing in them is trusted until ``verify(_:now:seen:)``.
    public struct Authenticated: Sendable {
        public let data: Data
        public let signer: TrustKey

        fileprivate init(data: Data, signer: TrustKey) {
            self.data = data
            self.signer = signer
        }
    }

    public func verify(manifest data: Data, signature: Data?, now: Date,
                       seen: [KeyID: SeenRevision]) throws(ManifestTrustError) -> Verified {
        try verify(try authenticate(manifest: data, signature: signature), now: now, seen: seen)
    }

    /// The first checks of ``verify(manifest:signature:now:seen:)``: a signature file is
    /// present and well formed, its key is trusted, and it covers the exact bytes.
    public func authenticate(manifest data: Data, signature: Data?) throws(ManifestTrustError) -> Authenticated {
        guard let signature else {
            throw ManifestTrustError(.unsigned, "the manifest is not signed (no \(ManifestSignature.fileName)) but --trust-key requires a signature by \(keyList)")
        }
        let parsed: ManifestSignature
        do {
            parsed = try ManifestSignature(fileContents: signature)
        } catch {
            throw ManifestTrustError(.malformedSignature, error.message)
        }
        guard let signer = trustedKeys.first(where: { $0.id == parsed.keyID }) else {
            throw ManifestTrustError(.untrustedKey, "signed by key \(parsed.keyID), which is not trusted (trusted: \(keyList))")
        }
        guard signer.isValidSignature(parsed.signature, for: data) else {
            throw ManifestTrustError(.badSignature, "the signature by key \(signer.id) does not match the manifest; it was altered or the signature belongs to another manifest")
        }
        return Authenticated(data: data, signer: signer)
    }

    /// The rest of ``verify(manifest:signature:now:seen:)`` for authenticated bytes: they
    /// decode and validate, have not expired, and are no rollback.
    public func verify(_ authenticated: Authenticated, now: Date, seen: [KeyID: SeenRevision]) throws(ManifestTrustError) -> Verified {
        let signer = authenticated.signer
        guard trustedKeys.contains(signer) else {
            throw ManifestTrustError(.untrustedKey, "signed by key \(signer.id), which is not trusted (trusted: \(keyList))")
        }
        let manifest: Manifest
        do {
            manifest = try Manifest.decode(authenticated.data)
        } catch {
            throw ManifestTrustError(.invalidManifest, "signed by key \(signer.id) but invalid: \(error.message)")
        }
        if let expires = manifest.expires, now.timeIntervalSince1970 >= Double(expires) {
            // expires is within BundleLimits.expiryRange: exact as a Double and as a Date.
            let date = Date(timeIntervalSince1970: Double(expires))
            throw ManifestTrustError(.expired, "manifest expired at \(ManifestTrustError.format(date)) (revision \(manifest.revision)); the origin must publish a newer build")
        }
        let highest = trustedKeys.compactMap { seen[$0.id] }.max { $0.revision < $1.revision }
        if let highest, manifest.revision < highest.revision {
            throw ManifestTrustError(.rollback, "rollback to revision \(manifest.revision) refused: revision \(highest.revision) was seen on \(ManifestTrustError.format(highest.date))")
        }
        return Verified(manifest: manifest, signer: signer)
    }

    private var keyList: String {
        trustedKeys.isEmpty ? "no key" : trustedKeys.map(\.id.hex).joined(separator: ", ")
    }
}
