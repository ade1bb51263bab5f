/// Which transport carries a mount's requests: libfuse's reads of /dev/fuse, or
/// FUSE over io_uring (``FUSESession/requestIOUring(queueDepth:)``), and if not
/// io_uring although asked for, why not.
public enum IOUringStatus: Sendable, Equatable, CustomStringConvertible {
    /// io_uring was not asked for: /dev/fuse.
    case notRequested
    /// Asked for, but the kernel cannot (no `CONFIG_FUSE_IO_URING`) or the module
    /// parameter `fuse.enable_uring` is off and could not be set; the reason in words.
    case unavailable(String)
    /// Asked for; waiting for INIT.
    case waitingForInit
    /// The INIT request did not offer `FUSE_OVER_IO_URING`.
    case notOffered
    /// Negotiated; ring entries are being registered.
    case starting
    /// Every queue has entries registered: the kernel sends requests through the ring.
    case active(queues: Int)
    /// Registering entries failed with this errno; requests stay on /dev/fuse.
    case failed(Errno)
    /// The ring was stopped at teardown.
    case stopped

    /// True while requests go through the ring.
    public var isActive: Bool {
        if case .active = self { return true }
        return false
    }

    /// The transport in words, for logs and `odrfs status`.
    public var description: String {
        switch self {
        case .notRequested: "/dev/fuse"
        case .unavailable(let reason): "/dev/fuse (io_uring unavailable: \(reason))"
        case .waitingForInit: "/dev/fuse (io_uring requested, waiting for INIT)"
        case .notOffered: "/dev/fuse (the kernel did not offer io_uring at INIT)"
        case .starting: "/dev/fuse (io_uring starting)"
        case .active(let queues): "io_uring (\(queues) queue\(queues == 1 ? "" : "s"))"
        case .failed(let errno): "/dev/fuse (io_uring registration failed: \(errno))"
        case .stopped: "io_uring (stopped)"
        }
    }
}
