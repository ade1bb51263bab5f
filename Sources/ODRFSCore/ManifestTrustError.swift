import Foundation

/// Why a mount with `--trust-key` refused a manifest. The message is what the user sees.
public struct ManifestTrustError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What was wrong; lets callers and tests react without parsing text.
    public enum Kind: Sendable, Equatable {
        /// No `manifest.json.sig` next to the manifest.
        case unsigned
        /// The signature file is not in its format (see ``ManifestSignature``).
        case malformedSignature
        /// Signed by a key that is not among the trusted ones.
        case untrustedKey
        /// Names a trusted key, but is not its signature of these bytes.
        case badSignature
        /// Correctly signed, but not a valid manifest (see ``ManifestError``).
        case invalidManifest
        /// Its `expires` time has passed.
        case expired
        /// Older than a revision this cache already accepted with a trusted key.
        case rollback
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(Manifest.fileName): \(message)" }

    /// A date as the messages print it: ISO 8601 in UTC, to the second.
    static func format(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}
