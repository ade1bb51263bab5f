import Foundation

/// The checks that make runtime files safe in a world-writable place such as `/tmp`
/// (used when there is no `XDG_RUNTIME_DIR`: `sudo -u`, cron, ssh without PAM), where
/// another user could create the directory first, or plant a symlink, to answer for
/// the daemon or redirect its files.
///
/// A directory is used only if it is a real directory (opened with `O_NOFOLLOW`, so a
/// symlink is refused), owned by the expected user, and without any group or other
/// permission bits. Inside such a directory nobody else can create or replace entries.
enum PrivatePath {
    /// Creates `path` (mode 0700, or 0755 when `othersMayEnter`) unless it exists, then
    /// verifies it as above. Throws a message that says what is wrong and how to fix it.
    ///
    /// `othersMayEnter`: the directory of a mount shared with every local user, whose
    /// control socket they may reach. It may let others in (r-x) but never write (no
    /// group or other `w`: nobody else can create or replace an entry); one of ours without
    /// other access is opened up to 0755.
    static func ensureDirectory(_ path: String, owner: uid_t = geteuid(), othersMayEnter: Bool = false) throws(ControlError) {
        if mkdir(path, othersMayEnter ? 0o755 : 0o700) != 0 && errno != EEXIST {
            throw ControlError(.internalError, "cannot create the runtime directory \(path): \(String(cString: strerror(errno)))")
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = errno
            var info = stat()
            if lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK {
                throw refusal(path, "it is a symbolic link; another user may have planted it to redirect the control socket. Remove it")
            }
            if reason == ENOTDIR {
                throw refusal(path, "it is not a directory. Remove it")
            }
            throw ControlError(.internalError, "cannot open the runtime directory \(path): \(String(cString: strerror(reason)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw ControlError(.internalError, "cannot stat the runtime directory \(path): \(String(cString: strerror(errno)))")
        }
        guard othersMayEnter else { return try check(path, info, owner: owner) }
        try checkShared(path, info, owner: owner)
        if info.st_mode & 0o055 != 0o055 {
            guard fchmod(fd, (info.st_mode & 0o7777) | 0o055) == 0 else {
                throw ControlError(.internalError, "cannot open \(path) to other users: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The verdict on a shared directory's `stat`: ours, and nobody else may write in it.
    static func checkShared(_ path: String, _ info: stat, owner: uid_t) throws(ControlError) {
        try checkOwnedDirectory(path, info, owner: owner)
        let mode = info.st_mode & 0o7777
        guard mode & 0o022 == 0 else {
            throw refusal(path, "its mode is \(String(mode, radix: 8)), which lets other users write in it; it must be 755. Run `chmod 755 \(path)` if you created it, or remove it")
        }
    }

    /// Verifies the entry at `path` if there is one: it must be of type `kind` (e.g.
    /// `S_IFSOCK`, `S_IFREG`), not a symlink, owned by `owner`. Returns whether it exists.
    @discardableResult
    static func checkEntry(_ path: String, kind: mode_t, owner: uid_t = geteuid()) throws(ControlError) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            guard errno == ENOENT else {
                throw ControlError(.internalError, "cannot stat \(path): \(String(cString: strerror(errno)))")
            }
            return false
        }
        switch info.st_mode & S_IFMT {
        case kind: break
        case S_IFLNK: throw refusal(path, "it is a symbolic link; another user may have planted it. Remove it")
        default: throw refusal(path, "it is not a \(kind == S_IFSOCK ? "socket" : "regular file"). Remove it")
        }
        guard info.st_uid == owner else {
            throw refusal(path, "it is owned by uid \(info.st_uid), not by uid \(owner). Remove it")
        }
        return true
    }

    /// The verdict on a directory's `stat`: owner and mode. Separate so tests can feed it
    /// any combination.
    static func check(_ path: String, _ info: stat, owner: uid_t) throws(ControlError) {
        try checkOwnedDirectory(path, info, owner: owner)
        let mode = info.st_mode & 0o7777
        guard mode & 0o077 == 0 else {
            throw refusal(path, "its mode is \(String(mode, radix: 8)), which lets other users in; it must be 700. Run `chmod 700 \(path)` if you created it, or remove it")
        }
    }

    /// A real directory owned by `owner`: what both a private and a shared directory must be.
    private static func checkOwnedDirectory(_ path: String, _ info: stat, owner: uid_t) throws(ControlError) {
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw refusal(path, "it is not a directory. Remove it")
        }
        guard info.st_uid == owner else {
            throw refusal(path, "it is owned by uid \(info.st_uid), not by uid \(owner) (the daemon's user); another user may have created it to intercept the control socket. Remove it (as root), or set XDG_RUNTIME_DIR to a private directory")
        }
    }

    private static func refusal(_ path: String, _ reason: String) -> ControlError {
        ControlError(.permissionDenied, "refusing to use the runtime path \(path): \(reason)")
    }
}
