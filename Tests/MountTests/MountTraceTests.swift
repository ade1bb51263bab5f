import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Access traces against a real mount: `odrfs trace`, `odrfs build --prefetch-from` and
/// `odrfs mount --learn-prefetch`.
@Suite("Access traces and learned prefetch", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountTraceTests {
    private func trace(_ fixture: MountFixture, _ extra: [String] = []) async throws -> [[String: Any]] {
        let result = try await fixture.odrfs(["trace", fixture.mountpoint] + extra)
        try #require(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]], "\(result.output)")
    }

    @Test("a scripted session's trace lists packs in open order; --prefetch-from writes it; --learn-prefetch fetches in it next time")
    func traceBuildAndLearn() async throws {
        let fixture = try MountFixture()
        try MountCacheTests.writeLevels(to: fixture.source)
        #expect(try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist]).status == 0)
        try await fixture.mount()
        let script = [5, 2, 6, 1]
        for level in script { try await MountCacheTests().read(fixture, level: level) }
        _ = try await fixture.odrfs(["request", fixture.mountpoint, "Level1"])   // already needed: not listed again

        let entries = try await trace(fixture)
        #expect(entries.map { $0["pack"] as? String } == script.map { "Level\($0)" })
        #expect(entries.allSatisfy { $0["cause"] as? String == "open" })
        #expect(entries.first?["first_file"] as? String == "level5/part0.bin")
        #expect(entries.first?["tags"] as? [String] == ["Level5"])
        let times = entries.compactMap { $0["seconds_since_mount"] as? Double }
        #expect(times.count == script.count && times == times.sorted() && times.allSatisfy { $0 >= 0 })

        // The trace file, through --output, feeds the build.
        let traceFile = fixture.root + "/trace.json"
        #expect(try await fixture.odrfs(["trace", fixture.mountpoint, "--output", traceFile]).status == 0)
        let learnedDist = fixture.root + "/dist-learned"
        let build = try await fixture.odrfs(["build", fixture.source, "-o", learnedDist, "--prefetch-from", traceFile, "--prefetch-from", traceFile])
        #expect(build.status == 0, "\(build.stderr)")
        let manifest = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: learnedDist + "/manifest.json")))
        #expect(manifest.prefetch.map(\.name) == script.map { "Level\($0)" })
        let hostile = fixture.root + "/hostile.json"
        try Data(#"[{"pack":"A","tags":["A/B"],"cause":"open","first_file":null,"seconds_since_mount":1}]"#.utf8).write(to: URL(fileURLWithPath: hostile))
        let refused = try await fixture.odrfs(["build", fixture.source, "-o", fixture.root + "/dist-hostile", "--prefetch-from", hostile])
        #expect(refused.status != 0 && refused.stderr.contains("entry 1"), "\(refused.stderr)")

        // Next session on this machine: empty the cache, remount learning from history.
        #expect(try await fixture.odrfs(["purge", fixture.mountpoint, "--all"]).status == 0)
        #expect(try await fixture.unmount().status == 0)
        try await fixture.mount(extra: ["--learn-prefetch"])
        #expect(await eventually { script.allSatisfy { (try? fixture.state(of: "Level\($0)")) == "downloaded" } }, "learned packs not prefetched")
        let second = try await trace(fixture)
        #expect(second.map { $0["pack"] as? String } == script.map { "Level\($0)" }, "prefetch order: \(second)")
        #expect(second.allSatisfy { $0["cause"] as? String == "prefetch" })
        #expect(try fixture.state(of: "Level3") == "not-downloaded", "a pack the history never needed was prefetched")
        let fetchOrder = fixture.log.components(separatedBy: "\n").filter { $0.contains("fetching pack") }.suffix(script.count)
        for (line, level) in zip(fetchOrder, script) {
            #expect(line.contains("Level\(level)"), "fetch order: \(fetchOrder)")
        }
        let both = try await trace(fixture, ["--sessions", "2"])
        #expect(both.count == 2 * script.count)
        #expect(both.first?["session"] as? Int == 1 && both.last?["session"] as? Int == 2)
    }
}
