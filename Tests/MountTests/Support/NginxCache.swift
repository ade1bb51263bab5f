import Foundation
import TestSupport
import Testing

/// A real nginx caching reverse proxy (`proxy_cache`) on 127.0.0.1 in front of an origin:
/// the site cache of the README's set-up. Started as a child and stopped by PID.
final class NginxCache {
    let port: Int
    private let process: ChildProcess

    var url: String { "http://127.0.0.1:\(port)/" }

    init(upstream: String, in directory: String, port: Int) async throws {
        self.port = port
        try FileManager.default.createDirectory(atPath: directory + "/tmp", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/cache", withIntermediateDirectories: true)
        let config = """
            daemon off;
            master_process on;
            worker_processes 1;
            user root;
            pid \(directory)/nginx.pid;
            error_log \(directory)/error.log warn;
            events { worker_connections 256; }
            http {
                access_log \(directory)/access.log combined;
                client_body_temp_path \(directory)/tmp;
                proxy_temp_path \(directory)/tmp;
                fastcgi_temp_path \(directory)/tmp;
                uwsgi_temp_path \(directory)/tmp;
                scgi_temp_path \(directory)/tmp;
                proxy_cache_path \(directory)/cache levels=1:2 keys_zone=odrfs:4m max_size=1g inactive=1d use_temp_path=off;
                server {
                    listen 127.0.0.1:\(port);
                    location / {
                        proxy_pass \(upstream);
                        proxy_cache odrfs;
                        proxy_cache_lock on;
                        proxy_cache_revalidate on;
                        proxy_cache_valid 200 1y;
                    }
                }
            }
            """
        try config.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        process = try ChildProcess("/usr/sbin/nginx", ["-c", directory + "/nginx.conf", "-p", directory], stderr: directory + "/stderr.log")
        let process = self.process
        let ready = await eventually(timeout: .seconds(10)) {
            if !process.isRunning { return true }
            return (try? await Command.run("/usr/bin/env", ["python3", "-c", "import socket; socket.create_connection(('127.0.0.1', \(port)), 1)"]))?.status == 0
        }
        guard ready && process.isRunning else {
            process.stop()
            let errors = (try? String(contentsOfFile: directory + "/stderr.log", encoding: .utf8)) ?? ""
            throw NginxOrigin.NginxError(message: "the nginx cache did not start: \(errors)")
        }
    }

    deinit {
        process.stop(gracefully: .seconds(5))
    }
}
