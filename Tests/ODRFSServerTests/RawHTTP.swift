import Foundation

/// A response as the bytes on the wire said it.
struct RawResponse {
    var status: Int
    /// Lowercased names.
    var headers: [String: String]
    var body: [UInt8]

    func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A deliberately dumb HTTP/1.1 client over a blocking socket: sends the request target
/// byte for byte (no normalisation of `..` or percent escapes, which real clients do) and
/// reads until the server closes. Runs on a thread of its own so the blocking calls never
/// hold a Swift concurrency thread; every socket has a 30 s receive timeout.
enum RawHTTP {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func send(port: Int, method: String = "GET", target: String, headers: [String: String] = [:]) async throws -> RawResponse {
        var request = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            request += "\(name): \(value)\r\n"
        }
        request += "\r\n"
        let bytes = Array(request.utf8)
        let raw = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8], any Error>) in
            // A thread of its own: on Linux, Dispatch's global queues and the Swift concurrency
            // pool share the same few threads, which a blocking recv would starve.
            let thread = Thread {
                continuation.resume(with: Result { try exchange(port: port, request: bytes) })
            }
            thread.start()
        }
        return try parse(raw, method: method)
    }

    /// A TCP socket connected to 127.0.0.1:`port`; `configure` sets options before connecting.
    static func connectLoopback(port: Int, configure: (Int32) -> Void = { _ in }) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        configure(fd)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "connect failed: \(reason)")
        }
        return fd
    }

    private static func exchange(port: Int, request: [UInt8]) throws -> [UInt8] {
        let fd = try connectLoopback(port: port) { fd in
            var timeout = timeval(tv_sec: 30, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        defer { close(fd) }
        guard request.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, 0) }) == request.count else {
            throw Failure(description: "send failed")
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 {
                response += buffer[0..<count]
            } else if count == 0 {
                return response
            } else {
                throw Failure(description: "recv failed: \(String(cString: strerror(errno)))")
            }
        }
    }

    private static func parse(_ raw: [UInt8], method: String) throws -> RawResponse {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, raw.count - 3)).first(where: { Array(raw[$0..<$0 + 4]) == separator }) else {
            throw Failure(description: "no complete response head in \(raw.count) bytes")
        }
        let lines = String(decoding: raw[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw Failure(description: "bad status line \(lines[0])")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return RawResponse(status: status, headers: headers, body: Array(raw[(end + 4)...]))
    }
}
