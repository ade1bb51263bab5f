/// Which read path a mount's files take, and if not passthrough, why not.
public enum PassthroughStatus: Sendable, Equatable, CustomStringConvertible {
    /// The filesystem did not ask for passthrough (``ConnectionConfiguration/passthrough``),
    /// or the connection is not initialised yet.
    case notRequested
    /// The kernel did not offer `FUSE_PASSTHROUGH` (older than 6.9, or built without it).
    case notOffered
    /// Negotiated; open replies may pass files through.
    case available
    /// Registering a backing file failed with this errno; `EPERM` means the daemon
    /// lacks CAP_SYS_ADMIN (an unprivileged mount). Later opens use the FUSE read path.
    case refused(Errno)

    /// True when open replies may carry a backing file.
    public var isAvailable: Bool { self == .available }

    /// The read path in words, for logs and `odrfs status`.
    public var description: String {
        switch self {
        case .notRequested: "fuse (passthrough not requested)"
        case .notOffered: "fuse (the kernel does not offer passthrough)"
        case .available: "passthrough"
        case .refused(let errno) where errno == .notPermitted: "fuse (passthrough needs CAP_SYS_ADMIN)"
        case .refused(let errno): "fuse (the kernel refused a backing file: \(errno))"
        }
    }
}
