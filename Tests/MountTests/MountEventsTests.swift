import Foundation
import ODRFSCore
import TestSupport
import Testing

/// `odrfs events` against a real mount: what the daemon does arrives as JSON lines.
@Suite("Mount events", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountEventsTests {
    /// The JSON objects `odrfs events --json` printed so far into `path`.
    private func events(in path: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
    }

    @Test("events --json reports fetches, retains, releases and evictions with their reason and rule")
    func evictionsWithReasons() async throws {
        let fixture = try MountFixture()
        try MountCacheTests.writeLevels(to: fixture.source)
        #expect(try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist]).status == 0)
        let manifest = try fixture.manifest
        let budget = 2 * manifest.packs[1].bytes.value + manifest.packs[0].bytes.value
        try await fixture.mount(extra: ["--cache-size", String(budget)])
        let output = fixture.root + "/events.jsonl"
        let follower = try ChildProcess(MountFixture.binary, ["events", fixture.mountpoint, "--json"], stdout: output, stderr: fixture.root + "/events.err")
        defer { follower.stop() }
        // The subscription is live once a fetch shows up; read levels until one does.
        var level = 1
        while level <= 6 {
            try await MountCacheTests().read(fixture, level: level)
            level += 1
            let fetched = await eventually(timeout: .milliseconds(500)) { events(in: output).contains { $0["event"] as? String == "fetch-finished" } }
            if fetched { break }
        }
        for next in level...6 { try await MountCacheTests().read(fixture, level: next) }
        #expect(await eventually(timeout: .seconds(10)) {
            events(in: output).contains { $0["event"] as? String == "evicted" && $0["reason"] as? String == "cache-size" }
        }, "no cache-size eviction: \(events(in: output).map { $0["event"] ?? "" })")
        #expect(follower.isRunning)

        let purge = try await fixture.odrfs(["purge", fixture.mountpoint, "--all"])
        #expect(purge.status == 0, "\(purge.stderr)")
        #expect(await eventually(timeout: .seconds(10)) {
            events(in: output).contains { $0["event"] as? String == "evicted" && $0["reason"] as? String == "manual" }
        }, "no manual eviction after purge")

        let all = events(in: output)
        let evicted = try #require(all.first { $0["event"] as? String == "evicted" && $0["reason"] as? String == "cache-size" })
        let pack = try #require(evicted["pack"] as? String)
        #expect(pack.hasPrefix("Level"))
        #expect(evicted["tags"] as? [String] == [pack])
        #expect(evicted["bytes"] as? Int == Int(try #require(manifest.packs.first { $0.id.rawValue == pack }).bytes.value))
        #expect((evicted["rule"] as? String)?.contains("least recently used") == true, "\(evicted)")
        let time = try #require(evicted["time"] as? String)
        #expect(time.hasSuffix("Z") && time.contains("."), "time is not ISO 8601 UTC with fractions: \(time)")
        let kinds = Set(all.compactMap { $0["event"] as? String })
        for kind in ["fetch-started", "fetch-progress", "fetch-finished", "retained", "released", "evicted"] {
            #expect(kinds.contains(kind), "no \(kind) event in \(kinds.sorted())")
        }
        // Every eviction reported is one the purger logged.
        let evictions = all.filter { $0["event"] as? String == "evicted" }.count
        #expect(await eventually { evictions == fixture.log.components(separatedBy: "evicted pack").count - 1 },
                "\(evictions) evicted events, log: \(fixture.log.components(separatedBy: "evicted pack").count - 1)")
        follower.signal(SIGINT)
        #expect(await follower.wait(timeout: .seconds(10)), "odrfs events did not stop on SIGINT")
    }
}
