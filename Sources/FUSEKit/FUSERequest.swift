import CFuse3

/// One kernel request that must be answered exactly once.
///
/// `~Copyable` with `consuming` reply methods, so the compiler rejects a
/// second reply. Dropping a request unanswered replies EIO and logs an error
/// (`fuse.op` says which operation), so a forgotten path never hangs the
/// caller. To answer later from another thread (never a Swift task), `detach()` it into a
/// `DeferredRequest`, which also lets teardown find it.
///
/// Replies after the session has been torn down are ignored.
public struct FUSERequest: ~Copyable, @unchecked Sendable {
    let raw: fuse_req_t
    let context: SessionContext
    let operation: StaticString
    /// Set by every consuming method before `deinit` runs, so only a dropped request replies EIO.
    private var isAnswered = false

    init(raw: fuse_req_t, context: SessionContext, operation: StaticString) {
        self.raw = raw
        self.context = context
        self.operation = operation
    }

    deinit {
        if !isAnswered {
            context.replyDropped(raw, operation: operation)
        }
    }

    private consuming func answer(_ reply: (fuse_req_t) -> Int32) {
        isAnswered = true
        ReplyThread.check(operation)
        context.send(raw, operation: operation, reply)
    }

    /// The answer to a lookup (`fuse_reply_entry`).
    public consuming func replyEntry(_ parameters: EntryReplyParameters) {
        answer { Reply.entry($0, parameters) }
    }

    /// A lookup miss the kernel may cache for `timeout` seconds; cheaper than ENOENT for names asked for again.
    public consuming func replyNegativeEntry(timeout: Double) {
        answer { Reply.negativeEntry($0, timeout: timeout) }
    }

    /// The answer to getattr (`fuse_reply_attr`), cacheable for `timeout` seconds.
    public consuming func replyAttributes(_ attributes: FileAttributes, timeout: Double) {
        answer { Reply.attributes($0, attributes, timeout: timeout) }
    }

    /// The mount's passthrough state, for deciding how to answer an open.
    public var passthrough: Passthrough { context.passthrough }

    /// How requests reach the filesystem, as ``FUSESession/transport`` says (without its log line).
    public var transport: IOUringStatus { context.ioUring.status }

    /// The answer to open or opendir (`fuse_reply_open`).
    public consuming func replyOpen(handle: FileHandleID, options: OpenReplyOptions) {
        answer { Reply.open($0, handle: handle, options: options) }
    }

    /// Bytes for read, getxattr or listxattr (`fuse_reply_buf`); copied before this returns.
    public consuming func replyBytes(_ bytes: UnsafeRawBufferPointer) {
        answer { Reply.bytes($0, bytes) }
    }

    /// Bytes from an array, slice or other byte sequence (`fuse_reply_buf`); copied before this returns.
    /// Saves a `withUnsafeBytes` closure, which cannot consume a request.
    public consuming func replyBytes<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        answer { Reply.bytes($0, sequence: bytes) }
    }

    /// Read data straight from a file (`fuse_reply_data` with an fd-backed
    /// buffer): spliced without copying when the connection allows. `count`
    /// 0 sends an empty reply (end of file). The descriptor is not closed.
    public consuming func replyData(fileDescriptor: Int32, offset: Int64, count: Int) {
        answer { Reply.data($0, fileDescriptor: fileDescriptor, offset: offset, count: count) }
    }

    /// A filled directory buffer (`fuse_reply_buf`); an empty one means end of directory.
    public consuming func replyDirectory(_ buffer: consuming DirectoryBuffer) {
        answer { request in buffer.withBytes { Reply.bytes(request, $0) } }
    }

    /// A symlink's target (`fuse_reply_readlink`).
    public consuming func replyReadlink(_ target: String) {
        answer { Reply.readlink($0, target) }
    }

    /// The answer to statfs (`fuse_reply_statfs`).
    public consuming func replyStatistics(_ statistics: FileSystemStatistics) {
        answer { Reply.statistics($0, statistics) }
    }

    /// The length of an xattr value or name list when the caller asked with size 0 (`fuse_reply_xattr`).
    public consuming func replyXattrSize(_ size: Int) {
        answer { Reply.xattrSize($0, size) }
    }

    /// Fails the request with `error` (`fuse_reply_err`).
    public consuming func replyError(_ error: Errno) {
        answer { Reply.error($0, error) }
    }

    /// Success without data, for release, releasedir, flush, access (`fuse_reply_err(req, 0)`).
    public consuming func replySuccess() {
        answer { Reply.success($0) }
    }

    /// No reply at all, only valid for forget (`fuse_reply_none`).
    public consuming func replyNone() {
        answer { Reply.none($0) }
    }

    /// Hands the request over to be answered later from any thread.
    public consuming func detach() -> DeferredRequest {
        isAnswered = true
        return DeferredRequest(raw: raw, context: context, operation: operation)
    }

    /// The user id of the calling process (`fuse_req_ctx`).
    public var callerUID: UInt32 { fuse_req_ctx(raw).pointee.uid }
    /// The group id of the calling process (`fuse_req_ctx`).
    public var callerGID: UInt32 { fuse_req_ctx(raw).pointee.gid }
    /// The calling process id (`fuse_req_ctx`); 0 for requests the kernel makes on its own.
    public var callerPID: Int32 { fuse_req_ctx(raw).pointee.pid }
    /// The umask of the calling process (`fuse_req_ctx`).
    public var callerUmask: UInt32 { fuse_req_ctx(raw).pointee.umask }
}
