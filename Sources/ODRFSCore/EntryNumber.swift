/// The position of an entry in the ``FileIndex``. Entries are numbered breadth-first, so the
/// number is stable for a bundle version and `rawValue + 1` makes a ready inode number.
public struct EntryNumber: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt32

    public init(_ raw: UInt32) {
        self.rawValue = raw
    }

    /// The bundle's root directory.
    public static let root = EntryNumber(0)

    public var description: String { "entry \(rawValue)" }

    public static func < (lhs: EntryNumber, rhs: EntryNumber) -> Bool { lhs.rawValue < rhs.rawValue }
}
