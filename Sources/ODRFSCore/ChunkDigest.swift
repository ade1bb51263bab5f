import Crypto

/// The hash a file index records for one chunk of a large file: a full SHA-256 for a
/// content-defined chunk (index version 4), or its first 128 bits for a fixed block
/// (version 3, ``BlockHash``). Two digests of different kinds never compare equal, so chunks
/// of a version-3 index never match those of a version-4 one: they were cut differently.
///
/// Compact and cheap to hash (four words), because an update keys a table of every local
/// chunk by it. A digest only ever says where local bytes might be copied from: the copied
/// bytes are hashed again before they are used, and the assembled pack is verified against
/// the signed manifest before it is published.
public struct ChunkDigest: Hashable, Sendable, CustomStringConvertible {
    /// How the digest was made.
    public enum Kind: UInt8, Sendable {
        /// SHA-256 truncated to 128 bits (the last two words are zero).
        case truncatedSHA256
        /// The full SHA-256.
        case sha256
    }

    public let kind: Kind
    let words: (UInt64, UInt64, UInt64, UInt64)

    /// Bytes of a full digest in the index.
    public static let sha256ByteCount = 32

    public init(sha256 digest: SHA256.Digest) {
        self = digest.withUnsafeBytes { ChunkDigest(loading: $0.baseAddress!, at: 0) }
    }

    /// A version-3 block hash.
    public init(block: BlockHash) {
        kind = .truncatedSHA256
        words = (block.high, block.low, 0, 0)
    }

    /// The 32 stored bytes of a full SHA-256 at `offset` of `base`.
    init(loading base: UnsafeRawPointer, at offset: Int) {
        kind = .sha256
        words = (UInt64(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)),
                 UInt64(bigEndian: base.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)),
                 UInt64(bigEndian: base.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self)),
                 UInt64(bigEndian: base.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self)))
    }

    /// The digest of `bytes` made the way this one was: whether they match it.
    public func matches(_ bytes: UnsafeRawBufferPointer) -> Bool {
        switch kind {
        case .truncatedSHA256: ChunkDigest(block: BlockHash.of(bytes)) == self
        case .sha256: ChunkDigest(sha256: SHA256.hash(data: bytes)) == self
        }
    }

    /// The stored bytes: 32 for a full SHA-256, 16 for a truncated one.
    public var storedBytes: [UInt8] {
        var out: [UInt8] = []
        let count = kind == .sha256 ? 4 : 2
        for word in [words.0, words.1, words.2, words.3].prefix(count) {
            Swift.withUnsafeBytes(of: word.bigEndian) { out.append(contentsOf: $0) }
        }
        return out
    }

    public var description: String { ContentHash.hexString(storedBytes) }

    public static func == (a: ChunkDigest, b: ChunkDigest) -> Bool {
        a.kind == b.kind && a.words == b.words
    }

    public func hash(into hasher: inout Hasher) {
        // The words are already uniformly distributed: two of them are plenty.
        hasher.combine(words.0)
        hasher.combine(words.1)
    }
}

/// One chunk of a large regular file, as the file index records it: where it lies in the
/// file and its digest.
public struct FileChunk: Sendable, Equatable {
    public var offset: Int64
    public var length: Int64
    public var digest: ChunkDigest

    public init(offset: Int64, length: Int64, digest: ChunkDigest) {
        self.offset = offset
        self.length = length
        self.digest = digest
    }

    public var range: Range<Int64> { offset..<(offset + length) }
}

/// How an index chunks its large files.
public enum IndexChunking: Sendable, Equatable {
    /// Version 3: fixed blocks of a power-of-two size, with truncated hashes.
    case fixedBlocks(ByteCount)
    /// Version 4: content-defined chunks with full SHA-256 hashes.
    case contentDefined(ContentChunking)
}
