import Foundation

/// `manifest.json.sig`, next to the manifest in a dist dir and in a mount's cache: which
/// key signed, and its Ed25519 signature of the exact bytes of `manifest.json`.
///
/// Format, one line of printable ASCII (at most 1 KiB, optional final newline):
/// ```
/// odrfs-ed25519-signature <key id: 16 hex digits> <base64 of the 64-byte signature>
/// ```
/// The key id (see ``KeyID``) only selects which trusted key to check with; the
/// signature is what proves anything.
public struct ManifestSignature: Sendable, Equatable {
    public static let fileName = Manifest.fileName + ".sig"
    public static let label = "odrfs-ed25519-signature"
    public static let signatureByteCount = 64

    public let keyID: KeyID
    public let signature: [UInt8]

    public init(keyID: KeyID, signature: [UInt8]) {
        self.keyID = keyID
        self.signature = signature
    }

    /// Parses a signature file as served by an origin: strict, bounded, never traps.
    public init(fileContents: some Collection<UInt8>) throws(KeyFormatError) {
        guard let fields = KeyText.fields(of: fileContents, label: Self.label, fieldCount: 2),
              let keyID = KeyID(hex: fields[0]),
              let signature = KeyText.base64(fields[1], count: Self.signatureByteCount) else {
            throw KeyFormatError("\(Self.fileName) is malformed: expected one line '\(Self.label) <16 hex digits> <base64 of 64 bytes>'")
        }
        self.init(keyID: keyID, signature: signature)
    }

    public var fileContents: String {
        "\(Self.label) \(keyID.hex) \(Data(signature).base64EncodedString())\n"
    }
}
