import Foundation
import TestSupport

/// The outcome of running a command-line tool.
struct ToolResult {
    var status: Int32
    var stdout: String
    var stdoutData: Data
    var stderr: String
    var timedOut: Bool
    var succeeded: Bool { !timedOut && status == 0 }
}

/// A running tool, so a test can signal it and wait with a deadline. Spawned and
/// reaped by PID (`ChildProcess`): FUSE worker threads can swallow SIGCHLD, which
/// Foundation's `Process` depends on.
final class RunningTool: @unchecked Sendable {
    private let child: ChildProcess
    private let outputPath = NSTemporaryDirectory() + "/fusekit-out-\(UUID().uuidString)"
    private let errorPath = NSTemporaryDirectory() + "/fusekit-err-\(UUID().uuidString)"

    init(_ executable: String, _ arguments: [String]) throws {
        child = try ChildProcess(executable, arguments, stdout: outputPath, stderr: errorPath)
    }

    deinit {
        unlink(outputPath)
        unlink(errorPath)
    }

    func signal(_ number: Int32) {
        child.signal(number)
    }

    /// Waits up to `timeout` seconds; on timeout kills the tool (SIGKILL) and waits a little more.
    /// Async (polled `waitpid`): the test's own mount may need the cooperative pool for
    /// its deferred replies, so waiting must never block a pool thread.
    func wait(timeout: Double) async -> ToolResult {
        var timedOut = false
        if !(await child.wait(timeout: .milliseconds(Int(timeout * 1000)))) {
            timedOut = true
            await child.terminate()
        }
        guard let status = child.terminationStatus else {
            return ToolResult(status: -1, stdout: "", stdoutData: Data(), stderr: "still running after SIGKILL", timedOut: true)
        }
        let outData = FileManager.default.contents(atPath: outputPath) ?? Data()
        let err = String(decoding: FileManager.default.contents(atPath: errorPath) ?? Data(), as: UTF8.self)
        return ToolResult(status: status, stdout: String(decoding: outData, as: UTF8.self), stdoutData: outData, stderr: err, timedOut: timedOut)
    }
}

/// Runs a tool to completion, never longer than `timeout` seconds.
func runTool(_ executable: String, _ arguments: [String], timeout: Double = 10) async -> ToolResult {
    do {
        return try await RunningTool(executable, arguments).wait(timeout: timeout)
    } catch {
        return ToolResult(status: -1, stdout: "", stdoutData: Data(), stderr: "could not launch \(executable): \(error)", timedOut: false)
    }
}
