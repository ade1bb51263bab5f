import Foundation

/// A raw, blocking connection to a mount's control socket speaking newline-delimited
/// JSON, for load tests that need many connections and no client library in the way.
/// Used only from dedicated threads (it blocks); every read is bounded by `poll`.
struct ControlLine: Sendable {
    let descriptor: Int32

    /// Connects to the Unix socket at `path`; nil (with errno) if that fails.
    static func connect(to path: String) -> ControlLine? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            Glibc.close(descriptor)
            return nil
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            Glibc.close(descriptor)
            return nil
        }
        return ControlLine(descriptor: descriptor)
    }

    /// Sends one request line; false if the socket refused it.
    func send(_ line: String) -> Bool {
        let bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    /// Reads up to and including the next newline, waiting at most `timeout` in all;
    /// nil on timeout, error or end of stream. Peeks first (MSG_PEEK) so
    /// nothing after the line is consumed.
    func readLine(timeout: Duration) -> String? {
        let deadline = ContinuousClock.now + timeout
        var line: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { return nil }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            let ready = poll(&poller, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            let peeked = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_PEEK)) }
            guard peeked > 0 else { return nil }
            let newline = buffer[0..<peeked].firstIndex(of: UInt8(ascii: "\n"))
            let take = newline.map { $0 + 1 } ?? peeked
            let taken = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, take, 0) }
            guard taken == take else { return nil }
            line.append(contentsOf: buffer[0..<take])
            if newline != nil { return String(decoding: line, as: UTF8.self) }
        }
    }

    func close() {
        Glibc.close(descriptor)
    }
}
