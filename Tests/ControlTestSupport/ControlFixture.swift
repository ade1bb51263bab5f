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

    public init(service: FakeControlService = FakeControlService(), maximumConnections: Int = 128) throws {
        self.service = service
        directory = try TemporaryDirectory()
        let runtime = RuntimeDirectory(resolvingMountpoint: directory.path)
        server = ControlServer(socketPath: runtime.controlSocket, service: service, logger: Logger(label: "test.control"),
                               maximumConnections: maximumConnections)
        try server.start()
    }

    /// Stops the server and removes the runtime directory.
    public func stop() async {
        await server.stop()
        rmdir((socketPath as NSString).deletingLastPathComponent)
    }

    /// A new raw connection to the socket.
    public func raw() throws -> RawConnection {
        try RawConnection(path: socketPath)
    }
}

/// Polls `condition` every 10 ms for at most `timeout`.
public func eventually(_ timeout: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
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

/// A plain blocking socket speaking raw bytes, for protocol tests: every read is bounded.
public final class RawConnection: @unchecked Sendable {
    public let fd: Int32
    private var buffer = Data()

    public init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard withUnixAddress(path, { connect(fd, $0, $1) }) == 0 else {
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    deinit {
        close(fd)
    }

    /// Sends `text` as is (add the newline yourself). False if the peer is gone.
    @discardableResult
    public func send(_ text: String) -> Bool {
        send(Data(text.utf8))
    }

    @discardableResult
    public func send(_ data: Data) -> Bool {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let sent = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }
    }

    /// The next line (without its newline), or nil at end of stream or after `timeout`.
    public func readLine(timeout: Duration = .seconds(5)) -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[buffer.startIndex..<newline]
                buffer = Data(buffer[(newline + 1)...])
                return String(decoding: line, as: UTF8.self)
            }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { return nil }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)
            guard poll(&poller, 1, max(milliseconds, 1)) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(fd, &chunk, chunk.count, 0)
            guard count > 0 else { return nil }
            buffer.append(contentsOf: chunk[..<count])
        }
    }

    /// The next line decoded as a response.
    public func readResponse(timeout: Duration = .seconds(5)) -> ControlResponse? {
        readLine(timeout: timeout).flatMap { try? ControlProtocol.decodeResponse(Data($0.utf8)) }
    }

    /// Reads until the reply (not an event) to `id`, collecting events on the way.
    public func readReply(to id: Int, timeout: Duration = .seconds(5)) -> (reply: ControlResponse?, events: [ControlResponse]) {
        var events: [ControlResponse] = []
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, let response = readResponse(timeout: deadline - ContinuousClock.now) {
            if response.isReply && response.id == id { return (response, events) }
            events.append(response)
        }
        return (nil, events)
    }

    /// Whether the peer closed the connection within `timeout` (discarding data).
    public func isClosedByPeer(timeout: Duration = .seconds(5)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard readLine(timeout: deadline - ContinuousClock.now) != nil else { return ContinuousClock.now < deadline }
        }
        return false
    }
}
