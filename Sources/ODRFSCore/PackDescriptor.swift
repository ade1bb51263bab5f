import Crypto
/// One pack as the manifest describes it: which tag set it holds, where its file is in the dist
/// dir, and the hashes that let a fetcher verify it whole and chunk by chunk.
public struct PackDescriptor: Codable, Sendable, Equatable {
    /// `PackID(tags: tags, variant: variantAssignment)`; "base" for the untagged files.
    public var id: PackID
    /// The exact tag set of every file in this pack, sorted.
    public var tags: [Tag]
    /// Path relative to the dist dir, content addressed: "packs/<sha256hex>.tar", or
    /// "packs/<sha256hex>.tar.zst" when compressed (the hash is always the tar's).
    public var file: String
    /// Size of the pack's tar (uncompressed; a compressed file's size is `compression.bytes`).
    public var bytes: ByteCount
    /// SHA-256 of the whole tar (uncompressed).
    public var sha256: ContentHash
    /// SHA-256 of each `Manifest.chunkSize` slice of the tar; the last slice may be shorter.
    public var chunks: [ContentHash]
    /// Number of regular files in the pack.
    public var files: Int
    /// How `file` is compressed (`packs/<sha256>.tar.zst`); nil for a plain tar. Read it
    /// through ``FrameTable``. `bytes`, `sha256` and `chunks` always describe the tar.
    public var compression: PackCompression?
    /// The variant of every file in this pack (`{"tcf": "astc"}`); nil for files outside
    /// every variant directory. Part of ``id``: `Level1[tcf=astc]`.
    public var variant: VariantAssignment?

    /// What a download is verified against, in one digest: SHA-256 over the size (8 bytes,
    /// little-endian) and every chunk hash (as its 64 hex digits). The cache records it with each pack file, so a
    /// file verified against one descriptor is trusted only for descriptors with the same
    /// chunks (see ``PackVerifier``).
    public var chunkListDigest: ContentHash {
        var hasher = SHA256()
        withUnsafeBytes(of: UInt64(bitPattern: bytes.value).littleEndian) { hasher.update(bufferPointer: $0) }
        for chunk in chunks {
            hasher.update(data: Array(chunk.hex.utf8))
        }
        return ContentHash(digest: hasher.finalize())
    }

    public init(id: PackID, tags: [Tag], file: String, bytes: ByteCount, sha256: ContentHash,
                chunks: [ContentHash], files: Int, compression: PackCompression? = nil, variant: VariantAssignment? = nil) {
        self.id = id
        self.tags = tags
        self.file = file
        self.bytes = bytes
        self.sha256 = sha256
        self.chunks = chunks
        self.files = files
        self.compression = compression
        self.variant = variant?.isEmpty == true ? nil : variant
    }

    /// ``variant``, or ``VariantAssignment/none``.
    public var variantAssignment: VariantAssignment { variant ?? .none }
}

/// Where the manifest finds the bundle's file index (see ``FileIndex``).
public struct IndexReference: Codable, Sendable, Equatable {
    /// Path relative to the dist dir, content addressed: "index/<sha256hex>.odrx".
    public var file: String
    public var bytes: ByteCount
    public var sha256: ContentHash
    /// Number of entries (directories, files and symlinks, the root included).
    public var entries: Int

    public init(file: String, bytes: ByteCount, sha256: ContentHash, entries: Int) {
        self.file = file
        self.bytes = bytes
        self.sha256 = sha256
        self.entries = entries
    }
}

/// A tag's metadata: how reluctantly its packs are purged, and every pack that holds files
/// carrying it (a tag request must make all of them local).
public struct TagDescriptor: Codable, Sendable, Equatable {
    public var tag: Tag
    /// 0...1, default 0 as in ODR; under disk pressure lower priority is purged first.
    public var preservationPriority: Double
    /// Every pack whose tag set contains `tag`, in manifest order.
    public var packs: [PackID]

    public init(tag: Tag, preservationPriority: Double = 0, packs: [PackID]) {
        self.tag = tag
        self.preservationPriority = preservationPriority
        self.packs = packs
    }
}
