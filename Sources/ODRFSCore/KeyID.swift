import Crypto
import Foundation

/// Names an Ed25519 public key in signature files and in the cache's record of revisions
/// seen: the first 8 bytes of the SHA-256 of the raw 32-byte public key, written as 16
/// lowercase hex digits. Short enough to read in a message, long enough that two keys of
/// one operator never collide by accident (the signature itself is what is checked).
public struct KeyID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let byteCount = 8
    public let bytes: [UInt8]

    /// The id of the raw public key `publicKey`.
    public init(publicKey: some DataProtocol) {
        bytes = Array(SHA256.hash(data: Array(publicKey)).prefix(Self.byteCount))
    }

    /// Parses 16 hex digits (either case); nil for anything else.
    public init?(hex: some StringProtocol) {
        let digits = Array(hex.utf8)
        guard digits.count == Self.byteCount * 2 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.byteCount)
        for position in stride(from: 0, to: digits.count, by: 2) {
            guard let high = Self.nibble(digits[position]), let low = Self.nibble(digits[position + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    public var description: String { hex }

    public static func < (lhs: KeyID, rhs: KeyID) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
