import CFusePassthrough
import Glibc
import Logging
import Synchronization

/// A mount's FUSE passthrough: the kernel serves reads and mmap of an open file
/// straight from a backing file on a local filesystem, with that filesystem's page
/// cache, and the daemon sees only open and release.
///
/// Ask for it with ``ConnectionConfiguration/passthrough``; then, per open,
/// ``beginOpen(inode:handle:backingPath:)`` decides the open's mode and
/// ``endOpen(handle:)`` undoes it at release. Reach it from any request
/// (``FUSERequest/passthrough``) or from the session.
///
/// The kernel puts each inode in one I/O mode at a time: while a file is open through
/// the page cache it refuses passthrough opens of it, while it is open passthrough it
/// refuses cached opens (both as EIO to the caller) and all passthrough opens must
/// name the same backing file. So this type counts the opens per inode in each mode,
/// registers one backing id per inode while it has passthrough opens, and
/// unregisters it after the last release.
public final class Passthrough: Sendable {
    private struct InodeOpens {
        var cached = 0
        var passthrough = 0
        var backing: BackingID?
    }

    private struct State {
        var status = PassthroughStatus.notRequested
        /// The session's /dev/fuse descriptor; -1 before mount and after teardown.
        var device: Int32 = -1
        var inodes: [InodeNumber: InodeOpens] = [:]
        /// Open handles counted by beginOpen: their inode and whether they pass through.
        var handles: [FileHandleID: (inode: InodeNumber, passthrough: Bool)] = [:]
    }

    private let state = Mutex(State())
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// Which read path opens take.
    public var status: PassthroughStatus { state.withLock { $0.status } }

    /// The read path and, when passing through, how many files are open that way now:
    /// `passthrough (2 files passed through now)`; for logs and status.
    public var summary: String {
        state.withLock { state in
            guard state.status.isAvailable else { return state.status.description }
            let count = state.inodes.values.count { $0.backing != nil }
            return "\(state.status) (\(count) file\(count == 1 ? "" : "s") passed through now)"
        }
    }

    /// Backing ids registered right now (one per inode open passthrough).
    public var registeredCount: Int { state.withLock { $0.inodes.values.count { $0.backing != nil } } }

    /// Decides how the open of `inode` that will be answered with `handle` passes its
    /// reads, and counts it: a backing id to put in ``OpenReplyOptions/passthrough``, or
    /// nil for the FUSE read path. The file at `backingPath` must hold exactly the file's
    /// bytes from offset 0 and must not change while registered. nil `backingPath` (no
    /// complete local copy) means the FUSE path, and so does anything the kernel refuses.
    /// Pair every call with ``endOpen(handle:)`` at release (or if the open fails).
    public func beginOpen(inode: InodeNumber, handle: FileHandleID, backingPath: String?) -> BackingID? {
        state.withLock { state in
            var opens = state.inodes[inode] ?? InodeOpens()
            let backing: BackingID?
            if let existing = opens.backing {
                // Passthrough opens outstanding: every new open must use the same backing file.
                backing = existing
            } else if let backingPath, opens.cached == 0, state.status.isAvailable {
                backing = register(path: backingPath, state: &state)
                opens.backing = backing
            } else {
                backing = nil
            }
            if backing == nil {
                opens.cached += 1
            } else {
                opens.passthrough += 1
            }
            state.inodes[inode] = opens
            state.handles[handle] = (inode, backing != nil)
            return backing
        }
    }

    /// The release of an open that ``beginOpen(inode:handle:backingPath:)`` counted;
    /// unregisters the inode's backing file after its last passthrough open. Unknown
    /// handles are ignored.
    public func endOpen(handle: FileHandleID) {
        state.withLock { state in
            guard let (inode, passthrough) = state.handles.removeValue(forKey: handle),
                  var opens = state.inodes[inode] else { return }
            if passthrough {
                opens.passthrough = max(opens.passthrough - 1, 0)
            } else {
                opens.cached = max(opens.cached - 1, 0)
            }
            if opens.passthrough == 0, let backing = opens.backing {
                opens.backing = nil
                unregister(backing, device: state.device)
            }
            state.inodes[inode] = opens.cached == 0 && opens.passthrough == 0 ? nil : opens
        }
    }

    /// Called with the state lock held: the kernel pins the file while it is registered,
    /// so the descriptor is closed at once.
    private func register(path: String, state: inout State) -> BackingID? {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            logger.warning("Cannot open a passthrough backing file; using the FUSE read path", metadata: [
                "fuse.backing": "\(path)", "errno": "\(Errno.current)",
            ])
            return nil
        }
        defer { close(descriptor) }
        let result = cfusept_backing_open(state.device, descriptor)
        if let backing = BackingID(rawValue: result) {
            return backing
        }
        let errno = Errno(-result)
        switch errno {
        case .notPermitted, Errno(ENOTTY), Errno(ELOOP):
            // Never going to work for this mount (no CAP_SYS_ADMIN, a kernel that does not
            // know the ioctl, or a cache on a stacked filesystem): stop trying.
            state.status = .refused(errno)
            logger.notice("FUSE passthrough refused; reads use the FUSE path", metadata: [
                "fuse.read_path": "\(state.status)", "errno": "\(errno)",
            ])
        default:
            logger.warning("Registering a passthrough backing file failed; this open uses the FUSE read path", metadata: [
                "fuse.backing": "\(path)", "errno": "\(errno)",
            ])
        }
        return nil
    }

    private func unregister(_ backing: BackingID, device: Int32) {
        guard device >= 0 else { return }
        let result = cfusept_backing_close(device, backing.rawValue)
        if result < 0 {
            logger.warning("Unregistering a passthrough backing file failed", metadata: [
                "fuse.backing_id": "\(backing.rawValue)", "errno": "\(Errno(-result))",
            ])
        }
    }

    // MARK: Session lifecycle (FUSESession, SessionContext)

    /// After mount: the descriptor backing ids are registered on.
    func attach(device: Int32) {
        state.withLock { $0.device = device }
    }

    /// At INIT, from libfuse's `init` callback: whether to accept the kernel's offer
    /// (`offered`), and the resulting status. A daemon without CAP_SYS_ADMIN could
    /// never register a backing file (the kernel checks it), so it does not ask.
    func negotiate(offered: Bool) -> Bool {
        let status: PassthroughStatus = !offered ? .notOffered : Self.hasSystemAdministration() ? .available : .refused(.notPermitted)
        state.withLock { $0.status = status }
        logger.info("FUSE read path", metadata: ["fuse.read_path": "\(status)"])
        return status.isAvailable
    }

    /// Whether this process holds CAP_SYS_ADMIN in the initial user namespace, which the
    /// kernel requires to register a backing file: the capability in its effective set
    /// (`CapEff` in /proc/self/status, bit 21) and no user namespace of its own (root in
    /// a container's namespace has the capability only there). Unknown counts as yes:
    /// registration then says.
    static func hasSystemAdministration() -> Bool {
        if let map = readProcFile("/proc/self/uid_map"),
           map.split(whereSeparator: \.isWhitespace) != ["0", "0", "4294967295"] {
            return false
        }
        guard let text = readProcFile("/proc/self/status"),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
              let mask = UInt64(line.dropFirst("CapEff:".count).filter { !$0.isWhitespace }, radix: 16) else { return true }
        return mask & (1 << 21) != 0
    }

    private static func readProcFile(_ path: String) -> String? {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 16384)
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: bytes[..<count], as: UTF8.self)
    }

    /// Teardown: the device is about to be closed; ids die with the connection.
    func detach() {
        state.withLock { state in
            state.device = -1
            state.inodes = [:]
            state.handles = [:]
        }
    }
}
