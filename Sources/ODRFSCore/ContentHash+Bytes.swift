/// A digest as its 32 raw bytes, for binary formats (the file index's digest table).
extension ContentHash {
    /// The number of bytes of a SHA-256.
    public static let byteCount = 32

    /// The hash of exactly 32 raw digest bytes; nil for any other length.
    public init?<Bytes: Collection>(digestBytes bytes: Bytes) where Bytes.Element == UInt8 {
        guard bytes.count == Self.byteCount, let hash = ContentHash(hex: Self.hexString(bytes)) else { return nil }
        self = hash
    }

    /// The 32 digest bytes.
    public var digestBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.byteCount)
        var high: UInt8?
        // `hex` holds exactly 64 lowercase hex digits (checked at init).
        for digit in hex.utf8 {
            let value = digit <= UInt8(ascii: "9") ? digit &- UInt8(ascii: "0") : digit &- UInt8(ascii: "a") &+ 10
            if let first = high {
                out.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return out
    }
}
