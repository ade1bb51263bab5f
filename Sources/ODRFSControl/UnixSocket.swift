import Foundation
import Synchronization

/// A connected or listening Unix stream socket: the few POSIX calls the control plane
/// needs, with errors that name the call and the path.
///
/// The descriptor stays open until ``close()``; ``shutdown()`` wakes any thread blocked
/// in `accept`, `read` or `send` on it and is safe to call at any time, even after
/// `close()` (it never touches a descriptor number that may have been reused).
final class UnixSocket: Sendable {
    private let descriptor: Mutex<Int32?>
    /// The descriptor, valid until `close()`.
    let fd: Int32

    init(fd: Int32) {
        self.fd = fd
        descriptor = Mutex(fd)
    }

    /// Creates, binds and listens at `path` (the caller removed any stale socket).
    static func listen(at path: String) throws(ControlError) -> UnixSocket {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket", path) }
        let socket = UnixSocket(fd: fd)
        var address = try address(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { defer { socket.close() }; throw failure("bind", path) }
        guard Glibc.listen(fd, 64) == 0 else { defer { socket.close() }; throw failure("listen", path) }
        return socket
    }

    /// Connects to the socket at `path`; the error's errno tells "nobody there"
    /// (ENOENT, ECONNREFUSED) from "not allowed" (EACCES).
    static func connect(to path: String) throws(ConnectFailure) -> UnixSocket {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ConnectFailure(errno: errno) }
        let socket = UnixSocket(fd: fd)
        guard var address = try? address(path) else { socket.close(); throw ConnectFailure(errno: ENAMETOOLONG) }
        while true {
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if result == 0 { return socket }
            let error = errno
            if error == EINTR { continue }
            socket.close()
            throw ConnectFailure(errno: error)
        }
    }

    struct ConnectFailure: Error {
        var errno: Int32
        var reason: String { String(cString: strerror(errno)) }
    }

    /// Accepts one connection; nil once the socket is shut down.
    func accept() -> UnixSocket? {
        while true {
            // accept4 is hidden behind _GNU_SOURCE; set close-on-exec right after.
            let client = Glibc.accept(fd, nil, nil)
            if client >= 0 {
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                return UnixSocket(fd: client)
            }
            switch errno {
            case EINTR, ECONNABORTED, EPROTO: continue
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                usleep(50_000)   // out of descriptors: back off instead of spinning
                if descriptor.withLock({ $0 == nil }) { return nil }
            default: return nil
            }
        }
    }

    /// The peer's user id (SO_PEERCRED), or nil if the kernel does not say.
    func peerUID() -> uid_t? {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; }: Glibc hides it behind _GNU_SOURCE.
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0, length == 12 else { return nil }
        return credentials.uid
    }

    /// Reads up to `count` bytes; 0 at end of stream or after shutdown, -1 on error.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            return count
        }
    }

    /// Writes all of `data` (never raising SIGPIPE); false if the peer is gone.
    func send(_ data: Data) -> Bool {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let sent = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += sent
            }
            return true
        }
    }

    /// Wakes every thread blocked on the socket; further reads return 0.
    func shutdown() {
        descriptor.withLock { fd in
            if let fd { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Closes the descriptor (once).
    func close() {
        descriptor.withLock { fd in
            if let open = fd { _ = Glibc.close(open) }
            fd = nil
        }
    }

    private static func address(_ path: String) throws(ControlError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw ControlError(.internalError, "socket path \(path) is longer than the \(MemoryLayout.size(ofValue: address.sun_path) - 1) bytes a Unix socket allows")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        return address
    }

    private static func failure(_ call: String, _ path: String) -> ControlError {
        ControlError(.internalError, "\(call)() on control socket \(path) failed: \(String(cString: strerror(errno)))")
    }
}
