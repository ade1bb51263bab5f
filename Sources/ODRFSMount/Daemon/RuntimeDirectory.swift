import Crypto
import Foundation

/// Per-mount runtime files, found from the mountpoint alone: the daemon's pid
/// (so `odrfs unmount` can wait for it to finish) and, later, its control socket.
///
/// `/run/odrfs/<hash>/` for root, `$XDG_RUNTIME_DIR/odrfs/<hash>/` otherwise (falling
/// back to `/tmp/odrfs-<uid>/<hash>/`), where `<hash>` is derived from the absolute
/// mountpoint path. The directory is mode 0700.
public struct RuntimeDirectory: Sendable {
    public let path: String

    public init(mountpoint absolutePath: String) {
        let digest = SHA256.hash(data: Array(absolutePath.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        let base: String
        if geteuid() == 0 {
            base = "/run/odrfs"
        } else if let xdg = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], xdg.hasPrefix("/") {
            base = xdg + "/odrfs"
        } else {
            base = "/tmp/odrfs-\(geteuid())"
        }
        path = base + "/" + digest
    }

    public var pidFile: String { path + "/pid" }

    func create() {
        let parent = (path as NSString).deletingLastPathComponent
        mkdir(parent, 0o700)
        mkdir(path, 0o700)
    }

    func writePID() {
        create()
        try? "\(getpid())\n".write(toFile: pidFile, atomically: true, encoding: .utf8)
    }

    func removePID() {
        unlink(pidFile)
        rmdir(path)
    }

    /// The pid of the daemon serving this mountpoint, if one is alive.
    public func daemonPID() -> pid_t? {
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
              let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0 else { return nil }
        return kill(pid, 0) == 0 || errno == EPERM ? pid : nil
    }
}
