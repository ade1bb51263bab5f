import Foundation
import TestSupport
import Testing

/// The result of a finished child process.
struct CommandResult: Sendable {
    var status: Int32
    var stdout: Data
    var stderr: String
    var output: String { String(decoding: stdout, as: UTF8.self) }
}

/// Runs programs with a hard time limit: a test never hangs on a child. Output goes
/// through temporary files, not pipes, so a chatty child cannot block on a full pipe.
/// Waiting is async (polled `waitpid`), so tests can run in parallel without starving
/// Swift's cooperative pool.
enum Command {
    static func run(_ executable: String, _ arguments: [String], timeout: Duration = .seconds(60)) async throws -> CommandResult {
        let files = OutputFiles()
        defer { files.remove() }
        let child = try ChildProcess(executable, arguments, stdout: files.out, stderr: files.err)
        if !(await child.wait(timeout: timeout)) {
            await child.terminate()
            Issue.record("\(executable) \(arguments.joined(separator: " ")) timed out after \(timeout) and was killed")
            return CommandResult(status: -1, stdout: Data(), stderr: "timed out")
        }
        return files.result(status: child.terminationStatus ?? -1)
    }

    /// The blocking form of `run`, only for `deinit`s, which cannot `await`: it sleeps
    /// the calling thread while the child runs, so nothing else may use it.
    static func runBlocking(_ executable: String, _ arguments: [String], timeout: Duration) throws -> CommandResult {
        let files = OutputFiles()
        defer { files.remove() }
        let child = try ChildProcess(executable, arguments, stdout: files.out, stderr: files.err)
        let deadline = ContinuousClock.now + timeout
        while child.isRunning {
            if ContinuousClock.now >= deadline {
                child.stop()
                return CommandResult(status: -1, stdout: Data(), stderr: "timed out")
            }
            usleep(2_000)
        }
        return files.result(status: child.terminationStatus ?? -1)
    }

    /// Starts a program without waiting; the caller must `stop()` it.
    static func start(_ executable: String, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(executable, arguments)
    }

    private struct OutputFiles {
        let out = NSTemporaryDirectory() + "/odrfs-out-\(UUID().uuidString)"
        let err = NSTemporaryDirectory() + "/odrfs-err-\(UUID().uuidString)"

        func result(status: Int32) -> CommandResult {
            let stdout = FileManager.default.contents(atPath: out) ?? Data()
            let stderr = String(decoding: FileManager.default.contents(atPath: err) ?? Data(), as: UTF8.self)
            return CommandResult(status: status, stdout: stdout, stderr: stderr)
        }

        func remove() {
            unlink(out)
            unlink(err)
        }
    }
}

/// Polls `condition` every 10 ms (sleeping the task, not the thread) for at most
/// `timeout`; false if it never held.
@discardableResult
func eventually(timeout: Duration = .seconds(10), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// Sleeps the task (never the thread) for `duration`.
func pause(_ duration: Duration) async {
    try? await Task.sleep(for: duration)
}
