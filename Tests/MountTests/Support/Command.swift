import Foundation
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
    static func run(_ executable: String, _ arguments: [String], timeout: Duration = .seconds(60), environment: [String: String]? = nil) throws -> CommandResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : "/usr/bin/env")
        process.arguments = executable.hasPrefix("/") ? arguments : [executable] + arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let outPath = NSTemporaryDirectory() + "/odrfs-out-\(UUID().uuidString)"
        let errPath = NSTemporaryDirectory() + "/odrfs-err-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        defer {
            unlink(outPath)
            unlink(errPath)
        }
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline {
            usleep(2_000)
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? out.close()
            try? err.close()
            Issue.record("\(executable) \(arguments.joined(separator: " ")) timed out after \(timeout) and was killed")
            return CommandResult(status: -1, stdout: Data(), stderr: "timed out")
        }
        process.waitUntilExit()
        try? out.close()
        try? err.close()
        let stdout = FileManager.default.contents(atPath: outPath) ?? Data()
        let stderr = String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self)
        return CommandResult(status: process.terminationStatus, stdout: stdout, stderr: stderr)
    }

    /// Starts a program without waiting; the caller must stop it (`Command.stop`).
    static func start(_ executable: String, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : "/usr/bin/env")
        process.arguments = executable.hasPrefix("/") ? arguments : [executable] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Kills `process` by PID and reaps it.
    static func stop(_ process: Process) {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
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
