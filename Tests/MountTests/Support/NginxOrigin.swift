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
    let tls: (certificate: String, key: String)?

    var url: String { "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)/" }

    init(serving dist: String, in directory: String, port: Int = Int.random(in: 20_000..<60_000),
         tls: (certificate: String, key: String)? = nil) async throws {
        self.directory = directory
        self.tls = tls
        accessLog = directory + "/access.log"
        self.port = port
        try FileManager.default.createDirectory(atPath: directory + "/tmp", withIntermediateDirectories: true)
        let config = """
            daemon off;
            master_process on;
            worker_processes 1;
            user root;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log warn;
            events { worker_connections 256; }
            http {
                access_log \(accessLog) combined;
                client_body_temp_path \(directory)/tmp;
                proxy_temp_path \(directory)/tmp;
                fastcgi_temp_path \(directory)/tmp;
                uwsgi_temp_path \(directory)/tmp;
                scgi_temp_path \(directory)/tmp;
                sendfile on;
                server {
                    listen 127.0.0.1:\(port)\(tls == nil ? "" : " ssl");
                    \(tls.map { "ssl_certificate \($0.certificate); ssl_certificate_key \($0.key);" } ?? "")
                    root \(dist);
                    location / { try_files $uri =404; }
                }
            }
            """
        try config.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        process = try ChildProcess("/usr/sbin/nginx", ["-c", directory + "/nginx.conf", "-p", directory], stderr: directory + "/stderr.log")
        let process = self.process
        let connectable = {
            (try? await Command.run("/usr/bin/env", ["python3", "-c", "import socket; socket.create_connection(('127.0.0.1', \(port)), 1)"]))?.status == 0
        }
        // Stop waiting as soon as nginx exits (e.g. the port is taken): the caller retries.
        var ready = await eventually(timeout: .seconds(10)) {
            if !process.isRunning { return true }
            return await connectable()
        }
        await pause(.milliseconds(100))
        ready = ready && process.isRunning
        if !ready {
            process.stop()
            let errors = (try? String(contentsOfFile: directory + "/stderr.log", encoding: .utf8)) ?? ""
            throw NginxError(message: "nginx did not start: \(errors)")
        }
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

    struct NginxError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
