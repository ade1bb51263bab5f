@testable import FUSEKit
import Foundation
import Logging
import Testing

/// Environment facts the mount tests depend on.
enum MountEnvironment {
    static var hasFuseDevice: Bool { FileManager.default.fileExists(atPath: "/dev/fuse") }
    static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }
}

/// One `TestFileSystem` mounted in a fresh temp dir, served by
/// `FUSESession.run()` on a background thread. `stop()` always unmounts and
/// never waits without a deadline.
final class TestMount: @unchecked Sendable {
    let directory: String
    let fileSystem: TestFileSystem
    let session: FUSESession
    private let backingFile: String
    private let backingDescriptor: Int32
    /// Set by the loop thread when `run()` has returned; polled, never waited on.
    private let loopEnded = LockedBox(false)
    private let runError = LockedBox<FUSEError?>(nil)

    /// Contents of `big.bin`: a pattern that makes misplaced offsets visible.
    static let bigContents: [UInt8] = (0..<(1 << 20) + 123).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }

    init(readOnly: Bool = true, readdirPlus: Bool = true, skipDirectoryOpens: Bool = false, installSignalHandlers: Bool = false, exitBeforeRun: Bool = false, passthrough: Bool = false, ioUring: Bool = false, ioUringParameter: String? = nil) throws {
        directory = try Self.makeTemporaryDirectory()
        backingFile = directory + ".big"
        _ = FileManager.default.createFile(atPath: backingFile, contents: Data(Self.bigContents))
        backingDescriptor = Glibc.open(backingFile, O_RDONLY | O_CLOEXEC)
        fileSystem = TestFileSystem(
            descriptor: backingDescriptor, descriptorSize: UInt64(Self.bigContents.count),
            readdirPlus: readdirPlus, skipDirectoryOpens: skipDirectoryOpens,
            passthroughBacking: passthrough ? backingFile : nil
        )
        var logger = Logger(label: "fusekit.tests")
        logger.logLevel = .info
        let options = MountOptions(fsName: "fusekit-test,with\\comma", subtype: "fusekittest", readOnly: readOnly)
        session = try FUSESession(fileSystem: fileSystem, options: options, logger: logger)
        if ioUring {
            session.requestIOUring(queueDepth: 16, kernelParameter: ioUringParameter ?? KernelIOUringSupport.parameterPath)
        }
        try session.mount(at: directory)
        if installSignalHandlers {
            try session.installSignalHandlers()
        }
        if exitBeforeRun {
            session.exit()
        }
        let thread = Thread { [session, loopEnded, runError] in
            do throws(FUSEError) {
                try session.run(maxIdleThreads: 4)
            } catch {
                runError.value = error
            }
            loopEnded.value = true
        }
        thread.name = "fusekit-test-loop"
        thread.start()
    }

    func path(_ relative: String) -> String {
        directory + "/" + relative
    }

    /// Waits up to `timeout` seconds for `run()` to return, sleeping the task (never a
    /// pool thread: this mount's deferred replies may need the pool to end the loop).
    func waitForLoopEnd(timeout: Double) async -> Bool {
        await waitUntil(timeout: timeout) { loopEnded.value }
    }

    /// Stops the loop via `exit()`, falling back to a lazy unmount; records an issue if it will not stop.
    func stop() async {
        session.exit()
        var stopped = await waitForLoopEnd(timeout: 10)
        if !stopped {
            Issue.record("FUSE loop did not stop after exit(); forcing a lazy unmount")
            _ = await runTool("/usr/bin/fusermount3", ["-u", "-z", directory], timeout: 10)
            stopped = await waitForLoopEnd(timeout: 10)
        }
        #expect(stopped, "the FUSE loop thread must end")
        if let error = runError.value {
            Issue.record("run() failed: \(error)")
        }
        close(backingDescriptor)
        unlink(backingFile)
        rmdir(directory)
    }

    private static func makeTemporaryDirectory() throws -> String {
        let base = NSTemporaryDirectory().hasSuffix("/") ? NSTemporaryDirectory() : NSTemporaryDirectory() + "/"
        var template = Array((base + "fusekit-XXXXXX").utf8CString)
        guard let result = mkdtemp(&template) else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        return String(cString: result)
    }
}

/// Mounts a test filesystem, runs `body`, and always unmounts.
func withTestMount(
    readOnly: Bool = true, readdirPlus: Bool = true, skipDirectoryOpens: Bool = false, passthrough: Bool = false, ioUring: Bool = false,
    _ body: (TestMount) async throws -> Void
) async throws {
    let mount = try TestMount(readOnly: readOnly, readdirPlus: readdirPlus, skipDirectoryOpens: skipDirectoryOpens, passthrough: passthrough, ioUring: ioUring)
    do {
        try await body(mount)
    } catch {
        await mount.stop()
        throw error
    }
    await mount.stop()
}

/// A value shared with a thread; for test plumbing only.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: Value
    init(_ value: Value) { storage = value }
    var value: Value {
        get { lock.withLock { storage } }
        set { lock.withLock { storage = newValue } }
    }
}

/// Polls `condition` every 5 ms until it holds or `timeout` seconds pass, sleeping the
/// task: a blocked pool thread could be the one a deferred reply of the mount needs.
func waitUntil(timeout: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return true
}

extension TestMount {
    /// Starts `cat` on `hang.txt`, whose open the test filesystem never answers by itself,
    /// and waits until the open reached the filesystem.
    func catWaitingInHangingOpen() async throws -> RunningTool {
        let cat = try RunningTool("/usr/bin/cat", [path("hang.txt")])
        #expect(await waitUntil(timeout: 5) { self.fileSystem.events.withLock { $0.hangOpenArrived } })
        return cat
    }

    /// Reads `big.bin` with read(2) and through mmap(2) and compares it with its contents;
    /// with passthrough engaged, no read may reach the filesystem.
    func expectPassthroughReadAndMap() async {
        let reference = directory + ".reference"
        _ = FileManager.default.createFile(atPath: reference, contents: Data(TestMount.bigContents))
        defer { unlink(reference) }
        let result = await runTool("/usr/bin/python3", ["-c", PassthroughTests.readAndMap, path("big.bin"), reference], timeout: 20)
        #expect(result.stdout == "ok\n", "\(result.stderr)")
        #expect(fileSystem.events.withLock { $0.descriptorReads } == 0, "passthrough reads must not reach the daemon")
    }
}
