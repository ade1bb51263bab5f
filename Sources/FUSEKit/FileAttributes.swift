import Glibc

/// What `stat(2)` shows for one file: the attributes FUSEKit sends in
/// getattr, lookup and readdirplus replies.
public struct FileAttributes: Sendable, Hashable {
    public var inode: InodeNumber
    /// The full `st_mode`, file type bits included (`S_IFREG | 0o444`, `S_IFDIR | 0o555`, ...).
    public var mode: UInt32
    public var linkCount: UInt32
    public var size: UInt64
    public var uid: UInt32
    public var gid: UInt32
    public var modificationTime: Timespec
    public var accessTime: Timespec
    public var changeTime: Timespec
    /// `st_blksize`: the I/O size the kernel and tools like `cp` prefer.
    public var blockSize: UInt32

    public init(
        inode: InodeNumber,
        mode: UInt32,
        linkCount: UInt32 = 1,
        size: UInt64 = 0,
        uid: UInt32 = 0,
        gid: UInt32 = 0,
        modificationTime: Timespec = .epoch,
        accessTime: Timespec? = nil,
        changeTime: Timespec? = nil,
        blockSize: UInt32 = 128 * 1024
    ) {
        self.inode = inode
        self.mode = mode
        self.linkCount = linkCount
        self.size = size
        self.uid = uid
        self.gid = gid
        self.modificationTime = modificationTime
        // An immutable file was last accessed/changed, as far as anyone can tell, when it was written.
        self.accessTime = accessTime ?? modificationTime
        self.changeTime = changeTime ?? modificationTime
        self.blockSize = blockSize
    }

    /// True when the file type bits say directory (`S_IFDIR`).
    public var isDirectory: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFDIR) }

    /// The C `struct stat` libfuse sends to the kernel.
    var stat: Glibc.stat {
        var result = Glibc.stat()
        result.st_ino = ino_t(inode.rawValue)
        result.st_mode = mode_t(mode)
        result.st_nlink = nlink_t(linkCount)
        result.st_size = off_t(clamping: size)
        result.st_uid = uid_t(uid)
        result.st_gid = gid_t(gid)
        result.st_blksize = blksize_t(blockSize)
        // st_blocks counts 512-byte units regardless of st_blksize; `du` relies on it.
        result.st_blocks = blkcnt_t(clamping: (size + 511) / 512)
        result.st_mtim = modificationTime.cValue
        result.st_atim = accessTime.cValue
        result.st_ctim = changeTime.cValue
        return result
    }
}

extension Timespec {
    var cValue: timespec {
        timespec(tv_sec: Int(seconds), tv_nsec: Int(nanoseconds))
    }
}
