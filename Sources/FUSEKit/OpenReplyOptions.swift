/// Per-open caching hints returned with an open or opendir reply
/// (the bit-fields of `fuse_file_info`).
public struct OpenReplyOptions: Sendable {
    /// Keep the page cache from an earlier open of this file (`keep_cache`):
    /// right for immutable files, so repeat reads never reach the daemon.
    public var keepCache = false
    /// Bypass the page cache for this open (`direct_io`); reads may return short.
    public var directIO = false
    /// Let the kernel cache this directory's readdir results (`cache_readdir`; opendir only).
    public var cacheReaddir = false
    /// The file cannot be seeked (`nonseekable`), like a pipe.
    public var nonSeekable = false
    /// Closing the file needs no flush request (`noflush`): saves a round trip
    /// per close(2) on a read-only filesystem.
    public var noFlush = false

    /// Serve this open's reads and mmap from the backing file registered as this id
    /// (`FOPEN_PASSTHROUGH`); from ``Passthrough/beginOpen(inode:handle:backingPath:)``.
    /// `keepCache`, `cacheReaddir` and `nonSeekable` are then not sent (the kernel
    /// refuses them with passthrough).
    public var passthrough: BackingID? = nil

    public init(keepCache: Bool = false, directIO: Bool = false, cacheReaddir: Bool = false, nonSeekable: Bool = false, noFlush: Bool = false) {
        self.keepCache = keepCache
        self.directIO = directIO
        self.cacheReaddir = cacheReaddir
        self.nonSeekable = nonSeekable
        self.noFlush = noFlush
    }
}
