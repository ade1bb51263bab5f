import FaultOriginSupport
import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Issue 26, item 5: prefetch paused at its next buffer stopped reading, not sending, so on
/// a shared link an open's first bytes queued behind the prefetch bytes already in the
/// socket buffers and the server's send window (2.0× the open's time alone). Now a
/// prefetch steps aside: it drops its connection while an open waits and resumes with a
/// range request from the first byte it has not written.
@Suite("Prefetch yields the link", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(2)))
struct PrefetchYieldMountTests {
    static let prefetchBytes = 6 << 20

    @Test("an open during prefetch makes the prefetch drop its connection and resume with Range; both read right")
    func openMakesPrefetchStepAside() async throws {
        let fixture = try MountFixture()
        try FileManager.default.createDirectory(atPath: fixture.source + "/pre", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: fixture.source + "/open", withIntermediateDirectories: true)
        let preBytes = Data(TestBundle.pseudoRandom(Self.prefetchBytes, seed: 41))
        let openBytes = Data(TestBundle.pseudoRandom(200_000, seed: 42))
        try preBytes.write(to: URL(fileURLWithPath: fixture.source + "/pre/data.bin"))
        try openBytes.write(to: URL(fileURLWithPath: fixture.source + "/open/data.bin"))
        try "tags:\n  Pre: [\"pre/**\"]\n  Open: [\"open/**\"]\nprefetch: [Pre]\n"
            .write(toFile: fixture.source + "/odr.yaml", atomically: true, encoding: .utf8)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
        let prePath = "/" + (try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Pre" })).file

        let origin = try await FaultOrigin.start()
        do {
            try origin.setFiles(from: fixture.dist)
            // The open's own download breaks off once and resumes, so the open waits a few
            // hundred milliseconds: long enough for the prefetch to see it at a buffer.
            let openPath = "/" + (try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Open" })).file
            origin.script(openPath, [.reset(after: 1000)])
            // Prefetch at 1 MiB/s: about six seconds, so the open comes while it runs.
            try await fixture.mount(origin: origin.baseURL, extra: ["--max-background-rate", "1M"])
            let started = await eventually(timeout: .seconds(20)) { (try? fixture.state(of: "Pre"))?.hasPrefix("downloading") == true }
            try #require(started, "prefetch never started: \(String(describing: try? fixture.state(of: "Pre")))")
            await pause(.milliseconds(500))
            let open = try await Command.run("/bin/cat", [fixture.mountpoint + "/open/data.bin"])
            #expect(open.status == 0 && open.stdout == openBytes, "\(open.stderr)")

            let done = await eventually(timeout: .seconds(40)) { (try? fixture.state(of: "Pre")) == "downloaded" }
            #expect(done, "prefetch did not finish after the open: \(String(describing: try? fixture.state(of: "Pre")))")
            let requests = origin.requests(of: prePath)
            #expect(requests.count >= 2, "the prefetch kept its connection through the open: \(requests.map(\.range))")
            let resumed = requests.dropFirst().compactMap(\.range)
            #expect(resumed.contains { $0.hasPrefix("bytes=") && !$0.hasPrefix("bytes=0-") },
                    "the prefetch did not resume from the bytes it had: \(requests.map(\.range))")
            let pre = try await Command.run("/bin/cat", [fixture.mountpoint + "/pre/data.bin"])
            #expect(pre.status == 0 && pre.stdout == preBytes, "the resumed prefetch reads wrong: \(pre.stderr)")
        } catch {
            await origin.stop()
            throw error
        }
        await origin.stop()
    }
}
