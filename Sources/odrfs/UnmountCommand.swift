import ArgumentParser
import Foundation
import ODRFSControl
import ODRFSCore

/// `odrfs unmount <mountpoint>`: detaches the mount and waits for its daemon to finish.
struct UnmountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount",
        abstract: "Unmount an ODRFS mount and wait for its daemon to exit.",
        discussion: "Fails with a clear message if files under the mount are still open; --lazy detaches it anyway and the daemon exits when they are closed."
    )

    @Argument(help: "The mountpoint.")
    var mountpoint: String

    @Flag(name: .long, help: "Detach now even if busy (umount -l); also cleans a stale mount whose daemon died.")
    var lazy = false

    @Option(name: .long, help: "Seconds to wait for the daemon to exit.")
    var timeout: Double = 30

    func run() throws {
        let target = Self.absolutePath(mountpoint)
        // From the mount table, never by looking into the mount (a hung daemon would hang us):
        // a root mount made with allow_other keeps its runtime files with the shared ones.
        let entry = MountTable.current().entry(at: target)
        let shared = entry?.fuseOwner == 0 && entry?.superOptions.contains("allow_other") == true
        let runtime = shared ? RuntimeDirectory(sharedMountpoint: target) : RuntimeDirectory(mountpoint: target)
        let daemon = runtime.daemonPID()
        let result = try Self.fusermount(lazy ? ["-u", "-z", target] : ["-u", target])
        guard result.status == 0 else {
            let detail = result.error.trimmingCharacters(in: .whitespacesAndNewlines)
            if detail.contains("busy") {
                fail("\(target) is busy: a process still has files open or its working directory there (find it with `fuser -vm \(target)`); close them, or use `odrfs unmount --lazy`")
            }
            if detail.contains("not found in /etc/mtab") || detail.contains("not mounted") || detail.contains("Invalid argument") {
                fail("\(target) is not mounted")
            }
            fail("cannot unmount \(target): \(detail)")
        }
        guard let daemon, !lazy else { return }
        let deadline = Date().addingTimeInterval(timeout)
        while kill(daemon, 0) == 0 && Date() < deadline {
            usleep(20_000)
        }
        if kill(daemon, 0) == 0 {
            fail("\(target) is unmounted but its daemon (pid \(daemon)) is still running after \(Int(timeout)) s")
        }
    }

    /// The absolute path without touching the (possibly stale) mount itself.
    static func absolutePath(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return URL(fileURLWithPath: absolute).standardizedFileURL.path
    }

    static func fusermount(_ arguments: [String]) throws -> (status: Int32, error: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/fusermount3")
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw ValidationError("cannot run fusermount3 (install the fuse3 package): \(error)")
        }
        let data = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    private func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("odrfs unmount: \(message)\n".utf8))
        Foundation.exit(1)
    }
}
