/// A manifest that cannot be trusted, with a message that names the exact problem, e.g.
/// "manifest.json: pack 'Level1' has 3 chunk hashes but 5 MiB needs 5".
public struct ManifestError: Error, CustomStringConvertible, Equatable {
    /// What kind of problem; lets callers and tests react without parsing text.
    public enum Kind: Sendable, Equatable {
        case syntax
        case unsupportedFormat
        case missingBasePack
        case duplicatePack
        case misplacedPack
        case unsafePath
        case invalidChunkSize
        case invalidSize
        case chunkCountMismatch
        case unknownTag
        case invalidTag
        case priorityOutOfRange
        case inconsistent
        /// `revision` outside ``BundleLimits/revisionRange``.
        case invalidRevision
        /// `expires` outside ``BundleLimits/expiryRange``.
        case invalidExpiry
        /// A size or count beyond ``BundleLimits``.
        case tooLarge
        /// An entry of `mirrors` is not a usable http(s) URL.
        case invalidMirror
        /// `bundle` is not a valid ``BundleIdentity``.
        case invalidBundleIdentity
    }

    public let kind: Kind
    /// The problem, without the "manifest.json: " prefix.
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(Manifest.fileName): \(message)" }

    init(decoding error: DecodingError) {
        func path(_ keys: [any CodingKey]) -> String {
            var text = ""
            for key in keys {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += (text.isEmpty ? "" : ".") + key.stringValue
                }
            }
            return text.isEmpty ? "the top level" : text
        }
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            self.init(.syntax, "not valid JSON: \(context.underlyingError.map { "\($0)" } ?? context.debugDescription)")
        case .dataCorrupted(let context):
            self.init(.syntax, "\(path(context.codingPath)): \(context.debugDescription)")
        case .keyNotFound(let key, let context):
            self.init(.syntax, "\(path(context.codingPath + [key])) is missing")
        case .typeMismatch(let type, let context):
            self.init(.syntax, "\(path(context.codingPath)) should be \(Self.describe(type))")
        case .valueNotFound(let type, let context):
            self.init(.syntax, "\(path(context.codingPath)) is null, expected \(Self.describe(type))")
        @unknown default:
            self.init(.syntax, "\(error)")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Int.Type, is Int64.Type: return "an integer"
        case is Double.Type: return "a number"
        default:
            let name = "\(type)"
            return name.hasPrefix("Array") ? "an array" : (name.hasPrefix("Dictionary") ? "an object" : "a \(name)")
        }
    }
}
