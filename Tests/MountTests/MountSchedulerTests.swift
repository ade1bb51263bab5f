import Foundation
import ODRFSCore
import TestSupport
import Testing

/// `--prefetch-delay` and `--max-background-rate` on a real mount: prefetch waits for its
/// quiet period, opens never do, and bad values are refused before anything is mounted.
@Suite("Mount scheduler options", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(2)))
struct MountSchedulerTests {
    func makeFixture() async throws -> MountFixture {
        let fixture = try MountFixture()
        try MountCacheTests.writeLevels(to: fixture.source)
        try ("prefetch: [Level4, Level2]\n").appendOrWrite(to: fixture.source + "/odr.yaml")
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
        return fixture
    }

    @Test("--prefetch-delay holds prefetch but never an open; prefetch runs once the quiet period passes")
    func prefetchDelay() async throws {
        let fixture = try await makeFixture()
        let origin = try await onFreePort { try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx-\($0)", port: $0) }
        // A quiet period well beyond the checks below, which a loaded machine can stretch by seconds.
        try await fixture.mount(origin: origin.url, extra: ["--prefetch-delay", "5s", "--max-background-rate", "4M"])
        let open = try await Command.run("/bin/cat", [fixture.mountpoint + "/level1/part0.bin"])
        #expect(open.status == 0 && open.stdout == MountCacheTests.expected(1, part: 0), "an open was held")
        await pause(.seconds(1))
        #expect(try fixture.state(of: "Level4") == "not-downloaded", "prefetch started before its quiet period")
        #expect(await eventually(timeout: .seconds(20)) { (try? fixture.state(of: "Level2")) == "downloaded" }, "prefetch never ran")
    }

    @Test("bad scheduler values are refused with a usage error")
    func badValues() async throws {
        let fixture = try await makeFixture()
        for extra in [["--prefetch-delay", "soon"], ["--prefetch-delay", "-1s"], ["--max-background-rate", "10"]] {
            let result = try await fixture.odrfs(["mount", fixture.dist, fixture.mountpoint, "--cache", fixture.cache] + extra)
            #expect(result.status == 64, "\(extra): \(result.status) \(result.stderr)")
        }
    }
}

private extension String {
    func appendOrWrite(to path: String) throws {
        let existing = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        try (existing + self).write(toFile: path, atomically: true, encoding: .utf8)
    }
}
