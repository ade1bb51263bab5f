import Foundation
import GRDB
import ODRFSCore

/// One verified pack file in the cache, as the index records it.
///
/// Rows are keyed by content hash, not pack id: a pack unchanged between bundle
/// versions keeps its row, its file and its access history.
public struct CachedPack: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "pack"

    public var sha256: String
    /// The pack id it had when it was fetched (for logs and status of orphans).
    public var packID: String
    public var bytes: Int64
    public var firstFetch: Date
    public var lastAccess: Date?
    public var accessCount: Int64
    /// The file's identity when it was verified (size, mtime in ns, inode): a file
    /// that changed since is hashed again at startup before it is trusted.
    public var fileSize: Int64
    public var fileModifiedNanoseconds: Int64
    public var fileInode: Int64
    /// ``PackDescriptor/chunkListDigest`` of the descriptor the file was verified against;
    /// nil for rows from before it was recorded, whose files were checked by their
    /// whole-file SHA-256 as well and are right for any descriptor of that hash.
    public var chunkList: String?

    public init(sha256: ContentHash, packID: PackID, bytes: ByteCount, firstFetch: Date, identity: FileIdentity,
                chunkList: ContentHash? = nil) {
        self.sha256 = sha256.hex
        self.chunkList = chunkList?.hex
        self.packID = packID.rawValue
        self.bytes = bytes.value
        self.firstFetch = firstFetch
        self.lastAccess = nil
        self.accessCount = 0
        self.fileSize = identity.size
        self.fileModifiedNanoseconds = identity.modifiedNanoseconds
        self.fileInode = identity.inode
    }

    /// Whether this verified file may serve `pack`: it was verified against the same chunks.
    public func isVerified(for pack: PackDescriptor) -> Bool {
        sha256 == pack.sha256.hex && (chunkList == nil || chunkList == pack.chunkListDigest.hex)
    }

    public var identity: FileIdentity {
        FileIdentity(size: fileSize, modifiedNanoseconds: fileModifiedNanoseconds, inode: fileInode)
    }
}

/// What `stat` says about a file, enough to notice that it was replaced or rewritten.
public struct FileIdentity: Sendable, Equatable {
    public var size: Int64
    public var modifiedNanoseconds: Int64
    public var inode: Int64

    public init(size: Int64, modifiedNanoseconds: Int64, inode: Int64) {
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
        self.inode = inode
    }

    /// The identity of the file at `path`, or nil if it is missing or not a regular file.
    public static func of(path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return FileIdentity(
            size: Int64(info.st_size),
            modifiedNanoseconds: Timestamp.totalNanoseconds(seconds: Int64(info.st_mtim.tv_sec), nanoseconds: Int64(info.st_mtim.tv_nsec)),
            inode: Int64(bitPattern: UInt64(info.st_ino))
        )
    }
}

/// A user's preservation priority for a tag, overriding the manifest's default.
public struct TagPriority: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "tagPriority"
    public var tag: String
    public var priority: Double

    public init(tag: Tag, priority: Double) {
        self.tag = tag.name
        self.priority = priority
    }
}
