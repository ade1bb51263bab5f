import Crypto
import Foundation
import ODRFSCore

/// Per-mount runtime files, found from the mountpoint alone: the daemon's pid (so
/// `odrfs unmount` can wait for it to finish) and its control socket.
///
/// The directory is `/run/odrfs/<hash>/` for root, `$XDG_RUNTIME_DIR/odrfs/<hash>/`
/// otherwise (falling back to `/tmp/odrfs-<uid>/<hash>/`), where `<hash>` is the first
/// 8 bytes of the SHA-256 of the absolute, symlink-free mountpoint path, in hex. The
/// directory is mode 0700; the socket inside, `control.sock`, is mode 0600.
///
/// Daemon and clients compute the same path when they run as the same user, which is
/// the only user besides root the daemon talks to: a client resolves the mountpoint
/// with ``resolve(mountpoint:)`` (realpath) exactly as the daemon did when mounting.
public struct RuntimeDirectory: Sendable {
    /// The directory's absolute path.
    public let path: String

    /// The runtime directory of the mount at `absolutePath` (already resolved), for a
    /// daemon run by this process's user.
    public init(mountpoint absolutePath: String) {
        self.init(mountpoint: absolutePath, owner: geteuid())
    }

    /// The runtime directory of the mount at `absolutePath` whose daemon runs as `owner`:
    /// `/run/odrfs` for root; for others `$XDG_RUNTIME_DIR/odrfs` (the caller's own, or
    /// `/run/user/<uid>` for another user's mount), else `/tmp/odrfs-<uid>`.
    public init(mountpoint absolutePath: String, owner: uid_t) {
        let digest = SHA256.hash(data: Array(absolutePath.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        let base: String
        if owner == 0 {
            base = "/run/odrfs"
        } else if owner == geteuid(), let xdg = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], xdg.hasPrefix("/") {
            base = xdg + "/odrfs"
        } else if owner != geteuid(), access("/run/user/\(owner)", F_OK) == 0 || errno == EACCES {
            base = "/run/user/\(owner)/odrfs"
        } else {
            base = "/tmp/odrfs-\(owner)"
        }
        path = base + "/" + digest
    }

    /// The runtime directory a client should use for the mount at `path`. The kernel
    /// records which user mounted a FUSE filesystem (`user_id=` in /proc/self/mountinfo),
    /// so the socket is found from the mountpoint alone, whoever asks — and a user who is
    /// not allowed is then refused by the socket rather than told there is no daemon.
    public init(clientOfMountpoint path: String) {
        let resolved = Self.resolve(mountpoint: path)
        self.init(mountpoint: resolved, owner: Self.mountOwner(resolved) ?? geteuid())
    }

    /// The `user_id` of the FUSE mount at `absolutePath`, from /proc/self/mountinfo.
    static func mountOwner(_ absolutePath: String) -> uid_t? {
        MountTable.current().entry(at: absolutePath)?.fuseOwner
    }

    /// The runtime directory of the mount at `path`, which may be relative or go
    /// through symlinks: see ``resolve(mountpoint:)``.
    public init(resolvingMountpoint path: String) {
        self.init(mountpoint: Self.resolve(mountpoint: path))
    }

    /// The daemon's pid file.
    public var pidFile: String { path + "/pid" }

    /// The control socket the daemon listens on (see ``ControlServer``).
    public var controlSocket: String { path + "/control.sock" }

    /// The absolute, symlink-free form of `path` (realpath), as the daemon records it;
    /// the lexically standardized absolute path if it cannot be resolved (e.g. a stale
    /// mount whose daemon died).
    public static func resolve(mountpoint path: String) -> String {
        if let resolved = realpath(path, nil) {
            defer { free(resolved) }
            return String(cString: resolved)
        }
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return URL(fileURLWithPath: absolute).standardizedFileURL.path
    }

    /// Creates the directory (and its parent) with mode 0700.
    public func create() {
        let parent = (path as NSString).deletingLastPathComponent
        mkdir(parent, 0o700)
        mkdir(path, 0o700)
    }

    /// Records this process as the mount's daemon.
    public func writePID() {
        create()
        try? "\(getpid())\n".write(toFile: pidFile, atomically: true, encoding: .utf8)
    }

    /// Removes the pid file and the directory (which must be empty by then: stop the
    /// ``ControlServer`` first, it removes the socket).
    public func removePID() {
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
