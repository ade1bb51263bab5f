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
/// In a world-writable place (`/tmp`) another user could create the directory first or
/// plant symlinks: ``create()`` refuses a directory (or parent) that is a symlink, is not
/// owned by this user or has any group or other permission bits, and the pid file and
/// socket are checked the same way (see `PrivatePath`). Clients in turn check who
/// listens on the socket (``ControlClient``).
///
/// Daemon and clients compute the same path when they run as the same user, which is
/// the only user besides root the daemon talks to: a client resolves the mountpoint
/// with ``resolve(mountpoint:)`` (realpath) exactly as the daemon did when mounting.
public struct RuntimeDirectory: Sendable {
    /// The directory's absolute path.
    public let path: String
    /// A mount root made with `allow_other`, shared with every local user: its directory
    /// (under `/run/odrfs-shared`, mode 0755) and socket (0666) let them in, and the
    /// daemon tells who may do what by the peer's uid (``ControlAccess``).
    public let isShared: Bool

    /// A runtime directory at an explicit `path` (tests, or a custom location).
    public init(path: String, shared: Bool = false) {
        self.path = path
        self.isShared = shared
    }

    /// The parent of every shared mount's runtime directory (root's mounts only).
    public static let sharedBase = "/run/odrfs-shared"

    /// The runtime directory of the mount at `absolutePath` (already resolved), for a
    /// daemon run by this process's user.
    public init(mountpoint absolutePath: String) {
        self.init(mountpoint: absolutePath, owner: geteuid())
    }

    /// The runtime directory of a mount made by root with `allow_other`.
    public init(sharedMountpoint absolutePath: String) {
        self.init(path: Self.sharedBase + "/" + Self.digest(absolutePath), shared: true)
    }

    private static func digest(_ absolutePath: String) -> String {
        SHA256.hash(data: Array(absolutePath.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// The runtime directory of the mount at `absolutePath` whose daemon runs as `owner`:
    /// `/run/odrfs` for root; for others `$XDG_RUNTIME_DIR/odrfs` (the caller's own, or
    /// `/run/user/<uid>` for another user's mount), else `/tmp/odrfs-<uid>`.
    public init(mountpoint absolutePath: String, owner: uid_t) {
        let digest = Self.digest(absolutePath)
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
        isShared = false
    }

    /// The runtime directory a client should use for the mount at `path`. The kernel
    /// records which user mounted a FUSE filesystem (`user_id=` in /proc/self/mountinfo),
    /// so the socket is found from the mountpoint alone, whoever asks — and a user who is
    /// not allowed is then refused by the socket rather than told there is no daemon.
    public init(clientOfMountpoint path: String) {
        let resolved = Self.resolve(mountpoint: path)
        let entry = MountTable.current().entry(at: resolved)
        if let entry, entry.fuseOwner == 0, entry.superOptions.contains("allow_other") {
            self.init(sharedMountpoint: resolved)
        } else if entry == nil, access(RuntimeDirectory(sharedMountpoint: resolved).controlSocket, F_OK) == 0 {
            // The mount table can miss an entry while other mounts come and go (the kernel's
            // mountinfo is read in pieces; CI's parallel tests mount dozens at once). A shared
            // mount's socket lives in a directory only root writes: finding it there is as
            // good as the entry.
            self.init(sharedMountpoint: resolved)
        } else {
            self.init(mountpoint: resolved, owner: entry?.fuseOwner ?? geteuid())
        }
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

    /// Creates the directory and its parent (mode 0700) unless they exist, and verifies
    /// both: real directories, owned by this user, no group or other permission bits.
    /// Throws (`permission-denied`, with what to do) rather than use an unsafe one.
    public func create() throws(ControlError) {
        try PrivatePath.ensureDirectory((path as NSString).deletingLastPathComponent, othersMayEnter: isShared)
        try PrivatePath.ensureDirectory(path, othersMayEnter: isShared)
    }

    /// Records this process as the mount's daemon: written to a new file (never through
    /// a symlink, mode 0600) and renamed over the pid file.
    public func writePID() throws(ControlError) {
        try create()
        try PrivatePath.checkEntry(pidFile, kind: S_IFREG)
        let temporary = pidFile + ".\(getpid()).tmp"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ControlError(.internalError, "cannot write the pid file \(temporary): \(String(cString: strerror(errno)))")
        }
        let text = Array("\(getpid())\n".utf8)
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == text.count, rename(temporary, pidFile) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw ControlError(.internalError, "cannot write the pid file \(pidFile): \(reason)")
        }
    }

    /// Removes the pid file and the directory (which must be empty by then: stop the
    /// ``ControlServer`` first, it removes the socket).
    public func removePID() {
        unlink(pidFile)
        rmdir(path)
    }

    /// The pid of the daemon serving this mountpoint, if one is alive. Only a regular
    /// file owned by this user or root counts (never read through a symlink).
    public func daemonPID() -> pid_t? {
        let fd = open(pidFile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
              info.st_uid == geteuid() || info.st_uid == 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0,
              let pid = pid_t(String(decoding: bytes[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
              pid > 0 else { return nil }
        return kill(pid, 0) == 0 || errno == EPERM ? pid : nil
    }
}
