import Crypto

/// The first 128 bits of the SHA-256 of one fixed-size block of a file's content, as the
/// file index's block table records them (see ``FileIndexLayout``).
///
/// Why truncated: the table grows the index by 16 bytes per 64 KiB of large files (about
/// 0.025 %, e.g. 64 KiB for a 256 MiB file) and every update downloads the index. 128 bits
/// keep accidental collisions out of reach (birthday bound 2^64 blocks) and second preimages
/// at 2^128. A deliberate collision, which only the bundle's author could build, buys
/// nothing: a block hash only says where an update may copy local bytes from, and every
/// assembled pack is verified against the full SHA-256 chunk hashes of the signed manifest
/// before it is used, so a wrong block costs a failed verification, never a wrong byte.
public struct BlockHash: Hashable, Sendable, CustomStringConvertible {
    /// The digest's first 8 bytes, big-endian.
    public let high: UInt64
    /// The digest's next 8 bytes, big-endian.
    public let low: UInt64

    /// Bytes of a block hash in the index.
    public static let byteCount = 16

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The hash of `bytes`: SHA-256, truncated to its first 16 bytes.
    public static func of(_ bytes: UnsafeRawBufferPointer) -> BlockHash {
        let digest = SHA256.hash(data: bytes)
        return digest.withUnsafeBytes { raw in
            BlockHash(high: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                      low: UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }

    /// The hash of `bytes`: SHA-256, truncated to its first 16 bytes.
    public static func of(_ bytes: [UInt8]) -> BlockHash {
        bytes.withUnsafeBytes { of($0) }
    }

    /// Reads the 16 stored bytes at `offset` of `base`.
    static func load(_ base: UnsafeRawPointer, at offset: Int) -> BlockHash {
        BlockHash(high: UInt64(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)),
                  low: UInt64(bigEndian: base.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)))
    }

    /// The 16 stored bytes.
    var storedBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.byteCount)
        Swift.withUnsafeBytes(of: high.bigEndian) { out.append(contentsOf: $0) }
        Swift.withUnsafeBytes(of: low.bigEndian) { out.append(contentsOf: $0) }
        return out
    }

    public var description: String {
        ContentHash.hexString(storedBytes)
    }
}
