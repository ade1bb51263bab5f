import Foundation
import Synchronization

/// A child started with `posix_spawn` and reaped with `waitpid` by its PID.
///
/// Foundation's `Process` learns of exits through SIGCHLD, which another thread of
/// the test runner can swallow (FUSE worker threads, threads that unblock signals),
/// leaving a zombie that `isRunning` never notices. Polling `waitpid` cannot miss.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    /// The exit status once reaped; locked because the background reaper polls too.
    private let state = Mutex<Int32?>(nil)

    public init(_ executable: String, _ arguments: [String], stdout: String? = nil, stderr: String? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // Nothing else is inherited. With tests running in parallel, any descriptor another
        // test holds without O_CLOEXEC (a pipe end, a socket, a FUSE device) would otherwise
        // leak into this child — a mount daemon would keep it open for its whole life, so a
        // peer would never see EOF and the daemon's descriptor count would depend on what
        // else ran at the moment it was spawned.
        if let closeFrom = Self.addCloseFrom {
            _ = closeFrom(&actions, 3)
        }
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

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+), which the Glibc module
    /// does not import; looked up once. Nil on an older libc: then descriptors leak as before.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Whether the child is still running (reaping it if it has exited). Never blocks.
    public var isRunning: Bool {
        state.withLock { exitStatus in
            if exitStatus != nil { return false }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid {
                exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
                return false
            }
            // ECHILD: someone else reaped it; it is gone, its status unknown.
            if result == -1 && errno == ECHILD {
                exitStatus = -1
                return false
            }
            return true
        }
    }

    /// The exit status (128 + signal for a signalled child); nil while running.
    public var terminationStatus: Int32? {
        _ = isRunning
        return state.withLock { $0 }
    }

    /// Waits at most `timeout`, polling `waitpid(WNOHANG)` with `Task.sleep` so no
    /// thread of the cooperative pool is ever blocked; false if the child is still
    /// running then (or the waiting task was cancelled).
    public func wait(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while isRunning {
            if ContinuousClock.now >= deadline { return false }
            do {
                try await Task.sleep(for: .milliseconds(2))
            } catch {
                return !isRunning
            }
        }
        return true
    }

    /// SIGKILL and wait (bounded) for the exit: a child stuck in an uninterruptible FUSE
    /// wait is left to the lazy unmount in teardown rather than hanging the test.
    /// Returns whether it exited.
    @discardableResult
    public func terminate(timeout: Duration = .seconds(10)) async -> Bool {
        guard isRunning else { return true }
        kill(pid, SIGKILL)
        return await wait(timeout: timeout)
    }

    /// SIGKILL now and reap in the background, without waiting: for `defer` blocks and
    /// `deinit`s, which cannot `await`. The reaper is one dedicated thread, so this never
    /// blocks the caller (nor a thread of the cooperative pool).
    public func stop() {
        guard isRunning else { return }
        kill(pid, SIGKILL)
        ChildReaper.shared.reap(self, graceUntilKill: nil)
    }

    /// SIGTERM now; the background reaper sends SIGKILL if the child is still running
    /// after `grace`, and reaps it. Never waits: for `deinit`s of servers.
    public func stop(gracefully grace: Duration) {
        guard isRunning else { return }
        kill(pid, SIGTERM)
        ChildReaper.shared.reap(self, graceUntilKill: grace)
    }

    public func signal(_ number: Int32) {
        kill(pid, number)
    }
}
