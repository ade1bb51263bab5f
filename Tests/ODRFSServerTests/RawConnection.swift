import Foundation

/// One TCP connection to the test server driven by hand: connect, send some bytes (or none),
/// then see whether and when the server answers or closes. Every receive has a timeout, and
/// the blocking calls run on a thread of their own (``onThread(_:)``), never on the Swift
/// concurrency pool. Used from one thread at a time.
final class RawConnection: @unchecked Sendable {
    enum Received: Equatable {
        case bytes([UInt8])
        case closed
        case timedOut
    }

    private let fd: Int32
    private var isClosed = false

    /// - Parameter receiveBuffer: a small SO_RCVBUF makes a client that stops reading stall
    ///   the server's writes quickly.
    init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = try RawHTTP.connectLoopback(port: port) { fd in
            if var size = receiveBuffer {
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
        }
    }

    deinit { shutDown() }

    /// Closes the socket now rather than when the last reference goes.
    func shutDown() {
        guard !isClosed else { return }
        isClosed = true
        close(fd)
    }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw RawHTTP.Failure(description: "send failed: \(String(cString: strerror(errno)))")
        }
    }

    /// Waits up to `timeout` for bytes or the end of the stream.
    func receive(timeout: Duration) -> Received {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let ready = poll(&poller, 1, milliseconds)
        guard ready > 0 else { return .timedOut }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(fd, &buffer, buffer.count, 0)
        // A reset counts as closed: the server dropped the connection either way.
        return count > 0 ? .bytes(Array(buffer[0..<count])) : .closed
    }

    /// Reads until the server closes, giving up (nil) after `timeout` without progress.
    func readToEnd(timeout: Duration) -> [UInt8]? {
        var all: [UInt8] = []
        while true {
            switch receive(timeout: timeout) {
            case .bytes(let bytes): all += bytes
            case .closed: return all
            case .timedOut: return nil
            }
        }
    }
}

/// Runs blocking test code on a thread of its own and returns its result.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
