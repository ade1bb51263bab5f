import Foundation
import Logging
import ODRFSControl
import TestSupport

/// A ``ControlServer`` over a ``FakeControlService`` on a socket in a temporary
/// directory that stands for the mountpoint (its ``RuntimeDirectory`` holds the socket).
public final class ControlFixture: Sendable {
    public let service: FakeControlService
    public let server: ControlServer
    public let directory: TemporaryDirectory
    /// Stands for the mountpoint: clients find the socket from it.
    public var mountpoint: String { directory.path }
    public var socketPath: String { server.socketPath }

    /// A server whose socket is found from the fixture's directory as a mountpoint, or
    /// at `socketPath` if given.
    public init(service: FakeControlService = FakeControlService(), maximumConnections: Int = 4096, socketPath: String? = nil,
                afterLargeReply: (@Sendable () -> Void)? = nil) throws {
        self.service = service
        directory = try TemporaryDirectory()
        let runtime = RuntimeDirectory(resolvingMountpoint: directory.path)
        server = ControlServer(socketPath: socketPath ?? runtime.controlSocket, service: service, logger: Logger(label: "test.control"),
                               maximumConnections: maximumConnections, afterLargeReply: afterLargeReply)
        try server.start()
    }

    /// Stops the server and removes the runtime directory.
    public func stop() async {
        await server.stop()
        rmdir((socketPath as NSString).deletingLastPathComponent)
    }

    /// A new raw connection to the socket.
    public func raw() async throws -> RawConnection {
        try await RawConnection.connect(path: socketPath)
    }
}

/// How long the helpers below wait for what a test expects to happen. Only a failing test
/// waits this long; a CI run under `swift test` on two cores has starved the cooperative pool
/// for over 10 s, so 5 s failed tests whose replies were merely late.
public enum ControlWaits {
    public static let patience = Duration.seconds(30)
}

/// Polls `condition` every 10 ms for at most `timeout`.
public func eventually(_ timeout: Duration = ControlWaits.patience, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}

/// Waits (async, without blocking a thread) at most `timeout` for `child` to exit.
public func exited(_ child: ChildProcess, within timeout: Duration) async -> Bool {
    await eventually(timeout) { !child.isRunning }
}

/// Calls `body` (bind or connect) with a `sockaddr_un` for `path` and its length.
public func withUnixAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
        let bytes = Array(path.utf8)
        buffer.copyBytes(from: bytes)
        buffer[bytes.count] = 0
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

/// A plain socket speaking raw bytes, for protocol tests. Reads never block a thread:
/// the descriptor is non-blocking and a read that finds nothing sleeps (async) and
/// tries again until its timeout.
public final class RawConnection: @unchecked Sendable {
    public let fd: Int32
    private var buffer = Data()

    /// Connects (blocking: a Unix-socket connect only waits while the server's accept
    /// backlog is full), then switches to non-blocking reads.
    public init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard withUnixAddress(path, { Glibc.connect(fd, $0, $1) }) == 0 else {
            let error = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: error) ?? .EIO)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    private init(descriptor: Int32) {
        fd = descriptor
    }

    /// Connects without blocking a thread: while the server's accept backlog is full
    /// (EAGAIN) it waits (async) and retries, for at most `timeout`.
    public static func connect(path: String, timeout: Duration = .seconds(10)) async throws -> RawConnection {
        let deadline = ContinuousClock.now + timeout
        while true {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            if withUnixAddress(path, { Glibc.connect(fd, $0, $1) }) == 0 { return RawConnection(descriptor: fd) }
            let error = errno
            close(fd)
            guard error == EAGAIN, ContinuousClock.now < deadline else { throw POSIXError(POSIXErrorCode(rawValue: error) ?? .EIO) }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    deinit {
        close(fd)
    }

    /// Sends `text` as is (add the newline yourself). False if the peer is gone.
    @discardableResult
    public func send(_ text: String) async -> Bool {
        await send(Data(text.utf8))
    }

    /// Sends all of `data`, waiting (async) while the socket buffer is full; false if
    /// the peer is gone or nothing could be sent for 5 s.
    @discardableResult
    public func send(_ data: Data) async -> Bool {
        var offset = 0
        let deadline = ContinuousClock.now + .seconds(5)
        while offset < data.count {
            let sent = data.withUnsafeBytes { bytes in
                Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
            } else if sent < 0 && (errno == EAGAIN || errno == EINTR) && ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(2))
            } else {
                return false
            }
        }
        return true
    }

    /// Reads what is available into the buffer: true if bytes came, false if none are
    /// there yet; nil at end of stream or on an error.
    private func fill() -> Bool? {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = recv(fd, &chunk, chunk.count, 0)
        if count > 0 {
            buffer.append(contentsOf: chunk[..<count])
            return true
        }
        if count < 0 && (errno == EAGAIN || errno == EINTR) { return false }
        return nil
    }

    /// The next line (without its newline), or nil at end of stream or after `timeout`.
    public func readLine(timeout: Duration = ControlWaits.patience) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[buffer.startIndex..<newline]
                buffer = Data(buffer[(newline + 1)...])
                return String(decoding: line, as: UTF8.self)
            }
            switch fill() {
            case true?: continue
            case nil: return nil
            case false?:
                guard ContinuousClock.now < deadline else { return nil }
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
    }

    /// The next line decoded as a response.
    public func readResponse(timeout: Duration = ControlWaits.patience) async -> ControlResponse? {
        await readLine(timeout: timeout).flatMap { try? ControlProtocol.decodeResponse(Data($0.utf8)) }
    }

    /// Reads until the reply (not an event) to `id`, collecting events on the way.
    public func readReply(to id: Int, timeout: Duration = ControlWaits.patience) async -> (reply: ControlResponse?, events: [ControlResponse]) {
        var events: [ControlResponse] = []
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, let response = await readResponse(timeout: deadline - ContinuousClock.now) {
            if response.isReply && response.id == id { return (response, events) }
            events.append(response)
        }
        return (nil, events)
    }

    /// Whether the peer closed the connection within `timeout` (discarding data).
    public func isClosedByPeer(timeout: Duration = ControlWaits.patience) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            switch fill() {
            case nil: return true
            case true?: buffer.removeAll()
            case false?:
                guard ContinuousClock.now < deadline else { return false }
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
    }
}
