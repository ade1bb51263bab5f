/// A failure to set up, mount or run a FUSE session. The message names the
/// operation, the mountpoint and, where there is one, what to do about it.
public struct FUSEError: Error, CustomStringConvertible, Sendable {
    /// Which step failed.
    public enum Operation: String, Sendable {
        case createSession = "fuse_session_new"
        case mount = "fuse_session_mount"
        case installSignalHandlers = "fuse_set_signal_handlers"
        case run = "fuse_session_loop_mt"
    }

    public var operation: Operation
    /// The mountpoint involved, when there is one.
    public var mountpoint: String?
    /// The underlying error number, when one is known.
    public var errno: Errno?
    /// What went wrong and what to do, in words.
    public var message: String

    public init(operation: Operation, mountpoint: String? = nil, errno: Errno? = nil, message: String) {
        self.operation = operation
        self.mountpoint = mountpoint
        self.errno = errno
        self.message = message
    }

    public var description: String {
        var text = "\(operation.rawValue) failed"
        if let mountpoint {
            text += " for \(mountpoint)"
        }
        text += ": \(message)"
        if let errno {
            text += " [\(errno)]"
        }
        return text
    }
}
