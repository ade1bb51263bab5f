import Foundation
import TestSupport
import Testing

/// Debian's Squid as a site's caching forward proxy on 127.0.0.1: the configuration Debian
/// ships (`/etc/squid/squid.conf`, which lets `CONNECT` reach port 443 only) with its own
/// port, its own disk cache, logs and PID file in a temporary directory, and (unless
/// `admittingTheTest` is false) a rule before the deny rules that lets 127.0.0.1 (the test)
/// use the proxy for anything, `CONNECT` to the test's https origin included. Started in
/// the foreground (`-N`) as a child, stopped by PID.
///
/// Run as root, Squid drops to the user `proxy`, so its directory belongs to that user.
final class SquidProxy {
    let port: Int
    let directory: String
    private let process: ChildProcess

    var url: String { "http://127.0.0.1:\(port)" }

    /// Lines of the access log (Squid's native format: time, elapsed, client,
    /// `RESULT/status`, bytes, method, URL, …).
    var accessLog: [String] {
        ((try? String(contentsOfFile: directory + "/access.log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// The access log's lines for URLs that contain `text`, as `RESULT/status URL`.
    func results(for text: String) -> [String] {
        accessLog.compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 6, fields[6].contains(text) else { return nil }
            return "\(fields[3]) \(fields[5]) \(fields[6])"
        }
    }

    struct SquidError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: "/usr/sbin/squid") }

    init(port: Int, admittingTheTest: Bool = true) async throws {
        guard Self.isInstalled else { throw SquidError(message: "squid is not installed (mount-scripts/setup.sh installs it)") }
        var template = Array("/tmp/odrfs-squid-test.XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw CocoaError(.fileWriteUnknown)
        }
        directory = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        self.port = port
        let config = directory + "/squid.conf"
        do {
            try Self.configuration(port: port, directory: directory, admittingTheTest: admittingTheTest).write(toFile: config, atomically: true, encoding: .utf8)
            if getuid() == 0, let user = getpwnam("proxy") {
                chown(directory, user.pointee.pw_uid, user.pointee.pw_gid)
            }
            // Creates the disk cache's directories, then exits.
            let initialize = try await Command.run("/usr/sbin/squid", ["-N", "-z", "-f", config], timeout: .seconds(60))
            guard initialize.status == 0 else { throw SquidError(message: "squid -z failed: \(initialize.stderr)") }
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        process = try ChildProcess("/usr/sbin/squid", ["-N", "-f", config], stdout: directory + "/squid.out",
                                   stderr: directory + "/squid.err")
        let process = self.process
        let cacheLog = directory + "/cache.log"
        // Squid that cannot bind its port logs it and keeps running: wait for the line that says it listens.
        let listening = { (try? String(contentsOfFile: cacheLog, encoding: .utf8))?.contains("local=127.0.0.1:\(port) ") == true }
        guard await eventually(timeout: .seconds(20), { listening() || !process.isRunning }) && listening() && process.isRunning else {
            let log = (try? String(contentsOfFile: cacheLog, encoding: .utf8)) ?? ""
            process.stop()
            try? FileManager.default.removeItem(atPath: directory)
            throw SquidError(message: "squid did not start on port \(port): \(log.suffix(2000))")
        }
    }

    /// Debian's configuration with this instance's port, paths and the rule for the test.
    static func configuration(port: Int, directory: String, admittingTheTest: Bool) throws -> String {
        let debian = try String(contentsOfFile: "/etc/squid/squid.conf", encoding: .utf8)
        var lines: [String] = []
        var allowed = false
        for line in debian.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("http_port ") { continue }
            if line.hasPrefix("http_access deny"), !allowed {
                if admittingTheTest { lines += ["acl odrfs_test src 127.0.0.1", "http_access allow odrfs_test"] }
                allowed = true
            }
            lines.append(line)
        }
        guard allowed else { throw SquidError(message: "/etc/squid/squid.conf has no http_access deny rule to put the test's rule before") }
        lines += [
            "http_port 127.0.0.1:\(port)",
            "cache_dir ufs \(directory)/cache 200 16 256",
            "access_log stdio:\(directory)/access.log squid",
            "cache_log \(directory)/cache.log",
            "pid_filename \(directory)/squid.pid",
            "coredump_dir \(directory)",
            "netdb_filename none",
            // Nothing of these is under test: a quick stop, and no ICMP helper outliving Squid.
            "shutdown_lifetime 1 seconds",
            "pinger_enable off",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    deinit {
        process.stop(gracefully: .seconds(5))
        let directory = directory
        let process = process
        // The directory goes once Squid has exited (the reaper sends SIGKILL after the grace).
        Task.detached {
            _ = await process.wait(timeout: .seconds(10))
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}
