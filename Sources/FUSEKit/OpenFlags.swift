import Glibc

/// The `open(2)` flags the kernel forwards with an open request
/// (`fuse_file_info.flags`). The kernel has already handled `O_CREAT`,
/// `O_EXCL` and `O_NOCTTY` itself; what is left tells a read-only filesystem
/// whether the caller wants to write.
public struct OpenFlags: Sendable, Hashable {
    public var rawValue: Int32

    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// True when the open asks for write access: `O_WRONLY` or `O_RDWR`, or a
    /// flag that would modify the file (`O_TRUNC`, `O_APPEND`, `O_CREAT`).
    public var isWriteRequested: Bool {
        if rawValue & O_ACCMODE != O_RDONLY {
            return true
        }
        return rawValue & (O_TRUNC | O_APPEND | O_CREAT) != 0
    }
}
