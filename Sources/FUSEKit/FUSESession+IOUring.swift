import CFuse3

extension FUSESession {
    /// Asks for FUSE over io_uring (Linux 6.14+, `CONFIG_FUSE_IO_URING`) on this
    /// session: call before ``mount(at:)`` (the kernel sends INIT, and decides whether
    /// to offer io_uring, during the mount).
    ///
    /// Sets the fuse module parameter `enable_uring` if it is off (root only), then
    /// negotiates `FUSE_OVER_IO_URING` at INIT and registers `queueDepth` ring entries
    /// on each of the kernel's per-CPU queues, each queue served by a thread of its own.
    /// When anything is missing the mount keeps libfuse's /dev/fuse reads and
    /// ``transport`` (logged once) says why. Spliced replies are turned off on a ring
    /// mount. Returns the status right after the request.
    ///
    /// Every request waiting for a reply holds its entry, deferred ones included (an
    /// open waiting for a download), so the depth bounds the requests a queue has in
    /// flight; further ones wait in the kernel. The kernel reuses the entry committed
    /// last first, so unused entries' payload buffers stay untouched memory.
    @discardableResult
    public func requestIOUring(queueDepth: Int = 64) -> IOUringStatus {
        requestIOUring(queueDepth: queueDepth, kernelParameter: KernelIOUringSupport.parameterPath)
    }

    /// ``requestIOUring(queueDepth:)`` with another module parameter file, for tests.
    @discardableResult
    func requestIOUring(queueDepth: Int, kernelParameter: String) -> IOUringStatus {
        guard fuse_session_fd(session) < 0 else {
            return .unavailable("requested after mount; the kernel had already sent INIT")
        }
        context.ioUring.request(queueDepth: queueDepth, kernelParameter: kernelParameter)
        return context.ioUring.status
    }

    /// How requests reach the filesystem: `/dev/fuse`, or `io_uring (2 queues)`, or
    /// `/dev/fuse (io_uring unavailable: …)`.
    public var transport: IOUringStatus {
        context.ioUring.logOutcome()
        return context.ioUring.status
    }

    /// Requests that came through the io_uring ring so far (0 on /dev/fuse).
    public var ioUringRequestCount: UInt64 { context.ioUring.requestCount }
}
