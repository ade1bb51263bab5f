import Foundation
import NIOCore
import NIOPosix

/// A connection to a mount daemon's control socket: sends requests, routes replies and
/// events back to their callers by request id, and keeps the connection (and with it
/// every request held on it) until ``close()`` or deinit. Many calls may be in flight
/// at once on one client (requests are tagged with ids); it is safe to share.
///
/// ```swift
/// let client = try await ControlClient.connect(mountpoint: "/mnt/travel")
/// let reply = try await client.call(.request(tags: ["Italy"], loadingPriority: .default, conditional: false)) { event in
///     print(event.completed ?? 0, "of", event.total ?? 0)
/// }
/// // the Italy packs stay retained until `client.post(.end(request: reply.id!))` or `client.close()`
/// ```
///
/// The connection runs on SwiftNIO's process-wide event loop group; nothing blocks the
/// caller. After connecting, the client checks who listens (SO_PEERCRED): only the
/// mount's owner, root or the caller's own user may answer, so another user's socket
/// planted at the path is refused. If the daemon goes away every pending call fails
/// with `not-running` and ``waitUntilClosed()`` returns.
public final class ControlClient: Sendable {
    /// The socket this client is connected to.
    public let socketPath: String
    private let channel: any Channel
    private let router: ControlClientRouter

    private init(channel: any Channel, router: ControlClientRouter, socketPath: String) {
        self.channel = channel
        self.router = router
        self.socketPath = socketPath
    }

    deinit {
        channel.close(promise: nil)
    }

    /// Connects to the daemon serving `mountpoint` (found through its ``RuntimeDirectory``;
    /// the mount's owner comes from /proc/self/mountinfo).
    public static func connect(mountpoint: String) async throws(ControlError) -> ControlClient {
        let resolved = RuntimeDirectory.resolve(mountpoint: mountpoint)
        let owner = RuntimeDirectory.mountOwner(resolved) ?? geteuid()
        // A mount root shared with every user (allow_other) keeps its socket elsewhere.
        let runtime = RuntimeDirectory(clientOfMountpoint: resolved)
        return try await connect(socketPath: runtime.controlSocket, describing: resolved, expectedServerUIDs: [owner, 0, geteuid()])
    }

    /// Connects to the control socket at `socketPath`; `describing` names the mount in
    /// errors. The listener must run as one of `expectedServerUIDs` (default: this
    /// user or root), else the connection is refused with `permission-denied`.
    public static func connect(socketPath: String, describing mountpoint: String? = nil,
                               expectedServerUIDs: Set<uid_t>? = nil) async throws(ControlError) -> ControlClient {
        let name = mountpoint ?? socketPath
        let router = ControlClientRouter()
        let channel = try await open(socketPath, name: name, router: router)
        let server = try? await PeerCredentials.uid(of: channel).get()
        do {
            try verifyServer(uid: server ?? nil, expected: expectedServerUIDs ?? [geteuid(), 0], socketPath: socketPath)
        } catch {
            try? await channel.close()
            throw error
        }
        return ControlClient(channel: channel, router: router, socketPath: socketPath)
    }

    /// Refuses a listener of an unexpected user: someone else may have created the socket
    /// (for example in a `/tmp` runtime directory) to answer in the daemon's place.
    static func verifyServer(uid: uid_t?, expected: Set<uid_t>, socketPath: String) throws(ControlError) {
        guard let uid else {
            throw ControlError(.permissionDenied, "cannot tell who listens on the control socket \(socketPath) (SO_PEERCRED failed); refusing to talk to it")
        }
        guard expected.contains(uid) else {
            let allowed = expected.sorted().map(String.init).joined(separator: " or ")
            throw ControlError(.permissionDenied, "the control socket \(socketPath) is served by uid \(uid), not by the mount's owner or root (uid \(allowed)); another user may be impersonating the daemon, so this client refuses to talk to it")
        }
    }

    private static func open(_ socketPath: String, name: String, router: ControlClientRouter) async throws(ControlError) -> any Channel {
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        ByteToMessageHandler(LineFrameDecoder(limit: ControlProtocol.maximumResponseLength)),
                        ControlClientHandler(router: router),
                    ])
                }
            }
        var attempts = 0
        while true {
            do {
                return try await bootstrap.connect(unixDomainSocketPath: socketPath).get()
            } catch let error as IOError where error.errnoCode == EAGAIN && attempts < 200 {
                // The daemon's accept backlog is full for a moment: it is alive, try again.
                attempts += 1
                try? await Task.sleep(for: .milliseconds(10))
            } catch let error as IOError {
                switch error.errnoCode {
                case EACCES, EPERM:
                    throw ControlError(.permissionDenied, "permission denied on the control socket \(socketPath): only the user who mounted \(name) and root may control it")
                case ENOENT, ECONNREFUSED, ENOTDIR:
                    throw ControlError(.notRunning, "\(name) is not an ODRFS mount or its daemon is not running (no control socket at \(socketPath))")
                default:
                    throw ControlError(.notRunning, "cannot connect to the control socket \(socketPath) of \(name): \(String(cString: strerror(error.errnoCode)))")
                }
            } catch {
                throw ControlError(.notRunning, "cannot connect to the control socket \(socketPath) of \(name): \(error)")
            }
        }
    }

    /// Sends `operation` and waits for its reply; `onEvent` receives the request's
    /// progress, low-disk-space or mount events (for `watch-disk` and `watch-events`,
    /// after the reply, until `end`).
    /// A failed reply is thrown. If the calling task is cancelled while a `request`
    /// waits, the daemon is told to abandon it (the call then throws `cancelled`).
    @discardableResult
    public func call(_ operation: ControlOperation, onEvent: (@Sendable (ControlResponse) -> Void)? = nil) async throws(ControlError) -> ControlResponse {
        let id = router.makeID()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ControlClientRouter.Reply, Never>) in
                if let closed = router.register(id, continuation, onEvent: onEvent) {
                    continuation.resume(returning: .failure(closed))
                    return
                }
                write(ControlRequest(id: id, operation: operation))
                // Cancelled before the request went out: `onCancel` came too early.
                if case .request = operation, Task.isCancelled { cancelRequest(id) }
            }
        } onCancel: {
            if case .request = operation { cancelRequest(id) }
        }
        if operation.isWatch, case .success = result {} else {
            router.removeHandler(id)
        }
        let response = try result.get()
        if case .request = operation, Task.isCancelled {
            // Finished just as it was cancelled: give the retains back.
            post(.end(request: id))
            throw ControlError(.cancelled, "request \(id) was cancelled")
        }
        return response
    }

    /// Sends `operation` without waiting for its reply (which is dropped): for `end`
    /// from places that cannot wait, such as a deinit. Ending a watch also
    /// stops delivering its events here.
    public func post(_ operation: ControlOperation) {
        if case .end(let target) = operation { router.removeHandler(target) }
        write(ControlRequest(id: router.makeID(), operation: operation))
    }

    /// Asks the daemon to abandon request `id` if it is still in progress.
    public func cancelRequest(_ id: Int) {
        post(.cancel(request: id))
    }

    /// Closes the connection: the daemon releases every request held on it.
    public func close() {
        channel.close(promise: nil)
    }

    /// Whether the connection is gone.
    public var isClosed: Bool {
        router.closedBecause != nil
    }

    /// Returns when the connection is gone (closed here, or the daemon went away), or
    /// when the calling task is cancelled.
    public func waitUntilClosed() async {
        await router.waitUntilClosed()
    }

    /// Queues one request line. Requests are small; a write that fails means the
    /// connection is gone, which fails the pending calls through the handler.
    private func write(_ request: ControlRequest) {
        var buffer = ByteBuffer(bytes: ControlProtocol.encode(request))
        buffer.writeInteger(UInt8(ascii: "\n"))
        channel.writeAndFlush(buffer).whenFailure { [channel] _ in channel.close(promise: nil) }
    }
}

extension ControlOperation {
    /// Whether events keep coming after the ok reply (`watch-disk`, `watch-events`).
    public var isWatch: Bool {
        switch self {
        case .watchDisk, .watchEvents: true
        default: false
        }
    }
}
