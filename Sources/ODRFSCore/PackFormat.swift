/// How a pack file is laid out: an uncompressed POSIX tar (pax) archive of regular files.
///
/// Tar because operators and users can inspect or unpack a pack with standard tools
/// (`tar tvf packs/<sha>.tar`); uncompressed because the mount reads file bytes in place at
/// the offsets the index records, and the kernel page cache can serve them directly.
/// Directories and symlinks live only in the file index.
public enum PackFormat {
    /// Tar's unit: headers are one block, contents are padded to a multiple of it.
    public static let blockSize = 512
    /// Fields of the ustar header that only fit this many octal digits.
    static let maxOctalSize: UInt64 = (1 << 33) - 1   // 11 octal digits
    static let maxNameBytes = 100

    /// Zero bytes that pad `contentSize` up to a whole block.
    public static func paddingLength(forContentSize contentSize: UInt64) -> Int {
        let remainder = Int(contentSize % UInt64(blockSize))
        return remainder == 0 ? 0 : blockSize - remainder
    }

    /// The end-of-archive marker: two zero blocks.
    public static let endOfArchive = [UInt8](repeating: 0, count: 2 * blockSize)
}
