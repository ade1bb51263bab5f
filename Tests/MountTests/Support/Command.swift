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
enum Command {
    static func run(_ executable: String, _ arguments: [String], timeout: Duration = .seconds(60)) throws -> CommandResult {
        let outPath = NSTemporaryDirectory() + "/odrfs-out-\(UUID().uuidString)"
        let errPath = NSTemporaryDirectory() + "/odrfs-err-\(UUID().uuidString)"
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        let child = try ChildProcess(executable, arguments, stdout: outPath, stderr: errPath)
        if !child.wait(timeout: timeout) {
            child.stop()
            Issue.record("\(executable) \(arguments.joined(separator: " ")) timed out after \(timeout) and was killed")
            return CommandResult(status: -1, stdout: Data(), stderr: "timed out")
        }
        let stdout = FileManager.default.contents(atPath: outPath) ?? Data()
        let stderr = String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self)
        return CommandResult(status: child.terminationStatus ?? -1, stdout: stdout, stderr: stderr)
    }

    /// Starts a program without waiting; the caller must `stop()` it.
    static func start(_ executable: String, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(executable, arguments)
    }
}

/// Polls `condition` every few milliseconds for at most `timeout`; false if it never held.
@discardableResult
func eventually(timeout: Duration = .seconds(10), _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        usleep(10_000)
    }
    return try condition()
}
