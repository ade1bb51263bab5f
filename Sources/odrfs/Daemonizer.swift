import ArgumentParser
import CEarlyFork
import Foundation
import ODRFSMount
import ODRFSStore

/// Starts the mount daemon in the background and waits until it reports readiness.
///
/// A Swift process must not `fork()` once threads exist (the runtime, Dispatch and
/// libfuse all start them). So `odrfs mount` forks before `main`, in a C constructor
/// (`CEarlyFork`), while it has one thread: the child goes on as the daemon
/// (``becomeDaemon(_:reportingTo:)``), the parent only waits for its word
/// (``awaitEarlyDaemon(_:pid:)``). Where that fork did not happen (ODRFS_NO_EARLY_FORK, or
/// a library had started a thread), the daemon is a fresh copy of this executable started
/// with `posix_spawn`, running `mount --foreground` (``startDaemon(configuration:logLevel:)``).
/// Either way the daemon reports "ready" or "error: …" on a pipe; the waiting process exits 0
/// or prints the error and exits 1. If the daemon dies without a word, its log is pointed to.
///
/// The daemon starts in this process's process group and leaves it for a session of its
/// own (`setsid`, detaching it from the terminal) only once the mount is ready: under
/// autofs, this process group is the automounter's, and the kernel makes every other
/// process that touches `/odr/NAME` wait until the automounter's mount is done, which
/// waits for this daemon. (FUSE filesystems that autofs mounts, cvmfs2 and sshfs, mount
/// first and daemonize after for the same reason.)
enum Daemonizer {
    static func startDaemon(configuration: MountConfiguration, logLevel: String) throws {
        let logFile = try prepareLog(configuration)

        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw failure("cannot create a pipe: \(String(cString: strerror(errno)))") }
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        defer { close(readEnd) }

        // The whole configuration goes to the daemon as JSON on a pipe it inherits: one
        // place, nothing re-listed flag by flag (and no token path or size on argv twice).
        let configurationEnd = try writeConfiguration(configuration)
        let arguments = ["odrfs", "mount", configuration.origin, configuration.mountpoint, "--foreground",
                         "--ready-fd", String(writeEnd), "--configuration-fd", String(configurationEnd),
                         "--log-level", logLevel]
        let pid: pid_t
        do {
            pid = try spawn(arguments: arguments, logFile: logFile)
        } catch {
            close(writeEnd)
            close(configurationEnd)
            throw error
        }
        close(writeEnd)
        close(configurationEnd)

        if let code = awaitReadiness(readEnd, pid: pid, logFile: logFile) { throw ExitCode(code) }
    }

    /// The daemon's log file, its directory made (private) if need be.
    private static func prepareLog(_ configuration: MountConfiguration) throws -> String {
        let layout = configuration.storage.layout
        try FileManager.default.createDirectory(atPath: layout.bundleRoot, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        return layout.logFile
    }

    /// Waits on `descriptor` for the word of the daemon `pid`: nil once the mount is ready,
    /// else the status to exit with, the reason printed. "error: …" is printed and exits 1. A
    /// daemon that exits without a word before it named its log (`logFile` nil: the early
    /// fork's daemon, with bad arguments) has said why on the caller's terminal itself: its
    /// status is passed on. One that dies later is pointed to its log.
    private static func awaitReadiness(_ descriptor: Int32, pid: pid_t, logFile known: String?) -> Int32? {
        var logFile = known
        let reply = readReply(descriptor) { line in
            if line.hasPrefix("log ") { logFile = String(line.dropFirst(4)) }
        }
        if reply.hasPrefix("ready") { return nil }
        var status: Int32 = 0
        var reaped = waitpid(pid, &status, 0)
        while reaped < 0 && errno == EINTR { reaped = waitpid(pid, &status, 0) }
        if reply.hasPrefix("error: ") {
            _ = failure(reply.dropFirst("error: ".count).trimmingCharacters(in: .whitespacesAndNewlines))
            return 1
        }
        let exited = reaped == pid && status & 0x7f == 0
        let code = (status >> 8) & 0xff
        if exited && logFile == nil { return code }
        let how = reaped != pid ? "" : exited ? " (status \(code))" : " (signal \(status & 0x7f))"
        _ = failure("the mount daemon exited before the mount was ready\(how); see \(logFile ?? "its log")")
        return exited && code != 0 ? code : 1
    }

    /// In the parent of the early fork: the pipe to wait on and the daemon's pid.
    static var earlyDaemon: (descriptor: Int32, pid: pid_t)? {
        let descriptor = odrfs_early_fork_waiter_descriptor()
        return descriptor >= 0 ? (descriptor, odrfs_early_fork_daemon_pid()) : nil
    }

    /// In the daemon the early fork made: the pipe to report readiness on.
    static var earlyReadyDescriptor: Int32? {
        let descriptor = odrfs_early_fork_ready_descriptor()
        return descriptor >= 0 ? descriptor : nil
    }

    /// The parent of the early fork: waits for the daemon's word and exits with
    /// ``awaitReadiness(_:pid:logFile:)``'s status (0 once the mount is ready).
    static func awaitEarlyDaemon(_ descriptor: Int32, pid: pid_t) -> Never {
        exit(awaitReadiness(descriptor, pid: pid, logFile: nil) ?? 0)
    }

    /// The daemon of the early fork, once its configuration is known: tells the parent where
    /// it logs, then leaves the terminal (stdin from /dev/null, stdout and stderr to the log),
    /// as a spawned daemon starts. Returns the descriptor to report readiness on.
    static func becomeDaemon(_ configuration: MountConfiguration, reportingTo descriptor: Int32) throws -> Int32 {
        let logFile = try prepareLog(configuration)
        // Descriptors 0-2 are open here (the constructor filled any the caller had closed), so
        // these land above them and the dup2s below never close one they still need.
        let log = open(logFile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard log > 2 else { throw failure("cannot open the log \(logFile): \(String(cString: strerror(errno)))") }
        defer { close(log) }
        let input = open("/dev/null", O_RDONLY | O_CLOEXEC)
        guard input > 2 else { throw failure("cannot open /dev/null: \(String(cString: strerror(errno)))") }
        defer { close(input) }
        let line = "log \(logFile)\n"
        _ = line.withCString { write(descriptor, $0, strlen($0)) }
        guard dup2(input, 0) == 0, dup2(log, 1) == 1, dup2(log, 2) == 2 else {
            throw failure("cannot point the daemon's output at \(logFile): \(String(cString: strerror(errno)))")
        }
        return descriptor
    }

    /// A pipe holding `configuration` as JSON, write end closed; returns the read end
    /// (inheritable) for the daemon. Configurations are small: the pipe buffer holds it.
    private static func writeConfiguration(_ configuration: MountConfiguration) throws -> Int32 {
        let json = try JSONEncoder().encode(configuration.resolved)
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw failure("cannot create a pipe: \(String(cString: strerror(errno)))") }
        defer { close(ends[1]) }
        guard json.count < 60_000 else {
            close(ends[0])
            throw failure("the mount configuration is too large (\(json.count) bytes)")
        }
        let written = json.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) }
        guard written == json.count else {
            close(ends[0])
            throw failure("cannot pass the configuration to the daemon: \(String(cString: strerror(errno)))")
        }
        return ends[0]
    }

    /// The configuration a parent `odrfs mount` passed on `descriptor` (closed after reading).
    static func readConfiguration(from descriptor: Int32) throws -> MountConfiguration {
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            data.append(contentsOf: buffer[0..<count])
            if data.count > 1 << 20 { break }
        }
        return try JSONDecoder().decode(MountConfiguration.self, from: data)
    }

    /// Reads the daemon's lines until "ready" or "error: …" (or EOF), drawing
    /// "progress DONE TOTAL" lines as a progress bar when stderr is a terminal; "log PATH"
    /// lines go to `note`.
    private static func readReply(_ descriptor: Int32, note: (String) -> Void) -> String {
        let bar = ProgressDisplay(output: .standardError, linesWhenNotTerminal: false)
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            pending += buffer[0..<count]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                let fields = line.split(separator: " ")
                if fields.first == "progress", fields.count == 3, let done = Int64(fields[1]), let total = Int64(fields[2]) {
                    bar.update(completed: done, total: total)
                    continue
                }
                if fields.first == "log" {
                    note(line)
                    continue
                }
                bar.finish()
                return line
            }
        }
        bar.finish()
        return String(decoding: pending, as: UTF8.self)
    }

    private static func spawn(arguments: [String], logFile: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logFile, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Default signal dispositions undo any SIG_IGN inherited from a script (libfuse
        // only installs its handlers over SIG_DFL). No new session yet: see above.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, &argv, environ)
        guard result == 0 else {
            throw failure("cannot start the mount daemon \(executable): \(String(cString: strerror(result)))")
        }
        return pid
    }

    private static func failure(_ message: String) -> Error {
        FileHandle.standardError.write(Data("odrfs mount: \(message)\n".utf8))
        return ExitCode.failure
    }
}
