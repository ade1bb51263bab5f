import CFuse3

/// A request answered later, from any thread that is not running a Swift task (see
/// `FUSERequest.detach()` and ``ReplyThread``, which checks it in debug builds).
///
/// Thread-safe: the first reply wins and later ones are ignored (logged at
/// debug level). Deinitialising it unanswered replies EIO with an error log
/// line. When the session is torn down every still-unanswered deferred
/// request is answered EINTR, and from then on every reply is a no-op.
///
/// Long waits (a download) should register `onInterrupt` so that a process
/// killed while blocked in open(2) is released promptly.
public final class DeferredRequest: Sendable {
    /// Also the interrupt token: unique for the life of the process.
    private let id: UInt64
    private let context: SessionContext
    private let operation: StaticString

    init(raw: fuse_req_t, context: SessionContext, operation: StaticString) {
        self.id = InterruptTable.makeToken()
        self.context = context
        self.operation = operation
        if !context.registry.register(RawRequest(pointer: raw), id: id) {
            // Teardown has begun (cannot happen while the loop runs): fail it now rather than never.
            context.send(raw, operation: operation) { Reply.error($0, .interrupted) }
        }
    }

    deinit {
        if let raw = claim() {
            context.logger.error("Deferred FUSE request dropped unanswered; replying EIO", metadata: ["fuse.op": "\(operation)"])
            context.send(raw, operation: operation) { Reply.error($0, .ioError) }
        }
    }

    /// Takes the right to reply; nil when someone replied already.
    private func claim() -> fuse_req_t? {
        guard let raw = context.registry.claim(id) else { return nil }
        InterruptTable.remove(id)
        return raw.pointer
    }

    private func answer(_ reply: (fuse_req_t) -> Int32) {
        guard let raw = claim() else {
            context.logger.debug("Second reply to a deferred FUSE request ignored", metadata: ["fuse.op": "\(operation)"])
            return
        }
        ReplyThread.check(operation)
        context.send(raw, operation: operation, reply)
    }

    /// The answer to a lookup (`fuse_reply_entry`).
    public func replyEntry(_ parameters: EntryReplyParameters) {
        answer { Reply.entry($0, parameters) }
    }

    /// A cacheable lookup miss (`fuse_reply_entry` with inode 0).
    public func replyNegativeEntry(timeout: Double) {
        answer { Reply.negativeEntry($0, timeout: timeout) }
    }

    /// The answer to getattr (`fuse_reply_attr`).
    public func replyAttributes(_ attributes: FileAttributes, timeout: Double) {
        answer { Reply.attributes($0, attributes, timeout: timeout) }
    }

    /// The mount's passthrough state, for deciding how to answer an open.
    public var passthrough: Passthrough { context.passthrough }

    /// The answer to open or opendir (`fuse_reply_open`).
    public func replyOpen(handle: FileHandleID, options: OpenReplyOptions) {
        answer { Reply.open($0, handle: handle, options: options) }
    }

    /// Bytes (`fuse_reply_buf`); copied before this returns.
    public func replyBytes(_ bytes: UnsafeRawBufferPointer) {
        answer { Reply.bytes($0, bytes) }
    }

    /// Bytes from an array, slice or other byte sequence (`fuse_reply_buf`); copied before this returns.
    /// Saves a `withUnsafeBytes` closure, which cannot consume a request.
    public func replyBytes<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        answer { Reply.bytes($0, sequence: bytes) }
    }

    /// Read data from a file descriptor, spliced when possible (`fuse_reply_data`).
    public func replyData(fileDescriptor: Int32, offset: Int64, count: Int) {
        answer { Reply.data($0, fileDescriptor: fileDescriptor, offset: offset, count: count) }
    }

    /// A symlink's target (`fuse_reply_readlink`).
    public func replyReadlink(_ target: String) {
        answer { Reply.readlink($0, target) }
    }

    /// The answer to statfs (`fuse_reply_statfs`).
    public func replyStatistics(_ statistics: FileSystemStatistics) {
        answer { Reply.statistics($0, statistics) }
    }

    /// The length of an xattr value or name list (`fuse_reply_xattr`).
    public func replyXattrSize(_ size: Int) {
        answer { Reply.xattrSize($0, size) }
    }

    /// Fails the request (`fuse_reply_err`).
    public func replyError(_ error: Errno) {
        answer { Reply.error($0, error) }
    }

    /// Success without data (`fuse_reply_err(req, 0)`).
    public func replySuccess() {
        answer { Reply.success($0) }
    }

    /// Registers an interrupt callback (`fuse_req_interrupt_func`): the kernel
    /// sends an interrupt when the waiting process gets a signal.
    ///
    /// `handler` runs at most once, on a dispatch queue — never on the libfuse
    /// thread, so it may reply (typically `replyError(.interrupted)`) or
    /// cancel a Task whose cancellation handler replies. If the request is
    /// already interrupted it is scheduled at once. A later call replaces an
    /// earlier handler that has not run. Nothing happens once the request is answered.
    public func onInterrupt(_ handler: @escaping @Sendable () -> Void) {
        InterruptTable.setHandler(handler, for: id)
        let registered = context.registry.withPending(id) { raw in
            InterruptTable.register(token: id, with: raw)
            return true
        }
        if registered == nil {
            InterruptTable.remove(id)
        }
    }

    /// True once the kernel has asked to interrupt this request. After a reply it reads false.
    public var isInterrupted: Bool {
        if InterruptTable.isFired(id) {
            return true
        }
        return context.registry.withPending(id) { fuse_req_interrupted($0) != 0 } ?? false
    }

    /// The calling process id, or nil when the request was answered already.
    public var callerPID: Int32? {
        context.registry.withPending(id) { fuse_req_ctx($0).pointee.pid }
    }
}
