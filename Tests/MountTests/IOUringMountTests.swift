import Foundation
import TestSupport
import Testing

/// `odrfs mount --io-uring`: FUSE requests through io_uring (Linux 6.14+ with
/// CONFIG_FUSE_IO_URING; the daemon, as root, sets fuse.enable_uring itself).
@Suite("IOUring", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct IOUringMountTests {
    static var kernelHasIOUring: Bool { FileManager.default.fileExists(atPath: "/sys/module/fuse/parameters/enable_uring") }

    /// The daemon's `fuse-ring-N` threads, each with its `Cpus_allowed_list` from /proc.
    static func ringQueueThreads(of pid: pid_t) -> [(queue: Int, allowed: String)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { task in
            guard let name = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8),
                  name.hasPrefix("fuse-ring-"),
                  let queue = Int(name.dropFirst("fuse-ring-".count).trimmingCharacters(in: .whitespacesAndNewlines)),
                  let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
            else { return nil }
            return (queue, line.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces))
        }
    }

    @Test("a --io-uring mount serves real tools through the ring, says so in status and unmounts cleanly")
    func ringMountServesAndUnmounts() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount(extra: ["--io-uring"])
        let status = try await fixture.odrfs(["status", fixture.mountpoint, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let object = try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any]
        let readPath = object?["readPath"] as? String ?? ""
        if Self.kernelHasIOUring {
            // Ready is reported after a statfs went through the session; the ring may take a moment more.
            var transport = readPath
            for _ in 0..<50 where !transport.contains("transport io_uring") {
                try await Task.sleep(for: .milliseconds(100))
                let again = try await fixture.odrfs(["status", fixture.mountpoint, "--json"])
                transport = (try JSONSerialization.jsonObject(with: again.stdout) as? [String: Any])?["readPath"] as? String ?? ""
            }
            #expect(transport.contains("transport io_uring"), "\(transport)\n\(fixture.log)")
            // The kernel queues a request on its caller's CPU's ring: each queue's thread runs on that CPU only.
            let pid = try #require(fixture.daemonPID())
            let queues = Self.ringQueueThreads(of: pid)
            #expect(!queues.isEmpty, "no fuse-ring-N thread in the daemon")
            for (queue, allowed) in queues {
                #expect(allowed == "\(queue)", "fuse-ring-\(queue) may run on CPUs \(allowed)")
            }
        } else {
            #expect(readPath.contains("transport /dev/fuse (io_uring unavailable"), "\(readPath)")
        }
        let listed = try await Command.run("/usr/bin/find", [fixture.mountpoint, "-type", "f", "-name", "*.bin"])
        #expect(listed.output.contains("/big.bin"), "\(listed.stderr)")
        let compare = try await Command.run("/usr/bin/cmp", [fixture.source + "/big.bin", fixture.mountpoint + "/big.bin"], timeout: .seconds(30))
        #expect(compare.status == 0, "\(compare.output)\(compare.stderr)\n\(fixture.log)")
        let link = try await Command.run("/usr/bin/readlink", [fixture.mountpoint + "/readme-link"])
        #expect(link.output == "README.txt\n")
        let daemon = try #require(fixture.daemonPID())
        let unmount = try await fixture.unmount()
        #expect(unmount.status == 0, "\(unmount.stderr)")
        let exited = await eventually(timeout: .seconds(10)) { kill(daemon, 0) != 0 }
        #expect(exited, "the daemon must exit after unmount")
        #expect(fixture.log.contains("FUSE transport"), "\(fixture.log)")
    }
}
