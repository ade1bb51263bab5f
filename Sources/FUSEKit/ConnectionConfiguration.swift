import CFuse3

/// What the filesystem asks of the kernel connection during `init`.
///
/// Each flag is requested only when the kernel offers it (`conn->capable`);
/// FUSEKit sets or clears the bit in `conn->want` accordingly, so a `false`
/// here also turns off a capability libfuse enables by default.
/// `nil` means "leave libfuse's default".
public struct ConnectionConfiguration: Sendable {
    /// Reply to reads by splicing from a file descriptor (`FUSE_CAP_SPLICE_WRITE`):
    /// `replyData(fileDescriptor:...)` then moves pages without copying them.
    public var spliceWrite = true
    /// Move spliced pages into the page cache instead of copying (`FUSE_CAP_SPLICE_MOVE`).
    public var spliceMove = true
    /// Receive write payloads by splice (`FUSE_CAP_SPLICE_READ`); useless for a read-only filesystem.
    public var spliceRead = false
    /// Answer `ls -l` style listings with readdirplus, saving a lookup per entry (`FUSE_CAP_READDIRPLUS`).
    public var readdirPlus = true
    /// Let the kernel decide per directory between readdir and readdirplus
    /// (`FUSE_CAP_READDIRPLUS_AUTO`); off means always readdirplus.
    public var readdirPlusAuto = false
    /// Allow several reads of one file in flight (`FUSE_CAP_ASYNC_READ`).
    public var asyncRead = true
    /// Allow concurrent lookups and readdirs in one directory (`FUSE_CAP_PARALLEL_DIROPS`).
    public var parallelDirectoryOperations = true
    /// Let the kernel cache readlink results (`FUSE_CAP_CACHE_SYMLINKS`).
    public var cacheSymlinks = true
    /// Skip opendir and releasedir (`FUSE_CAP_NO_OPENDIR_SUPPORT`, Linux 5.1+):
    /// FUSEKit answers the first opendir with `ENOSYS` itself, and the kernel
    /// then opens directories locally with their listings cached
    /// (`keep_cache` and `cache_readdir`), saving two round trips per listing.
    /// Only for filesystems whose directories never change while mounted;
    /// `openDirectory` and `releaseDirectory` are then never called.
    public var noOpenDirectorySupport = false
    /// Ask for FUSE passthrough (`FUSE_PASSTHROUGH`, Linux 6.9+) when the kernel offers
    /// it: opens may then hand the kernel a backing file (``Passthrough``). libfuse 3.14
    /// cannot negotiate it; FUSEKit patches the INIT reply itself (see the module docs).
    public var passthrough = false
    /// How many stacked filesystems a backing file may sit on (`max_stack_depth`):
    /// 1 allows ext4, xfs and the like, not overlayfs.
    public var passthroughMaxStackDepth: UInt32 = 1
    /// Invalidate cached data when a file's mtime changes (`FUSE_CAP_AUTO_INVAL_DATA`).
    public var autoInvalidateData: Bool? = nil
    /// Upper bound for kernel readahead in bytes (`conn->max_readahead`); the kernel's own limit still applies.
    public var maxReadahead: UInt32? = nil
    /// How many background requests (readahead, async reads) the kernel may queue (`conn->max_background`).
    public var maxBackground: UInt16? = nil
    /// Queue length at which the kernel reports congestion (`conn->congestion_threshold`).
    public var congestionThreshold: UInt16? = nil

    public init() {}

    /// Writes the requests into libfuse's connection info, honouring what the kernel offers.
    func apply(to conn: inout fuse_conn_info) {
        conn.want = negotiate(capable: conn.capable, want: conn.want)
        if let maxReadahead {
            // The kernel announces its maximum in max_readahead; asking for more is an error.
            conn.max_readahead = min(conn.max_readahead, maxReadahead)
        }
        if let maxBackground {
            conn.max_background = UInt32(maxBackground)
        }
        if let congestionThreshold {
            conn.congestion_threshold = UInt32(congestionThreshold)
        }
    }

    /// The `want` bits after applying this configuration to what the kernel
    /// offers (`capable`) and what libfuse enabled by default (`want`).
    func negotiate(capable: UInt32, want: UInt32) -> UInt32 {
        var want = want
        func request(_ capability: Int32, _ wanted: Bool?) {
            guard let wanted else { return }
            // FUSE_CAP_* import as Int32 while want/capable are unsigned.
            let bit = UInt32(bitPattern: capability)
            if wanted, capable & bit != 0 {
                want |= bit
            } else if !wanted {
                want &= ~bit
            }
        }
        request(FUSE_CAP_SPLICE_WRITE, spliceWrite)
        request(FUSE_CAP_SPLICE_MOVE, spliceMove)
        request(FUSE_CAP_SPLICE_READ, spliceRead)
        request(FUSE_CAP_READDIRPLUS, readdirPlus)
        request(FUSE_CAP_READDIRPLUS_AUTO, readdirPlus && readdirPlusAuto)
        request(FUSE_CAP_ASYNC_READ, asyncRead)
        request(FUSE_CAP_PARALLEL_DIROPS, parallelDirectoryOperations)
        request(FUSE_CAP_CACHE_SYMLINKS, cacheSymlinks)
        request(FUSE_CAP_NO_OPENDIR_SUPPORT, noOpenDirectorySupport)
        request(FUSE_CAP_AUTO_INVAL_DATA, autoInvalidateData)
        return want
    }
}
