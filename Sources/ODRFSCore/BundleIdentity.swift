/// The bundle's identity, as Apple's bundle identifier names an app ("com.example.Game"):
/// the same for every revision, origin and mirror of one bundle, so that a machine-wide
/// store can say which of its bundles are one product (`odrfs store status`'s `bundle`).
///
/// Written by `odrfs build` into the manifest's `bundle` key (from `bundle:` in the tag spec,
/// `--bundle-id`, the dist dir's previous manifest, or the resource directory's name, in that
/// order). Bounded like every manifest field: 1…``maximumBytes`` bytes of ASCII letters,
/// digits, '.', '-' and '_', not starting with '.' or '-' (no path, no control character,
/// nothing a log line or a file name could be forged with).
public struct BundleIdentity: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The identity's text.
    public let rawValue: String

    public static let maximumBytes = 255

    /// A valid identity, or nil.
    public init?(_ text: String) {
        guard Self.problem(with: text) == nil else { return nil }
        rawValue = text
    }

    /// Wraps `text` as read from a manifest, unchecked: the manifest's validation reports a
    /// bad identity with its own error kind.
    init(unvalidated text: String) {
        rawValue = text
    }

    /// Why `text` cannot be an identity, or nil when it is valid.
    public static func problem(with text: String) -> String? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= maximumBytes else {
            return "a bundle identity has 1 to \(maximumBytes) bytes"
        }
        guard bytes.allSatisfy(isAllowed) else {
            return "a bundle identity has only ASCII letters, digits, '.', '-' and '_'"
        }
        guard bytes[0] != UInt8(ascii: "."), bytes[0] != UInt8(ascii: "-") else {
            return "a bundle identity does not start with '.' or '-'"
        }
        return nil
    }

    /// An identity made from any name (a directory's): every other character becomes '-',
    /// leading dots and dashes go, and what is left is cut to the bound; "bundle" if nothing is.
    public init(deriving name: String) {
        var bytes = name.utf8.map { Self.isAllowed($0) ? $0 : UInt8(ascii: "-") }
        while let first = bytes.first, first == UInt8(ascii: ".") || first == UInt8(ascii: "-") { bytes.removeFirst() }
        bytes = Array(bytes.prefix(Self.maximumBytes))
        rawValue = bytes.isEmpty ? "bundle" : String(decoding: bytes, as: UTF8.self)
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }

    public var description: String { rawValue }

    public static func < (lhs: BundleIdentity, rhs: BundleIdentity) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Decodes without validating, so that the manifest's validation reports a bad identity
    /// with its own error kind.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
