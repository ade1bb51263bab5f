import Foundation

/// The NAME of a configured bundle: `/etc/odrfs/bundles.d/NAME.conf`, mounted at
/// `/odr/NAME`. It comes from outside (autofs passes whatever name a program looked up
/// under `/odr`, and `mount.odrfs` gets it from /etc/fstab), and paths are built from it,
/// so it is checked before any path is: 1-64 characters of ASCII letters, digits, `.`,
/// `_` and `-`, starting with a letter or digit, with no `..` (so never `.`, `..`, a
/// hidden name or a slash).
public struct BundleName: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    /// The longest name: well under NAME_MAX once `.conf` is appended.
    public static let maximumLength = 64

    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard (1...Self.maximumLength).contains(bytes.count),
              let first = bytes.first, Self.isAlphanumeric(first),
              bytes.allSatisfy({ Self.isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }),
              !text.contains("..")
        else { return nil }
        rawValue = text
    }

    public var description: String { rawValue }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
