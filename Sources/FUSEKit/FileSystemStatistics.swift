import Glibc

/// What `statfs(2)` / `df` / `stat -f` show for the mount (`struct statvfs`).
public struct FileSystemStatistics: Sendable, Hashable {
    /// Preferred I/O size (`f_bsize`).
    public var blockSize: UInt64
    /// The unit of the block counts below (`f_frsize`).
    public var fragmentSize: UInt64
    public var totalBlocks: UInt64
    public var freeBlocks: UInt64
    /// Free blocks an unprivileged user may use (`f_bavail`).
    public var availableBlocks: UInt64
    public var totalFiles: UInt64
    public var freeFiles: UInt64
    /// Longest file name component (`f_namemax`).
    public var maximumNameLength: UInt64

    public init(
        blockSize: UInt64 = 4096,
        fragmentSize: UInt64 = 4096,
        totalBlocks: UInt64 = 0,
        freeBlocks: UInt64 = 0,
        availableBlocks: UInt64 = 0,
        totalFiles: UInt64 = 0,
        freeFiles: UInt64 = 0,
        maximumNameLength: UInt64 = 255
    ) {
        self.blockSize = blockSize
        self.fragmentSize = fragmentSize
        self.totalBlocks = totalBlocks
        self.freeBlocks = freeBlocks
        self.availableBlocks = availableBlocks
        self.totalFiles = totalFiles
        self.freeFiles = freeFiles
        self.maximumNameLength = maximumNameLength
    }

    var cValue: statvfs {
        var result = statvfs()
        result.f_bsize = UInt(blockSize)
        result.f_frsize = UInt(fragmentSize)
        result.f_blocks = fsblkcnt_t(totalBlocks)
        result.f_bfree = fsblkcnt_t(freeBlocks)
        result.f_bavail = fsblkcnt_t(availableBlocks)
        result.f_files = fsfilcnt_t(totalFiles)
        result.f_ffree = fsfilcnt_t(freeFiles)
        result.f_favail = fsfilcnt_t(freeFiles)
        result.f_namemax = UInt(maximumNameLength)
        return result
    }
}
