#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension POSIXFile {
    /// Why a resource file could not be opened for packing.
    enum BeneathError: Error {
        case system(SystemCallError)
        /// A path component or the file itself is no longer what the scan saw (a symlink, a
        /// FIFO, a device...).
        case notRegular(String)
    }

    /// Opens the regular file at `components` beneath the directory `root`, one component at
    /// a time with `O_NOFOLLOW`: a directory swapped for a symlink after the scan cannot lead
    /// outside the tree, and a file swapped for a FIFO or a device is refused instead of
    /// blocking the build (`O_NONBLOCK`, then `fstat` before any read).
    static func openRegularFile(beneath root: Int32, _ components: [Substring]) throws(BeneathError) -> Int32 {
        guard let last = components.last else { throw .notRegular("empty path") }
        var directory = root
        defer { if directory != root { close(directory) } }
        for component in components.dropLast() {
            let next = openat(directory, String(component), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard next >= 0 else {
                if errno == ELOOP || errno == ENOTDIR { throw .notRegular("'\(component)' is no longer a directory") }
                throw .system(SystemCallError("openat"))
            }
            if directory != root { close(directory) }
            directory = next
        }
        // Look before opening: opening some devices has side effects even with O_NONBLOCK.
        var info = stat()
        guard fstatat(directory, String(last), &info, AT_SYMLINK_NOFOLLOW) == 0 else { throw .system(SystemCallError("fstatat")) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .notRegular("it is no longer a regular file") }
        let fd = openat(directory, String(last), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ELOOP { throw .notRegular("it is now a symlink") }
            throw .system(SystemCallError("openat"))
        }
        // And after: it may have been swapped between fstatat and openat.
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw .notRegular("it is no longer a regular file")
        }
        return fd
    }
}
