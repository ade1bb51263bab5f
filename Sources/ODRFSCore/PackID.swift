/// Identifies a pack by the exact set of tags its files carry: the sorted tag names joined by
/// "+" ("Level1+Level2"), or "base" for the files that no tag matches.
public struct PackID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The id as it appears in the manifest and on the command line.
    public let rawValue: String

    /// The pack of untagged files: always present, never purged.
    public static let base = PackID("base")

    /// Wraps a raw id without checking it against any tag set.
    public init(_ raw: String) {
        self.rawValue = raw
    }

    /// The id of the pack holding the files tagged with exactly `tags` (order and duplicates
    /// do not matter), or ``base`` when `tags` is empty.
    public init(tags: [Tag]) {
        let names = Set(tags).sorted().map(\.name)
        self.rawValue = names.isEmpty ? PackID.base.rawValue : names.joined(separator: "+")
    }

    public var description: String { rawValue }

    public static func < (lhs: PackID, rhs: PackID) -> Bool {
        lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
    }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
