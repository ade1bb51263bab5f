import Foundation

/// The few blocking socket calls the control plane makes outside the event loop, with
/// errors that name the call and the path: creating the listening socket (before it is
/// handed to SwiftNIO) and probing whether a socket file has a live listener.
enum UnixSocket {
    /// Creates, binds and listens at `path` (the caller removed any stale socket) and
    /// returns the descriptor, close-on-exec. The caller owns it.
    static func listen(at path: String, backlog: Int32) throws(ControlError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket", path) }
        var address = try address(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { defer { close(fd) }; throw failure("bind", path) }
        guard Glibc.listen(fd, backlog) == 0 else { defer { close(fd) }; throw failure("listen", path) }
        return fd
    }

    /// Whether something accepts connections at `path` (a live daemon, as opposed to a
    /// socket file a crashed one left). A Unix-socket connect never waits on the network.
    static func isLive(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard var address = try? address(path) else { return false }
        while true {
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if result == 0 { return true }
            if errno != EINTR { return errno == EAGAIN }   // EAGAIN: alive, its backlog is full
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
