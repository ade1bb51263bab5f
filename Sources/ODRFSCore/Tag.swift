/// A tag names a set of resources ("Level1", "Italy"), as in Apple's On-Demand Resources.
///
/// Files carrying exactly the same set of tags form one pack (see ``PackID``). Tag names are
/// part of pack ids, which join names with "+", so a valid name never contains "+", "/", ","
/// or control characters, and "base" is reserved for the pack of untagged files.
/// The initializer does not validate, so that decoding code can report a problem with context;
/// use ``validationProblem`` where names come from users.
public struct Tag: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The tag's name, exactly as written in the tag spec.
    public let name: String

    /// Wraps a name without validating it; see ``validationProblem``.
    public init(_ name: String) {
        self.name = name
    }

    /// Why this name cannot be a tag, or nil when it is valid.
    public var validationProblem: String? {
        if name.isEmpty { return "a tag name must not be empty" }
        if name == PackID.base.rawValue { return "\"base\" is reserved for the pack of untagged files" }
        for scalar in name.unicodeScalars {
            switch scalar {
            case "+": return "a tag name must not contain '+' (it joins tags in pack ids)"
            case "/": return "a tag name must not contain '/'"
            case ",": return "a tag name must not contain ','"
            default:
                if Self.isControl(scalar) { return "a tag name must not contain control characters" }
            }
        }
        return nil
    }

    /// Whether `scalar` is a control character: general category Cc, which Unicode's
    /// stability policy fixes at these two ranges. Compared directly, without a property
    /// lookup per scalar: 100,000 tags are checked at every mount of a ten-million-file bundle.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    public var description: String { name }

    public static func < (lhs: Tag, rhs: Tag) -> Bool {
        // Byte order, not locale order: pack ids and manifests must sort the same everywhere.
        lhs.name.utf8.lexicographicallyPrecedes(rhs.name.utf8)
    }

    public init(from decoder: any Decoder) throws {
        self.name = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}
