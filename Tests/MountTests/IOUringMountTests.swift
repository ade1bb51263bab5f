import Foundation
import TestSupport
import Testing

/// `odrfs mount --io-uring`: FUSE requests through io_uring (Linux 6.14+ with
/// CONFIG_FUSE_IO_URING; the daemon, as root, sets fuse.enable_uring itself).
@Suite("IOUring", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct IOUringMountTests {
    static var kernelHasIOUring: Bool { FileManager.default.fileExists(atPath: "/sys/module/fuse/parameters/enable_uring") }

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
        } else {
            #expect(readPath.contains("transport /dev/fuse (io_uring unavailable"), "\(readPath)")
        }
        let listed = try await Command.run("/usr/bin/find", [fixture.mountpoint, "-type", "f", "-name", "*.bin"])
        #expect(listed.output.contains("/big.bin"), "\(listed.stderr)")
        let compare = try await Command.run("/usr/bin/cmp", [fixture.source + "/big.bin", fixture.mountpoint + "/big.bin"], timeout: .seconds(30))
        #expect(compare.status == 0, "\(compare.output)\(compare.stderr)\n\(fixture.log)")
        let link = try await Command.run("/usr/bin/readlink", [fixture.mountpoint + "/readme-link"])
        #expect(link.output == "README.txt\n")
        let pid = try #require(fixture.daemonPID())
        let unmount = try await fixture.unmount()
        #expect(unmount.status == 0, "\(unmount.stderr)")
        let exited = await eventually(timeout: .seconds(10)) { kill(pid, 0) != 0 }
        #expect(exited, "the daemon must exit after unmount")
        #expect(fixture.log.contains("FUSE transport"), "\(fixture.log)")
    }
}
