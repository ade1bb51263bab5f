import Foundation
import TestSupport
import Testing

/// A real nginx serving a dist dir on 127.0.0.1, with an access log the tests read:
/// an origin no one here wrote. Started in the foreground as a child and stopped by PID.
final class NginxOrigin {
    let port: Int
    let accessLog: String
    private let process: ChildProcess
    private let directory: String

    /// Set when nginx speaks TLS with this certificate and key (see ``PrivateCA``).
    /// `wholeFileRate` (an nginx rate, "512k"), if given, slows every request without a
    /// `Range` header to it: a pack's stream stays far from a large file's end.
    let tls: (certificate: String, key: String)?

    var url: String { "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)/" }

    init(serving dist: String, in directory: String, port: Int = Int.random(in: 20_000..<60_000),
         tls: (certificate: String, key: String)? = nil, http2: Bool = false, wholeFileRate: String? = nil) async throws {
        self.directory = directory
        self.tls = tls
        accessLog = directory + "/access.log"
        self.port = port
        process = try await NginxProcess.start(
            in: directory, port: port, tls: tls != nil, http2: http2, accessLog: accessLog, http: "sendfile on;",
            server: """
                \(tls.map { "ssl_certificate \($0.certificate); ssl_certificate_key \($0.key);" } ?? "")
                root \(dist);
                location / {
                    \(wholeFileRate.map { "if ($http_range = \"\") { set $limit_rate \($0); }" } ?? "")
                    try_files $uri =404;
                }
                """)
    }

    /// Request lines (method and path) from the access log, in order.
    var requests: [String] {
        let text = (try? String(contentsOfFile: accessLog, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let start = line.firstIndex(of: "\""), let end = line[line.index(after: start)...].firstIndex(of: "\"") else { return nil }
            return String(line[line.index(after: start)..<end])
        }
    }

    /// Requests for pack files.
    var packRequests: [String] { requests.filter { $0.contains("/packs/") } }

    deinit {
        // SIGTERM is nginx's fast shutdown: open keep-alive connections close too.
        process.stop(gracefully: .seconds(5))
    }

    typealias NginxError = NginxProcess.StartError
}
