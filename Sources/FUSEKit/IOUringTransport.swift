import CFusePassthrough
import CFuseRing
import Glibc
import Logging
import Synchronization

/// A session's FUSE over io_uring transport (CFuseRing): libfuse still mounts,
/// answers INIT and dispatches every request; under it, per-CPU queues of ring
/// entries replace the reads of /dev/fuse for ordinary requests (FORGET,
/// INTERRUPT and notifications stay on /dev/fuse). See the module docs.
///
/// Lifecycle: ``FUSESession/requestIOUring(queueDepth:)`` before mount switches the
/// kernel on; the mount creates the ring; the INIT callback accepts the kernel's offer (``negotiate(offered:)``);
/// the INIT reply's hook starts one thread per queue; teardown stops them after
/// unmounting and before the device is closed.
final class IOUringTransport: Sendable {
    private struct State {
        /// The C ring's address (kept as an integer: a pointer is not Sendable); nil when
        /// not requested or after teardown.
        var ringAddress: UInt?
        var ring: OpaquePointer? { ringAddress.flatMap { OpaquePointer(bitPattern: $0) } }
        /// Entries per queue, once requested.
        var requestedDepth: UInt32?
        /// Set when the request could not even be made (kernel or module parameter).
        var unavailable: String?
        var offered: Bool?
        var stopped = false
        var loggedActive = false
    }

    private let state = Mutex(State())
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// The transport now.
    var status: IOUringStatus {
        state.withLock { state in
            if let reason = state.unavailable { return .unavailable(reason) }
            guard let ring = state.ring else {
                return state.stopped ? .stopped : state.requestedDepth != nil ? .waitingForInit : .notRequested
            }
            if state.offered == false { return .notOffered }
            switch cfusering_state(ring) {
            case CFUSERING_WAITING_FOR_INIT: return .waitingForInit
            case CFUSERING_STARTING: return .starting
            case CFUSERING_ACTIVE: return .active(queues: Int(cfusering_queue_count(ring)))
            case CFUSERING_FAILED: return .failed(Errno(cfusering_error(ring)))
            default: return .stopped
            }
        }
    }

    /// Requests that came through the ring so far.
    var requestCount: UInt64 {
        state.withLock { state in state.ring.map { cfusering_request_count($0) } ?? 0 }
    }

    /// Whether INIT should look at the kernel's offer at all.
    var isRequested: Bool { state.withLock { $0.ring != nil } }

    /// Before mount: makes sure the kernel will offer io_uring at INIT (it sends INIT
    /// during the mount) and remembers the request; on failure records why.
    func request(queueDepth: Int, kernelParameter: String) {
        if let reason = KernelIOUringSupport.enable(parameterPath: kernelParameter) {
            state.withLock { $0.unavailable = reason }
            logger.notice("FUSE transport: /dev/fuse", metadata: ["fuse.transport": "\(IOUringStatus.unavailable(reason))"])
            return
        }
        state.withLock { $0.requestedDepth = UInt32(clamping: max(queueDepth, 1)) }
    }

    /// Right after mount, hooks installed: creates the ring if it was requested.
    func attach(session: OpaquePointer, userdata: UnsafeMutableRawPointer) {
        guard let depth = state.withLock({ $0.requestedDepth }) else { return }
        guard let ring = cfusering_create(session, userdata, depth) else {
            state.withLock { $0.unavailable = "out of memory for the ring" }
            return
        }
        state.withLock { $0.ringAddress = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(ring))) }
    }

    /// Wakes libfuse's workers blocked on /dev/fuse so they see the exit flag.
    func wakeLoop() {
        state.withLock { state in
            if let ring = state.ring { cfusering_wake_loop(ring) }
        }
    }

    /// At INIT, from libfuse's `init` callback: whether to accept the kernel's offer.
    func negotiate(offered: Bool) -> Bool {
        state.withLock { $0.offered = offered }
        if !offered {
            logger.notice("FUSE transport: /dev/fuse", metadata: ["fuse.transport": "\(IOUringStatus.notOffered)"])
        }
        return offered
    }

    /// Logs the transport once it is known (active or failed); called by status readers and teardown.
    func logOutcome() {
        let status = status
        let shouldLog = state.withLock { state -> Bool in
            guard !state.loggedActive, status.isActive || status.isFailure else { return false }
            state.loggedActive = true
            return true
        }
        if shouldLog {
            logger.info("FUSE transport", metadata: ["fuse.transport": "\(status)"])
        }
    }

    /// Teardown, after unmount and before the device is closed: stops the queue threads.
    func stop() {
        logOutcome()
        let address = state.withLock { state -> UInt? in
            let address = state.ringAddress
            if address != nil { state.stopped = true }
            state.ringAddress = nil
            return address
        }
        guard let address, let ring = OpaquePointer(bitPattern: address) else { return }
        if cfusering_stop(ring, 5000) != 0 {
            logger.error("A FUSE io_uring queue thread did not stop within 5 s; leaking its ring")
            return
        }
        cfusering_destroy(ring)
    }
}

extension IOUringStatus {
    var isFailure: Bool {
        if case .failed = self { return true }
        return false
    }
}
