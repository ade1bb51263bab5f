/// Each regular file's SHA-256, from the digest table of a version-2 index (see
/// ``FileIndexLayout``). An update uses it to find files of a changed pack that the cache
/// already holds in some other pack, so only the missing bytes are fetched.
extension FileIndex {
    /// Whether this index carries a digest table (version 2 and later).
    public var hasFileDigests: Bool { digestsStart != nil }

    /// The regular file's SHA-256; nil for other kinds, out-of-range numbers, version-1
    /// indexes and files whose digest the builder did not record (all zero).
    public func sha256(of n: EntryNumber) -> ContentHash? {
        guard n.rawValue < count, kind(n.rawValue) == .regularFile, let digest = digestBytes(n.rawValue),
              digest.contains(where: { $0 != 0 }) else { return nil }
        return ContentHash(digestBytes: digest)
    }

    /// The 32 bytes of entry `n`'s digest slot, in the mapping; nil without a digest table.
    /// The table's bounds were checked at init, so any `n < count` is in range.
    @inline(__always) func digestBytes(_ n: UInt32) -> UnsafeRawBufferPointer? {
        guard let digestsStart else { return nil }
        return UnsafeRawBufferPointer(start: base + digestsStart + Int(n) * FileIndexLayout.digestSize,
                                      count: FileIndexLayout.digestSize)
    }
}
