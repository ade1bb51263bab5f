/// The on-disk layout of a file index (`.odrx`). All integers are little-endian.
///
/// ```
/// header (64 bytes)
///   0  magic "ODRIDX1\0"        8  version u32 (4; 1 to 3 are still read)  12 recordSize u32 (64)
///   16 entryCount u32           20 packCount u32
///   24 recordsOffset u64        32 recordsLength u64
///   40 stringsOffset u64        48 stringsLength u64
///   56 digestsOffset u64 (versions 2 to 4; reserved in version 1)
/// record (64 bytes), one per entry, breadth-first; children of a directory are contiguous
/// and sorted by name bytes, so lookup is a binary search and entry number + 1 an inode number
///   0  parent u32               4  kind u8, 3 reserved bytes (0)
///   8  permissions u32          12 nameLength u32       16 nameOffset u64 (into strings)
///   24 size u64                 32 mtime seconds i64    40 mtime nanoseconds u32
///   44 pack u32 (0xFFFFFFFF unless a regular file)
///   48 data u64: files: content offset in the pack; dirs: first child; symlinks: target offset
///   56 count u32: dirs: child count; symlinks: target length; files: 0
///   60 subdirectoryCount u32 (dirs)
/// strings: names and symlink targets, UTF-8, not terminated
/// digests (version 2): entryCount × 32 bytes, entry n's at digestsOffset + 32·n: a regular
///   file's SHA-256 (all zero when the builder did not record it), all zero for other kinds.
///   Updates match files already in the cache by it, whichever pack holds them.
/// blocks (version 3): from the end of the digest table to the end of the index; absent when
///   that is empty. Per-block hashes of large regular files, so an update copies the unchanged
///   blocks of a changed file from the cache and fetches only the changed ones.
///   0  blockSize u32 (a power of two, 4 KiB to 16 MiB)   4 hashSize u32 (16)
///   8  fileCount u32            12 reserved u32 (0)
///   16 fileCount rows of 16 bytes, entry numbers strictly increasing:
///      0 entry u32 (a regular file of size > 0)  4 reserved u32 (0)  8 firstBlock u64
///   then the hashes, 16 bytes each (``BlockHash``): file row i's ⌈size / blockSize⌉ blocks
///   (the last one shorter) start at hash firstBlock, which is the sum of the rows before it;
///   block k covers the file's bytes k·blockSize ..< min((k+1)·blockSize, size).
/// chunks (version 4, in place of the blocks): from the end of the digest table to the end
///   of the index; absent when that is empty. Content-defined chunks of regular files of at
///   least 256 KiB (``ContentChunking``), each with its full SHA-256, so an update matches a
///   changed file's chunks wherever they moved, and copies them from any local file.
///   0  algorithm u32 (1: FastCDC, see ``ContentChunking``)  4 minimum u32  8 average u32
///   12 maximum u32              16 hashSize u32 (32)        20 fileCount u32
///   24 reserved u64 (0)
///   32 fileCount rows of 16 bytes, entry numbers strictly increasing:
///      0 entry u32 (a regular file of size > 0)  4 reserved u32 (0)  8 firstChunk u64
///   then the chunks, 40 bytes each: 0 end u64 (where the chunk ends in its file)
///   8 SHA-256 (32 bytes). File row i's chunks run from firstChunk to the next row's (the
///   last row's to the end); their ends strictly increase, no chunk is longer than
///   `maximum`, and the last ends at the file's size.
/// ```
///
/// A bundle whose manifest declares variants keeps its tree as built: a directory named
/// `NAME#KEY_VALUE` is the `VALUE` variant of the logical directory `NAME`, so the index
/// maps each logical path to its entries per variant through those names; a mount serves
/// the logical tree that ``VariantView`` resolves from it.
enum FileIndexLayout {
    static let magic: [UInt8] = Array("ODRIDX1\0".utf8)
    /// The version the writer produces with content-defined chunks (3 with fixed blocks).
    static let version: UInt32 = 4
    /// The version whose trailing table is fixed blocks.
    static let blocksVersion: UInt32 = 3
    /// Versions the reader accepts: 1 has no digest table, 2 no block table, 3 fixed blocks.
    static let readableVersions: ClosedRange<UInt32> = 1...4
    /// Bytes of one entry's SHA-256 in the digest table.
    static let digestSize = 32
    static let headerSize = 64
    static let recordSize = 64
    static let noPack: UInt32 = 0xFFFF_FFFF

    enum Header {
        static let version = 8
        static let recordSize = 12
        static let entryCount = 16
        static let packCount = 20
        static let recordsOffset = 24
        static let recordsLength = 32
        static let stringsOffset = 40
        static let stringsLength = 48
        static let digestsOffset = 56
    }

    /// The block table (version 3).
    enum Blocks {
        static let headerSize = 16
        static let rowSize = 16
        static let blockSize = 0
        static let hashSize = 4
        static let fileCount = 8
        static let reserved = 12
        static let rowEntry = 0
        static let rowReserved = 4
        static let rowFirstBlock = 8
        /// The block sizes a reader accepts.
        static let blockSizes: ClosedRange<UInt32> = 4096...(16 << 20)
    }

    /// The chunk table (version 4).
    enum Chunks {
        static let headerSize = 32
        static let rowSize = 16
        static let chunkSize = 40
        static let algorithm = 0
        static let minimum = 4
        static let average = 8
        static let maximum = 12
        static let hashSize = 16
        static let fileCount = 20
        static let reserved = 24
        static let rowEntry = 0
        static let rowReserved = 4
        static let rowFirstChunk = 8
        static let chunkEnd = 0
        static let chunkDigest = 8
        /// The only algorithm: FastCDC as ``ContentChunking`` describes it.
        static let fastCDC: UInt32 = 1
    }

    enum Record {
        static let parent = 0
        static let kind = 4
        static let permissions = 8
        static let nameLength = 12
        static let nameOffset = 16
        static let size = 24
        static let mtimeSeconds = 32
        static let mtimeNanoseconds = 40
        static let pack = 44
        static let data = 48
        static let count = 56
        static let subdirectoryCount = 60
    }
}

/// Little-endian reads from an unaligned raw buffer (mmap offsets need not be aligned for a type).
extension UnsafeRawPointer {
    @inline(__always) func u32(_ offset: Int) -> UInt32 {
        UInt32(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inline(__always) func u64(_ offset: Int) -> UInt64 {
        UInt64(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    @inline(__always) func i64(_ offset: Int) -> Int64 {
        Int64(littleEndian: loadUnaligned(fromByteOffset: offset, as: Int64.self))
    }
}

/// Little-endian appends for the writer.
extension Array where Element == UInt8 {
    mutating func appendLE(_ value: UInt32) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    mutating func appendLE(_ value: UInt64) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    mutating func appendLE(_ value: Int64) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}
