import CFuse3
import CFusePassthrough
import Dispatch
import Glibc
import Logging
import Synchronization

/// Owns one libfuse low-level session: create, mount, run the multithreaded
/// loop, tear down in the right order.
///
/// Typical use: `init` → `mount(at:)` → `installSignalHandlers()` (daemons)
/// → `run()` on a dedicated thread. `run()` returns when the filesystem is
/// unmounted (`fusermount3 -u`, `umount`), on SIGINT/SIGTERM/SIGHUP (with the
/// handlers installed) or after `exit()`, and tears the session down before
/// returning. A session is single-use.
///
/// Teardown order, and why: (1) answer every still-pending `DeferredRequest`
/// with EINTR, since a process blocked in open(2) would keep a lazily
/// unmounted filesystem alive; (2) close the reply gate and wait for replies
/// in flight, so later replies become no-ops instead of use-after-free;
/// (3) `fuse_session_unmount`; (4) `fuse_remove_signal_handlers`;
/// (5) `fuse_session_destroy` (calls the filesystem's `destroy`); (6) release
/// the userdata.
public final class FUSESession: @unchecked Sendable {
    private enum Phase {
        case created, mounted, running, tornDown
    }

    private struct State {
        var phase = Phase.created
        var mountpoint: String?
        var signalHandlersInstalled = false
        /// Set once the exit watcher has poked the loop, so it pokes only once.
        var exitWakeSent = false
    }

    /// libfuse's session; valid until `state.phase` becomes `.tornDown`
    /// (set under the lock before anything is destroyed).
    let session: OpaquePointer
    let context: SessionContext
    /// The retained userdata passed to libfuse; released after fuse_session_destroy.
    let userdata: Unmanaged<SessionContext>
    private let logger: Logger
    private let state = Mutex(State())

    /// Creates the session (`fuse_session_new`); nothing is mounted yet.
    public init(fileSystem: some FUSEFileSystem, options: MountOptions, logger: Logger) throws(FUSEError) {
        LibfuseLog.install(logger: logger)
        let context = SessionContext(fileSystem: fileSystem, maxRead: options.effectiveMaxRead, logger: logger)
        let userdata = Unmanaged.passRetained(context)
        var operations = LowLevelOperations.make()
        let (created, errors) = LibfuseLog.capturingErrors {
            Self.makeSession(arguments: options.arguments, operations: &operations, userdata: userdata.toOpaque())
        }
        guard let session = created else {
            userdata.release()
            throw FUSEError(
                operation: .createSession,
                message: "libfuse rejected the options '\(options.arguments.dropFirst().joined(separator: " "))': \(errors ?? "no reason given")"
            )
        }
        self.session = session
        self.context = context
        self.userdata = userdata
        self.logger = logger
    }

    deinit {
        teardown()
    }

    /// Mounts the filesystem at `mountpoint` (`fuse_session_mount`) after
    /// checking the path, so a missing, busy or stale mountpoint gets a
    /// precise message instead of libfuse's generic one.
    public func mount(at mountpoint: String) throws(FUSEError) {
        try Self.checkMountpoint(mountpoint)
        try state.withLock { state throws(FUSEError) in
            guard state.phase == .created else {
                throw FUSEError(operation: .mount, mountpoint: mountpoint, message: "this session was already mounted or torn down; create a new FUSESession")
            }
            let (status, errors) = LibfuseLog.capturingErrors { fuse_session_mount(session, mountpoint) }
            guard status == 0 else {
                let reason = errors.map { "\($0); " } ?? ""
                throw FUSEError(
                    operation: .mount,
                    mountpoint: mountpoint,
                    message: "libfuse could not mount: \(reason)check that /dev/fuse is accessible and, when not root, that fusermount3 is installed setuid (its messages go to stderr)"
                )
            }
            // Route /dev/fuse I/O through the passthrough hooks (plain syscalls that
            // patch INIT and passthrough OPEN replies); same descriptor, same mount.
            guard cfusept_install(session) == 0 else {
                fuse_session_unmount(session)
                throw FUSEError(operation: .mount, mountpoint: mountpoint, message: "libfuse refused the /dev/fuse I/O hooks (fuse_session_custom_io)")
            }
            context.passthrough.attach(device: fuse_session_fd(session))
            context.ioUring.attach(session: session, userdata: userdata.toOpaque())
            state.phase = .mounted
            state.mountpoint = mountpoint
        }
        logger.info("FUSE filesystem mounted", metadata: ["fuse.mountpoint": "\(mountpoint)"])
    }

    /// Makes SIGINT, SIGTERM and SIGHUP end `run()` (`fuse_set_signal_handlers`).
    ///
    /// libfuse only replaces handlers that are SIG_DFL, and a daemon started
    /// from a script can inherit SIGINT ignored, so all three are reset to
    /// SIG_DFL first. libfuse supports this for one session per process.
    public func installSignalHandlers() throws(FUSEError) {
        for signalNumber in [SIGINT, SIGTERM, SIGHUP] {
            _ = signal(signalNumber, SIG_DFL)
        }
        try state.withLock { state throws(FUSEError) in
            guard state.phase != .tornDown else {
                throw FUSEError(operation: .installSignalHandlers, mountpoint: state.mountpoint, message: "the session was already torn down")
            }
            guard fuse_set_signal_handlers(session) == 0 else {
                throw FUSEError(operation: .installSignalHandlers, mountpoint: state.mountpoint, errno: .current, message: "sigaction failed")
            }
            state.signalHandlersInstalled = true
        }
    }

    /// Serves requests on up to `maxThreads` libfuse worker threads
    /// (libfuse's default, 10, when nil) until the filesystem is unmounted,
    /// a handled signal arrives or `exit()` is called; then tears down.
    ///
    /// `maxIdleThreads` must be set for idle workers to be reaped at all.
    /// `cloneFD` gives each worker its own /dev/fuse descriptor.
    public func run(maxIdleThreads: Int = 10, cloneFD: Bool = true, maxThreads: Int? = nil) throws(FUSEError) {
        let mountpoint = try state.withLock { state throws(FUSEError) -> String? in
            guard state.phase == .mounted else {
                throw FUSEError(operation: .run, mountpoint: state.mountpoint, message: "the session is not mounted (or is already running or torn down)")
            }
            state.phase = .running
            return state.mountpoint
        }
        let configuration = fuse_loop_cfg_create()
        fuse_loop_cfg_set_clone_fd(configuration, cloneFD ? 1 : 0)
        fuse_loop_cfg_set_idle_threads(configuration, UInt32(clamping: maxIdleThreads))
        if let maxThreads {
            fuse_loop_cfg_set_max_threads(configuration, UInt32(clamping: maxThreads))
        }
        logger.debug("FUSE session loop starting", metadata: ["fuse.mountpoint": "\(mountpoint ?? "")"])
        let watcher = startExitWatcher(mountpoint: mountpoint)
        let result = cfuse3_session_loop_mt(session, configuration)
        watcher.cancel()
        fuse_loop_cfg_destroy(configuration)
        teardown()
        if result < 0 {
            throw FUSEError(
                operation: .run,
                mountpoint: mountpoint,
                errno: Errno(-result),
                message: "the session loop stopped with an error; the filesystem has been unmounted"
            )
        }
        if result > 0 {
            logger.info("FUSE session stopped by signal", metadata: ["signal": "\(result)"])
        }
    }

    /// Asks `run()` to return (`fuse_session_exit`). Thread-safe, callable
    /// before, during or after `run()`; never from inside a filesystem callback
    /// if you then wait for `run()` in that callback.
    ///
    /// libfuse only sets a flag: idle workers stay blocked reading /dev/fuse
    /// until a request arrives. So `exit()` also issues one statvfs(3) (statfs(2)) on the
    /// mountpoint from a background thread — statfs is never cached by the
    /// kernel, so it always reaches a worker, which then sees the flag.
    /// (Signals and unmounting wake the loop by themselves.)
    public func exit() {
        let mountpoint = state.withLock { state -> String? in
            guard state.phase != .tornDown else { return nil }
            fuse_session_exit(session)
            return state.phase == .running ? state.mountpoint : nil
        }
        if let mountpoint {
            Self.wakeLoop(mountpoint: mountpoint)
            context.ioUring.wakeLoop()
        }
    }

    /// Unmounts and destroys the session in the order described on the type.
    /// Idempotent; also called by `deinit`. If `run()` is active on another
    /// thread, this asks it to exit and waits (up to 10 s) for its teardown.
    public func unmountAndDestroy() {
        let isRunning = state.withLock { $0.phase == .running }
        guard isRunning else {
            teardown()
            return
        }
        exit()
        let deadline = monotonicSeconds() + 10
        while state.withLock({ $0.phase != .tornDown }) {
            guard monotonicSeconds() < deadline else {
                logger.error("FUSE session loop did not stop within 10 s; not destroying it")
                return
            }
            usleep(5_000)
        }
    }

    /// True once the session has been torn down.
    public var isTornDown: Bool {
        state.withLock { $0.phase == .tornDown }
    }

    /// The mount's FUSE passthrough: read path and backing files.
    public var passthrough: Passthrough { context.passthrough }

    /// The number of detached requests not yet answered (for diagnostics and tests).
    public var pendingDeferredRequestCount: Int {
        context.registry.pendingCount
    }

    /// libfuse's signal handler only sets the exit flag; the loop notices at
    /// once only if the signal interrupts the loop's own thread. When `run()`
    /// is on a thread that blocks signals (any Dispatch or Swift concurrency
    /// thread) the signal lands elsewhere and the loop would sleep until the
    /// next request. This timer notices the flag and wakes the loop instead.
    private func startExitWatcher(mountpoint: String?) -> DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        timer.schedule(deadline: .now() + .milliseconds(250), repeating: .milliseconds(250), leeway: .milliseconds(100))
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            // The ring's queue threads cannot log; say once here when it is up (or failed).
            self.context.ioUring.logOutcome()
            // The state lock keeps teardown from destroying the session while it is checked.
            let shouldWake = self.state.withLock { state in
                guard state.phase == .running, !state.exitWakeSent, fuse_session_exited(self.session) != 0 else {
                    return false
                }
                state.exitWakeSent = true
                return true
            }
            if shouldWake, let mountpoint {
                Self.wakeLoop(mountpoint: mountpoint)
                self.context.ioUring.wakeLoop()
            }
        }
        timer.resume()
        return timer
    }

    /// Sets libfuse's exit flag without waking the loop, as a signal handler
    /// on another thread would; lets tests prove the exit watcher works.
    func exitLikeASignalHandler() {
        state.withLock { state in
            if state.phase != .tornDown {
                fuse_session_exit(session)
            }
        }
    }

    private func teardown() {
        let previous = state.withLock { state -> State? in
            guard state.phase != .tornDown else { return nil }
            let previous = state
            state.phase = .tornDown
            return previous
        }
        guard let previous else { return }
        let pending = context.registry.closeAndTakeAll()
        for (id, request) in pending {
            InterruptTable.remove(id)
            context.send(request.pointer, operation: "teardown") { Reply.error($0, .interrupted) }
        }
        if !pending.isEmpty {
            logger.notice("Answered pending FUSE requests with EINTR at teardown", metadata: ["fuse.pending": "\(pending.count)"])
        }
        guard context.gate.close(timeout: 5) else {
            // Destroying now could free a request a reply is still writing; leaking is the lesser evil.
            logger.error("A FUSE reply was still running after 5 s; leaking the session instead of destroying it")
            return
        }
        if previous.phase == .mounted || previous.phase == .running {
            fuse_session_unmount(session)
        }
        // After unmount, before the device closes: closing the rings cancels their entries.
        context.ioUring.stop()
        if previous.signalHandlersInstalled {
            fuse_remove_signal_handlers(session)
        }
        context.passthrough.detach()
        fuse_session_destroy(session)
        userdata.release()
        logger.info("FUSE session torn down", metadata: ["fuse.mountpoint": "\(previous.mountpoint ?? "")"])
    }
}

// MARK: Kernel cache invalidation

extension FUSESession {
    /// Tells the kernel to forget the directory entry `name` in `parent`
    /// (`fuse_lowlevel_notify_inval_entry`): the next lookup of that name asks the
    /// filesystem again. For a name whose inode changed or that was removed.
    ///
    /// Call it from a thread that is not answering a request of this session: the kernel
    /// takes the parent directory's lock. Returns the negated errno (0 on success;
    /// `-ENOENT` when the kernel has no such entry cached, which is fine; `-ENOTCONN`
    /// once the session is gone).
    @discardableResult
    public func invalidateEntry(parent: InodeNumber, name: String) -> Int32 {
        guard context.gate.enter() else { return -ENOTCONN }
        defer { context.gate.leave() }
        return name.withCString { fuse_lowlevel_notify_inval_entry(session, parent.rawValue, $0, strlen($0)) }
    }

    /// Tells the kernel to drop its cached attributes, page cache and directory listing
    /// of `inode` (`fuse_lowlevel_notify_inval_inode` over the whole file). Same thread
    /// rule and result as ``invalidateEntry(parent:name:)``.
    @discardableResult
    public func invalidateInode(_ inode: InodeNumber) -> Int32 {
        guard context.gate.enter() else { return -ENOTCONN }
        defer { context.gate.leave() }
        return fuse_lowlevel_notify_inval_inode(session, inode.rawValue, 0, 0)
    }
}
