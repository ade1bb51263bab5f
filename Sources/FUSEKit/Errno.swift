import Glibc

/// A POSIX error number, the only kind of error the kernel accepts in a FUSE
/// reply (`fuse_reply_err`). Filesystems map their own errors onto one of these
/// in a single place and reply with it.
public struct Errno: Error, Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The positive C value, e.g. `ENOENT` (2).
    public var rawValue: Int32

    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    public init(_ rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The symbolic name and the C library's message, e.g. `ENOENT (No such file or directory)`.
    public var description: String {
        let message = String(cString: strerror(rawValue))
        if let name = Errno.names[rawValue] {
            return "\(name) (\(message))"
        }
        return "errno \(rawValue) (\(message))"
    }

    /// No such file or directory; the corresponding C error is `ENOENT`.
    public static let noSuchFileOrDirectory = Errno(ENOENT)
    /// Input/output error; the corresponding C error is `EIO`.
    public static let ioError = Errno(EIO)
    /// Interrupted system call; the corresponding C error is `EINTR`.
    public static let interrupted = Errno(EINTR)
    /// Read-only file system; the corresponding C error is `EROFS`.
    public static let readOnlyFileSystem = Errno(EROFS)
    /// No space left on device; the corresponding C error is `ENOSPC`.
    public static let noSpace = Errno(ENOSPC)
    /// Operation not supported; the corresponding C error is `EOPNOTSUPP`.
    public static let notSupported = Errno(EOPNOTSUPP)
    /// No data available (e.g. a missing extended attribute); the corresponding C error is `ENODATA`.
    public static let noData = Errno(ENODATA)
    /// Result too large (e.g. an xattr buffer too small); the corresponding C error is `ERANGE`.
    public static let outOfRange = Errno(ERANGE)
    /// Is a directory; the corresponding C error is `EISDIR`.
    public static let isDirectory = Errno(EISDIR)
    /// Not a directory; the corresponding C error is `ENOTDIR`.
    public static let notDirectory = Errno(ENOTDIR)
    /// Permission denied; the corresponding C error is `EACCES`.
    public static let permissionDenied = Errno(EACCES)
    /// Operation not permitted; the corresponding C error is `EPERM`.
    public static let notPermitted = Errno(EPERM)
    /// Bad file descriptor (e.g. an unknown file handle); the corresponding C error is `EBADF`.
    public static let badFileDescriptor = Errno(EBADF)
    /// Invalid argument; the corresponding C error is `EINVAL`.
    public static let invalidArgument = Errno(EINVAL)
    /// Function not implemented; the corresponding C error is `ENOSYS`.
    public static let functionNotImplemented = Errno(ENOSYS)
    /// Network is unreachable; the corresponding C error is `ENETUNREACH`.
    public static let networkUnreachable = Errno(ENETUNREACH)
    /// No route to host; the corresponding C error is `EHOSTUNREACH`.
    public static let hostUnreachable = Errno(EHOSTUNREACH)
    /// No such device; the corresponding C error is `ENODEV`.
    public static let noDevice = Errno(ENODEV)
    /// Too many open files; the corresponding C error is `EMFILE`.
    public static let tooManyOpenFiles = Errno(EMFILE)
    /// Connection timed out; the corresponding C error is `ETIMEDOUT`.
    public static let timedOut = Errno(ETIMEDOUT)
    /// Resource temporarily unavailable; the corresponding C error is `EAGAIN`.
    public static let tryAgain = Errno(EAGAIN)

    /// The errno of the calling thread, for wrapping a failed libc call.
    static var current: Errno { Errno(errno) }

    // Names for the values above so log lines show `EROFS`, not just a number.
    private static let names: [Int32: String] = [
        ENOENT: "ENOENT", EIO: "EIO", EINTR: "EINTR", EROFS: "EROFS", ENOSPC: "ENOSPC",
        EOPNOTSUPP: "EOPNOTSUPP", ENODATA: "ENODATA", ERANGE: "ERANGE", EISDIR: "EISDIR",
        ENOTDIR: "ENOTDIR", EACCES: "EACCES", EPERM: "EPERM", EBADF: "EBADF", EINVAL: "EINVAL",
        ENOSYS: "ENOSYS", ENETUNREACH: "ENETUNREACH", EHOSTUNREACH: "EHOSTUNREACH",
        ENODEV: "ENODEV", EMFILE: "EMFILE", ETIMEDOUT: "ETIMEDOUT", EAGAIN: "EAGAIN",
        EEXIST: "EEXIST", ENOTEMPTY: "ENOTEMPTY", EBUSY: "EBUSY", ENOTCONN: "ENOTCONN",
    ]
}
