import Foundation

/// A child started with `posix_spawn` and reaped with `waitpid` by its PID.
///
/// Foundation's `Process` learns of exits through SIGCHLD, which another thread of
/// the test runner can swallow (FUSE worker threads, threads that unblock signals),
/// leaving a zombie that `isRunning` never notices. Polling `waitpid` cannot miss.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    private var exitStatus: Int32?

    public init(_ executable: String, _ arguments: [String], stdout: String? = nil, stderr: String? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Children start with no blocked signals and default handlers, whatever the
        // test runner's threads do, so SIGINT and SIGTERM reach them.
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let path = executable.hasPrefix("/") ? executable : "/usr/bin/env"
        let argv = (executable.hasPrefix("/") ? [executable] : ["env", executable]) + arguments
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, &cArguments, environ)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        self.pid = pid
    }

    /// Whether the child is still running (reaping it if it has exited).
    public var isRunning: Bool {
        if exitStatus != nil { return false }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid {
            exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            return false
        }
        return true
    }

    /// The exit status (128 + signal for a signalled child); nil while running.
    public var terminationStatus: Int32? {
        _ = isRunning
        return exitStatus
    }

    /// Waits at most `timeout`; false if the child is still running then.
    public func wait(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            if ContinuousClock.now >= deadline { return false }
            usleep(2_000)
        }
        return true
    }

    /// SIGKILL and reap, bounded: a child stuck in an uninterruptible FUSE wait is left
    /// to the lazy unmount in teardown rather than hanging the test.
    public func stop() {
        guard isRunning else { return }
        kill(pid, SIGKILL)
        _ = wait(timeout: .seconds(10))
    }

    public func signal(_ number: Int32) {
        kill(pid, number)
    }
}
