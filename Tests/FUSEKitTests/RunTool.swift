import Foundation

/// The outcome of running a command-line tool.
struct ToolResult {
    var status: Int32
    var stdout: String
    var stdoutData: Data
    var stderr: String
    var timedOut: Bool
    var succeeded: Bool { !timedOut && status == 0 }
}

/// A running tool, so a test can signal it and wait with a deadline.
final class RunningTool: @unchecked Sendable {
    let process = Process()
    private let done = DispatchSemaphore(value: 0)
    private let output = Pipe()
    private let errors = Pipe()

    init(_ executable: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        process.terminationHandler = { [done] _ in done.signal() }
        // The child inherits this thread's signal mask, and test runner threads
        // block most signals: SIGINT would never reach the tool. Unblock while spawning.
        var all = sigset_t()
        var previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_UNBLOCK, &all, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try process.run()
    }

    func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Waits up to `timeout` seconds; on timeout kills the tool (SIGKILL) and waits a little more.
    func wait(timeout: Double) -> ToolResult {
        var timedOut = false
        if done.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            signal(SIGKILL)
            _ = done.wait(timeout: .now() + 5)
        }
        // A tool stuck in an uninterruptible FUSE wait still holds the pipes: do not read them.
        guard !process.isRunning else {
            return ToolResult(status: -1, stdout: "", stdoutData: Data(), stderr: "still running after SIGKILL", timedOut: true)
        }
        // Outputs are small; reading after exit cannot block on a full pipe for these tests.
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let out = String(decoding: outData, as: UTF8.self)
        let err = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let status = process.terminationStatus
        return ToolResult(status: status, stdout: out, stdoutData: outData, stderr: err, timedOut: timedOut)
    }
}

/// Runs a tool to completion, never longer than `timeout` seconds.
func runTool(_ executable: String, _ arguments: [String], timeout: Double = 10) -> ToolResult {
    do {
        return try RunningTool(executable, arguments).wait(timeout: timeout)
    } catch {
        return ToolResult(status: -1, stdout: "", stdoutData: Data(), stderr: "could not launch \(executable): \(error)", timedOut: false)
    }
}
