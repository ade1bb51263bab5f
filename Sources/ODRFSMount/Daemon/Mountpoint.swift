import Foundation

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

    /// Whether `absolutePath` is the mount point of some filesystem, per /proc/self/mountinfo.
    static func isMounted(_ absolutePath: String) -> Bool {
        guard let table = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return false }
        for line in table.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 4 else { continue }
            if unescape(String(fields[4])) == absolutePath { return true }
        }
        return false
    }

    /// mountinfo escapes space, tab, newline and backslash as octal `\ooo`.
    private static func unescape(_ field: String) -> String {
        guard field.contains("\\") else { return field }
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "\\"), utf8.count >= 3,
               let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
