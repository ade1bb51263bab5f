/// The position of a pack in ``Manifest/packs``; the file index stores this instead of the
/// pack id so that a record stays fixed-size. Pack number 0 is always the base pack.
public struct PackNumber: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt32

    public init(_ raw: UInt32) {
        self.rawValue = raw
    }

    /// The base pack's number.
    public static let base = PackNumber(0)

    public var description: String { "#\(rawValue)" }

    public static func < (lhs: PackNumber, rhs: PackNumber) -> Bool { lhs.rawValue < rhs.rawValue }
}
