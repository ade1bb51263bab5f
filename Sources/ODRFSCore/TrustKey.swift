import Crypto
import Foundation

/// An Ed25519 public key a mount trusts (`odrfs mount --trust-key FILE.pub`).
///
/// File format (written by `odrfs keygen` as `KEYFILE.pub`), one line:
/// ```
/// odrfs-ed25519-public <base64 of the 32-byte raw public key>
/// ```
/// Codable as that line, so that the mount configuration carries the key itself, not a path.
public struct TrustKey: Sendable, Hashable, Codable, CustomStringConvertible {
    public static let label = "odrfs-ed25519-public"

    public let rawRepresentation: [UInt8]
    public let id: KeyID

    public init(rawRepresentation: [UInt8]) throws(KeyFormatError) {
        guard rawRepresentation.count == 32, (try? Curve25519.Signing.PublicKey(rawRepresentation: rawRepresentation)) != nil else {
            throw KeyFormatError("an Ed25519 public key has 32 bytes")
        }
        self.rawRepresentation = rawRepresentation
        self.id = KeyID(publicKey: rawRepresentation)
    }

    /// Parses the contents of a `.pub` file.
    public init(fileContents: some Collection<UInt8>) throws(KeyFormatError) {
        guard let fields = KeyText.fields(of: fileContents, label: Self.label, fieldCount: 1),
              let raw = KeyText.base64(fields[0], count: 32) else {
            throw KeyFormatError("not an odrfs public key file: expected one line '\(Self.label) <base64 of 32 bytes>' (made by `odrfs keygen`)")
        }
        try self.init(rawRepresentation: raw)
    }

    /// The `.pub` file's contents.
    public var fileContents: String {
        "\(Self.label) \(Data(rawRepresentation).base64EncodedString())\n"
    }

    /// Whether `signature` is this key's Ed25519 signature of `message`.
    public func isValidSignature(_ signature: [UInt8], for message: Data) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: rawRepresentation) else { return false }
        return key.isValidSignature(signature, for: message)
    }

    public var description: String { "key \(id)" }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            self = try TrustKey(fileContents: Array(text.utf8))
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(String(fileContents.dropLast()))
    }
}
