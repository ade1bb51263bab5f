import CFuse3
import CFusePassthrough
import Glibc

/// The libfuse reply calls, shared by `FUSERequest` and `DeferredRequest`.
/// Each takes a request that the caller owns and returns libfuse's result
/// (0 or a negative errno); libfuse frees the request inside every call.
enum Reply {
    static func error(_ request: fuse_req_t, _ error: Errno) -> Int32 {
        fuse_reply_err(request, error.rawValue)
    }

    static func success(_ request: fuse_req_t) -> Int32 {
        fuse_reply_err(request, 0)
    }

    static func none(_ request: fuse_req_t) -> Int32 {
        fuse_reply_none(request)
        return 0
    }

    static func entry(_ request: fuse_req_t, _ parameters: EntryReplyParameters) -> Int32 {
        var entry = entryParameters(parameters)
        return fuse_reply_entry(request, &entry)
    }

    /// A lookup miss the kernel may cache for `timeout` seconds (inode 0 means "negative entry").
    static func negativeEntry(_ request: fuse_req_t, timeout: Double) -> Int32 {
        var entry = fuse_entry_param()
        entry.ino = 0
        entry.entry_timeout = timeout
        return fuse_reply_entry(request, &entry)
    }

    static func attributes(_ request: fuse_req_t, _ attributes: FileAttributes, timeout: Double) -> Int32 {
        var stat = attributes.stat
        return fuse_reply_attr(request, &stat, timeout)
    }

    static func open(_ request: fuse_req_t, handle: FileHandleID, options: OpenReplyOptions) -> Int32 {
        // A fresh fuse_file_info: the one libfuse passed to open lives on its
        // stack and is gone by the time a deferred reply is sent. fuse_reply_open
        // reads only fh and these bit-fields.
        var info = fuse_file_info()
        info.fh = handle.rawValue
        info.keep_cache = options.keepCache ? 1 : 0
        info.direct_io = options.directIO ? 1 : 0
        info.cache_readdir = options.cacheReaddir ? 1 : 0
        info.nonseekable = options.nonSeekable ? 1 : 0
        info.noflush = options.noFlush ? 1 : 0
        guard let backing = options.passthrough else {
            return fuse_reply_open(request, &info)
        }
        // The kernel fails a passthrough open (EIO) that carries any open flag besides
        // direct_io, noflush and parallel_direct_writes: its page-cache hints make no
        // sense when the backing file's page cache is used.
        info.keep_cache = 0
        info.cache_readdir = 0
        info.nonseekable = 0
        // fuse_reply_open writes on this thread; the writev hook adds FOPEN_PASSTHROUGH
        // and the backing id to exactly this reply (libfuse 3.14 has no field for them).
        cfusept_set_open_backing(backing.rawValue)
        defer { cfusept_set_open_backing(0) }
        return fuse_reply_open(request, &info)
    }

    static func bytes(_ request: fuse_req_t, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        fuse_reply_buf(request, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count)
    }

    /// Bytes from any sequence, without a copy when it has contiguous storage (arrays, slices, Data).
    static func bytes<Bytes: Sequence<UInt8>>(_ request: fuse_req_t, sequence: Bytes) -> Int32 {
        if let result = sequence.withContiguousStorageIfAvailable({ bytes(request, UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return Array(sequence).withUnsafeBytes { bytes(request, $0) }
    }

    /// Reads `count` bytes at `offset` from `fileDescriptor` into the reply;
    /// libfuse splices them when the kernel allows (FUSE_CAP_SPLICE_WRITE),
    /// else it preads into a buffer. On a read error libfuse replies with that error.
    static func data(_ request: fuse_req_t, fileDescriptor: Int32, offset: Int64, count: Int) -> Int32 {
        guard count > 0 else {
            return fuse_reply_buf(request, nil, 0)
        }
        var vector = cfuse3_fd_bufvec(fileDescriptor, off_t(offset), count)
        return fuse_reply_data(request, &vector, FUSE_BUF_SPLICE_MOVE)
    }

    static func readlink(_ request: fuse_req_t, _ target: String) -> Int32 {
        target.withCString { fuse_reply_readlink(request, $0) }
    }

    static func statistics(_ request: fuse_req_t, _ statistics: FileSystemStatistics) -> Int32 {
        var value = statistics.cValue
        return fuse_reply_statfs(request, &value)
    }

    static func xattrSize(_ request: fuse_req_t, _ size: Int) -> Int32 {
        fuse_reply_xattr(request, size)
    }

    static func entryParameters(_ parameters: EntryReplyParameters) -> fuse_entry_param {
        var entry = fuse_entry_param()
        entry.ino = parameters.attributes.inode.rawValue
        entry.generation = parameters.generation
        entry.attr = parameters.attributes.stat
        entry.attr_timeout = parameters.attributeTimeout
        entry.entry_timeout = parameters.entryTimeout
        return entry
    }
}
