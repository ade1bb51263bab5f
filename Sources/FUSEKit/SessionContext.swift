import CFuse3
import CFusePassthrough
import Glibc
import Logging
import Synchronization

/// Everything a libfuse callback needs, recovered from the session's userdata
/// pointer (`fuse_req_userdata`): the filesystem, the logger, the registry of
/// deferred requests and the gate that stops replies after teardown.
///
/// Lifetime: `FUSESession` passes it retained (`Unmanaged.passRetained`) as
/// libfuse's userdata and releases it after `fuse_session_destroy`; requests
/// and deferred requests hold it strongly, so it outlives any late reply,
/// which the closed gate then turns into a no-op.
final class SessionContext: Sendable {
    let fileSystem: any FUSEFileSystem
    let logger: Logger
    let gate = ReplyGate()
    let registry = RequestRegistry()
    private let destroyed = Atomic<Bool>(false)
    /// Set at `init` when the kernel agreed to `FUSE_CAP_NO_OPENDIR_SUPPORT`:
    /// opendir is then answered ENOSYS without asking the filesystem, which
    /// the kernel takes as "never send opendir or releasedir again".
    let skipsDirectoryOpens = Atomic<Bool>(false)

    /// Passthrough state: backing ids per inode and the read path.
    let passthrough: Passthrough

    /// FUSE over io_uring, when the session asked for it.
    let ioUring: IOUringTransport

    /// The mount's `max_read=`, which libfuse 3.14 insists `init` repeats.
    let maxRead: Int?

    init(fileSystem: any FUSEFileSystem, maxRead: Int?, logger: Logger) {
        self.fileSystem = fileSystem
        self.maxRead = maxRead
        self.logger = logger
        self.passthrough = Passthrough(logger: logger)
        self.ioUring = IOUringTransport(logger: logger)
    }

    /// Recovers the context from a request; valid for every request of a live session.
    static func of(_ request: fuse_req_t) -> SessionContext {
        Unmanaged<SessionContext>.fromOpaque(fuse_req_userdata(request)!).takeUnretainedValue()
    }

    /// Runs one libfuse reply call unless the session is gone.
    /// `reply` returns libfuse's result: 0 or a negative errno.
    func send(_ request: fuse_req_t, operation: StaticString, _ reply: (fuse_req_t) -> Int32) {
        guard gate.enter() else {
            logger.debug("Reply after session teardown ignored", metadata: ["fuse.op": "\(operation)"])
            return
        }
        let result = reply(request)
        gate.leave()
        // -ENOENT means the kernel gave up on the request (interrupted); that is normal.
        if result < 0, result != -ENOENT {
            logger.warning(
                "Sending a FUSE reply failed",
                metadata: ["fuse.op": "\(operation)", "errno": "\(Errno(-result))"]
            )
        }
    }

    /// Logs and answers a request that was dropped without a reply.
    func replyDropped(_ request: fuse_req_t, operation: StaticString) {
        guard !gate.isClosed else { return }
        logger.error("FUSE request dropped unanswered; replying EIO", metadata: ["fuse.op": "\(operation)"])
        send(request, operation: operation) { Reply.error($0, .ioError) }
    }

    /// libfuse's `init`: lets the filesystem choose the connection settings.
    func initialize(_ connection: inout fuse_conn_info) {
        var configuration = ConnectionConfiguration()
        fileSystem.configure(&configuration)
        configuration.apply(to: &connection)
        if let maxRead {
            connection.max_read = UInt32(clamping: maxRead)
        }
        if configuration.passthrough {
            // Runs inside libfuse's do_init, on the thread that read the INIT: the hook
            // installed at mount patches the reply this thread sends next.
            if passthrough.negotiate(offered: cfusept_init_offered() != 0) {
                cfusept_init_accept(max(configuration.passthroughMaxStackDepth, 1))
            }
        }
        if ioUring.isRequested, ioUring.negotiate(offered: cfusept_init_uring_offered() != 0) {
            cfusept_init_accept_uring()
            // A spliced reply goes straight to /dev/fuse, where the kernel would not find a
            // request that came through the ring: ring mounts reply from memory.
            connection.want &= ~UInt32(bitPattern: FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE)
        }
        let noOpendir = UInt32(bitPattern: FUSE_CAP_NO_OPENDIR_SUPPORT)
        skipsDirectoryOpens.store(connection.want & noOpendir != 0, ordering: .releasing)
        logger.debug(
            "FUSE connection initialised",
            metadata: [
                "fuse.op": "init",
                "fuse.proto": "\(connection.proto_major).\(connection.proto_minor)",
                "fuse.capable": "0x\(String(connection.capable, radix: 16))",
                "fuse.want": "0x\(String(connection.want, radix: 16))",
            ]
        )
    }

    /// libfuse's `destroy`, which can come from the kernel and from
    /// `fuse_session_destroy`: forward it once.
    func destroyOnce() {
        if !destroyed.exchange(true, ordering: .acquiringAndReleasing) {
            fileSystem.destroy()
        }
    }
}
