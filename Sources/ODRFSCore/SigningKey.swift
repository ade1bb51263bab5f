import Crypto
import Foundation

/// The Ed25519 private key that signs manifests (`odrfs build --sign-key KEYFILE`).
///
/// File format (written by `odrfs keygen` with mode 0600), one line:
/// ```
/// odrfs-ed25519-private <base64 of the 32-byte private key seed>
/// ```
public struct SigningKey: Sendable {
    public static let label = "odrfs-ed25519-private"

    /// The 32-byte seed (Crypto's key type is not Sendable; the seed is, and rebuilding
    /// the key from it is cheap next to signing a manifest).
    private let seed: [UInt8]

    private var key: Curve25519.Signing.PrivateKey {
        // The seed was accepted by this initializer before; it cannot fail now.
        // swiftlint:disable:next force_try
        try! Curve25519.Signing.PrivateKey(rawRepresentation: seed)
    }

    /// A new random key.
    public init() {
        seed = Array(Curve25519.Signing.PrivateKey().rawRepresentation)
    }

    /// Parses the contents of a private key file.
    public init(fileContents: some Collection<UInt8>) throws(KeyFormatError) {
        guard let fields = KeyText.fields(of: fileContents, label: Self.label, fieldCount: 1),
              let seed = KeyText.base64(fields[0], count: 32),
              (try? Curve25519.Signing.PrivateKey(rawRepresentation: seed)) != nil else {
            throw KeyFormatError("not an odrfs private key file: expected one line '\(Self.label) <base64 of 32 bytes>' (made by `odrfs keygen`)")
        }
        self.seed = seed
    }

    /// The private key file's contents.
    public var fileContents: String {
        "\(Self.label) \(Data(seed).base64EncodedString())\n"
    }

    public var publicKey: TrustKey {
        // A public key derived from a valid private key always has 32 bytes.
        // swiftlint:disable:next force_try
        try! TrustKey(rawRepresentation: Array(key.publicKey.rawRepresentation))
    }

    /// The signature file for exactly these manifest bytes. Deterministic (RFC 8032
    /// Ed25519 as BoringSSL implements it), so a signed build stays byte-identical.
    public func sign(_ manifest: Data) throws(KeyFormatError) -> ManifestSignature {
        guard let signature = try? key.signature(for: manifest) else {
            throw KeyFormatError("cannot sign with this key")
        }
        return ManifestSignature(keyID: publicKey.id, signature: Array(signature))
    }
}
