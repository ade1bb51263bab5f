import Foundation
import ODRFSCore

/// Checks a mountpoint before anything is downloaded, so a typo fails in
/// milliseconds with a precise message instead of after the initial install.
enum Mountpoint {
    /// The absolute, symlink-free path of `path`, or an error saying what is wrong with it.
    static func validate(_ path: String) throws(MountError) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            if errno == ENOTCONN {
                throw MountError("mountpoint \(path) is a stale FUSE mount (its daemon died): run `fusermount3 -uz \(path)` or `odrfs unmount --lazy \(path)` first")
            }
            throw MountError("mountpoint \(path) is not usable: \(reason)")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw MountError("mountpoint \(path) is not a directory")
        }
        guard let resolved = realpath(path, nil) else {
            throw MountError("mountpoint \(path) cannot be resolved: \(String(cString: strerror(errno)))")
        }
        defer { free(resolved) }
        let absolute = String(cString: resolved)
        if isMounted(absolute) {
            // statfs (statvfs) is never answered from the kernel's caches, so it tells a dead
            // daemon's mount (ENOTCONN) from a live one.
            var info = statvfs()
            if statvfs(absolute, &info) != 0 && errno == ENOTCONN {
                throw MountError("mountpoint \(absolute) is a stale FUSE mount (its daemon died): run `fusermount3 -uz \(absolute)` or `odrfs unmount --lazy \(absolute)` first")
            }
            throw MountError("mountpoint \(absolute) is busy: something is already mounted there (unmount it first with `odrfs unmount \(absolute)`)")
        }
        return absolute
    }

    /// Whether `absolutePath` is the mount point of some filesystem, per the mount table.
    static func isMounted(_ absolutePath: String) -> Bool {
        MountTable.current().entry(at: absolutePath) != nil
    }
}
