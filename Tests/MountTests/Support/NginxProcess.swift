import Foundation
import TestSupport
import Testing

/// Starts a real nginx in the foreground as a child (stopped by PID by its owner): the
/// configuration both test nginxes share, around the `http` lines and `server` body
/// each of them brings. Returns once it accepts connections; throws with its stderr if
/// it exits first (e.g. the port is taken: the caller retries on another).
enum NginxProcess {
    struct StartError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    static func start(in directory: String, port: Int, tls: Bool = false, http2: Bool = false, accessLog: String, http: String,
                      server: String) async throws -> ChildProcess {
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
                \(http)
                server {
                    listen 127.0.0.1:\(port)\(tls ? " ssl" : "")\(http2 ? " http2" : "");
                    \(server)
                }
            }
            """
        try config.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        let process = try ChildProcess("/usr/sbin/nginx", ["-c", directory + "/nginx.conf", "-p", directory], stderr: directory + "/stderr.log")
        let connectable = {
            (try? await Command.run("/usr/bin/env", ["python3", "-c", "import socket; socket.create_connection(('127.0.0.1', \(port)), 1)"]))?.status == 0
        }
        // Stop waiting as soon as nginx exits.
        var ready = await eventually(timeout: .seconds(10)) {
            if !process.isRunning { return true }
            return await connectable()
        }
        await pause(.milliseconds(100))
        ready = ready && process.isRunning
        guard ready else {
            process.stop()
            let errors = (try? String(contentsOfFile: directory + "/stderr.log", encoding: .utf8)) ?? ""
            throw StartError(message: "nginx did not start: \(errors)")
        }
        return process
    }
}

/// Waits until nothing accepts connections at `url`'s port: a stopped nginx gets SIGTERM and
/// exits a moment later, and a test of "the origin is down" must not race it.
func waitUntilRefused(_ url: String) async throws {
    let port = try #require(URL(string: url)?.port, "no port in \(url)")
    let refused = await eventually(timeout: .seconds(10)) {
        (try? await Command.run("/usr/bin/env", ["python3", "-c", "import socket; socket.create_connection(('127.0.0.1', \(port)), 1)"]))?.status != 0
    }
    try #require(refused, "the origin on port \(port) did not stop")
}
