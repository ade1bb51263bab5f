import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// Serves the control protocol on a Unix socket for one mount, driven by a ``ControlService``.
///
/// ```swift
/// let server = ControlServer(socketPath: RuntimeDirectory(mountpoint: mp).controlSocket,
///                            service: service, logger: logger)
/// try server.start()      // verifies/creates the directory (0700) and the socket (0600)
/// …
/// await server.stop()     // closes every connection, releases their retains, removes the socket
/// ```
///
/// Threading model — a fixed number of threads, whatever the number of clients:
/// - **One event loop** (a `MultiThreadedEventLoopGroup` of one thread, or the group
///   passed to `init`) accepts connections, checks each peer (SO_PEERCRED), frames lines
///   and writes replies. Nothing on it blocks or calls the service.
/// - **The service executor** (two threads of a `NIOThreadPool`, as a task executor)
///   runs one task per connection that handles its requests in order, and one task per
///   long wait (a `request` that downloads, a `watch-disk`), which run concurrently so a
///   download never holds up the connection's later requests. Service calls that block
///   briefly block these threads only, never the loop or Swift's cooperative pool;
///   waiting tasks are suspended and hold no thread.
/// - A connection costs memory (a channel, a suspended task, its buffers), not threads.
///
/// Backpressure: a client that floods requests is read more slowly (its queue holds at
/// most 32 requests before the server stops reading it); a client that does not read
/// its replies is disconnected once 8 MiB wait for it (progress events are skipped
/// first). Only the daemon's own user and root may connect: anyone else gets a
/// `permission-denied` line and is disconnected (the 0600 socket in a 0700 directory
/// already keeps them out). Connections beyond the cap get `too-many-connections`.
public final class ControlServer: Sendable {
    /// Where the socket lives.
    public let socketPath: String
    /// Replies waiting for a client beyond this many bytes disconnect it.
    static let outboundLimit = 8 * 1024 * 1024
    /// Replies at least this long call `afterLargeReply` once written.
    public static let largeReplyBytes = 1 << 20
    let service: any ControlService
    let logger: Logger
    /// Who may connect, and who may change the mount.
    let access: ControlAccess
    /// Connections cost memory, not threads, but descriptors are finite: a client that
    /// opens connections in a loop must not exhaust the daemon.
    let maximumConnections: Int
    /// Called on the event loop once a reply of at least ``largeReplyBytes`` is written, or
    /// dropped because its client went away.
    let afterLargeReply: (@Sendable () -> Void)?
    private let sharedGroup: (any EventLoopGroup)?
    let state = Mutex(State())

    struct State {
        var started = false
        var stopped = false
        var ownedGroup: MultiThreadedEventLoopGroup?
        var executor: ServiceExecutor?
        var listener: EventLoopFuture<any Channel>?
        var connections: [UInt64: ControlConnection] = [:]
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var nextConnection: UInt64 = 0
    }

    /// A server for `socketPath` (normally ``RuntimeDirectory/controlSocket``).
    /// `access` defaults to the daemon's effective uid and root only; with
    /// ``ControlAccess/everyLocalUser(owner:)`` the socket is mode 0666 in a directory
    /// others may enter (`sharedDirectory`). Connections beyond `maximumConnections` at once
    /// are answered `too-many-connections` and closed. Without an `eventLoopGroup` the
    /// server runs its own one-thread group. `afterLargeReply` runs on the event loop each
    /// time a reply of ``largeReplyBytes`` or more has been written to its client (or
    /// dropped, the client gone), and must not block: the daemon hands the memory that
    /// encoding it took back to the system from there (a status of 100,000 packs is about
    /// 20 MB of JSON, and left glibc's arenas 150 MiB larger per call).
    public init(socketPath: String, service: any ControlService, logger: Logger, access: ControlAccess? = nil,
                maximumConnections: Int = 4096, eventLoopGroup: (any EventLoopGroup)? = nil,
                afterLargeReply: (@Sendable () -> Void)? = nil) {
        self.afterLargeReply = afterLargeReply
        self.socketPath = socketPath
        self.service = service
        self.logger = logger
        self.access = access ?? .ownerOnly(geteuid())
        self.maximumConnections = maximumConnections
        self.sharedGroup = eventLoopGroup
    }

    /// Verifies (or creates, 0700) the socket's directory and its parent, removes a stale
    /// socket (one nobody answers on), listens (socket mode 0600) and starts accepting.
    /// Throws if the directory is unsafe (another user's, a symlink, group or other
    /// access), another daemon is serving the same path or the socket cannot be created.
    /// Does not wait: the event loop picks the socket up right after.
    public func start() throws(ControlError) {
        guard state.withLock({ !$0.started && !$0.stopped }) else {
            throw ControlError(.internalError, "the control server for \(socketPath) was already started")
        }
        let shared = access.connect == nil
        let directory = RuntimeDirectory(path: (socketPath as NSString).deletingLastPathComponent, shared: shared)
        try directory.create()
        if try PrivatePath.checkEntry(socketPath, kind: S_IFSOCK) {
            guard !UnixSocket.isLive(socketPath) else {
                throw ControlError(.internalError, "another daemon is serving the control socket \(socketPath)")
            }
            unlink(socketPath)
        }
        let fd = try UnixSocket.listen(at: socketPath, backlog: 1024)
        guard chmod(socketPath, shared ? 0o666 : 0o600) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            unlink(socketPath)
            throw ControlError(.internalError, "chmod() on control socket \(socketPath) failed: \(reason)")
        }
        let ownedGroup = sharedGroup == nil ? MultiThreadedEventLoopGroup(numberOfThreads: 1) : nil
        let group: any EventLoopGroup = sharedGroup ?? ownedGroup!   // one of the two is set
        let executor = ServiceExecutor(threads: 2)
        let listener = ServerBootstrap(group: group)
            .serverChannelOption(.maxMessagesPerRead, value: 64)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: Self.outboundLimit / 2, high: Self.outboundLimit))
            .childChannelInitializer { [self] channel in admit(channel, executor: executor) }
            .withBoundSocket(fd)
        listener.whenFailure { [logger, socketPath] (error: any Error) in
            logger.error("control socket unavailable", metadata: ["control.socket": "\(socketPath)", "error": "\(error)"])
        }
        state.withLock { state in
            state.started = true
            state.ownedGroup = ownedGroup
            state.executor = executor
            state.listener = listener
        }
        logger.info("control socket listening", metadata: ["control.socket": "\(socketPath)"])
    }

    /// Stops accepting, disconnects every client (releasing every retain their
    /// requests hold and cancelling requests in flight), waits for their handlers to
    /// finish, removes the socket and stops the server's threads. Idempotent.
    public func stop() async {
        let (listener, group, executor) = state.withLock { state in
            defer {
                state.listener = nil
                state.ownedGroup = nil
                state.executor = nil
            }
            state.stopped = true
            return (state.listener, state.ownedGroup, state.executor)
        }
        guard let listener else { return }
        if let channel = try? await listener.get() {
            try? await channel.close()
        }
        let (connections, tasks) = state.withLock { state in
            (Array(state.connections.values), Array(state.tasks.values))
        }
        connections.forEach { $0.disconnect() }
        // A connection runs its request inline (an `odrfs update` waiting on a server that
        // stalls): closing the channel does not end that wait, cancelling the task does.
        tasks.forEach { $0.cancel() }
        for task in tasks { await task.value }
        // unlink blocks on the filesystem: on the server's own threads (still running),
        // never on the cooperative pool.
        let socketPath = self.socketPath
        if let executor {
            await withTaskExecutorPreference(executor) { _ = unlink(socketPath) }
        } else {
            unlink(socketPath)
        }
        await executor?.shutdown()
        try? await group?.shutdownGracefully()
        logger.info("control socket closed", metadata: ["control.socket": "\(socketPath)"])
    }

    /// The number of connected clients (for tests and status).
    public var connectionCount: Int {
        state.withLock { $0.connections.count }
    }
}
