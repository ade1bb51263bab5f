import Foundation
import Crypto

/// A SHA-256 digest as 64 lowercase hex digits: names content-addressed files and verifies
/// every downloaded byte. Encodes as a plain JSON string; decoding rejects anything that is not
/// exactly 64 hex digits, so a manifest never carries a hash that could not match.
public struct ContentHash: Hashable, Sendable, Codable, CustomStringConvertible {
    public let hex: String

    /// Accepts 64 hex digits in either case and stores them lowercased; nil otherwise. Text
    /// already lowercase (what ODRFS writes: 200,000 hashes in a large manifest) is kept as
    /// it is, not copied.
    public init?(hex: String) {
        var hasUppercase = false
        guard hex.utf8.count == 64, hex.utf8.allSatisfy({ byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): return true
            case UInt8(ascii: "A")...UInt8(ascii: "F"): hasUppercase = true; return true
            default: return false
            }
        }) else { return nil }
        self.hex = hasUppercase ? hex.lowercased() : hex
    }

    public init(digest: SHA256.Digest) {
        self.hex = ContentHash.hexString(digest)
    }

    /// The SHA-256 of `bytes`.
    public static func of<Bytes: DataProtocol>(_ bytes: Bytes) -> ContentHash {
        ContentHash(digest: SHA256.hash(data: bytes))
    }

    static func hexString<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public var description: String { hex }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let hash = ContentHash(hex: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "expected 64 hex digits of a SHA-256, got \"\(text)\"")
        }
        self = hash
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}
