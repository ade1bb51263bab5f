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
        try FileManager.default.createDirectory(atPath: directory + "/cache", withIntermediateDirectories: true)
        process = try await NginxProcess.start(
            in: directory, port: port, accessLog: directory + "/access.log",
            http: "proxy_cache_path \(directory)/cache levels=1:2 keys_zone=odrfs:4m max_size=1g inactive=1d use_temp_path=off;",
            server: """
                location / {
                    proxy_pass \(upstream);
                    proxy_cache odrfs;
                    proxy_cache_lock on;
                    proxy_cache_revalidate on;
                    proxy_cache_valid 200 1y;
                }
                """)
    }

    deinit {
        process.stop(gracefully: .seconds(5))
    }
}
