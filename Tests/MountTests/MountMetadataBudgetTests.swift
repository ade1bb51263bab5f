import Foundation
import ODRFSCore
import TestSupport
import Testing

/// The cache's pinned metadata under a real mount: the file index and manifest count in
/// `--cache-size` and in status, and an update drops the index of a revision it no longer needs.
@Suite("Mount cache metadata", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountMetadataBudgetTests {
    func makeFixture() async throws -> MountFixture {
        let fixture = try MountFixture()
        try MountCacheTests.writeLevels(to: fixture.source)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
        return fixture
    }

    /// The `cache` object of `odrfs status --json`.
    func cacheStatus(_ fixture: MountFixture) async throws -> [String: Any] {
        let result = try await fixture.odrfs(["status", fixture.mountpoint, "--json"])
        let object = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        return try #require(object?["cache"] as? [String: Any], "\(String(decoding: result.stdout, as: UTF8.self))")
    }

    /// A JSON number as Int64 (JSONSerialization gives NSNumbers).
    func number(_ value: Any?) -> Int64? {
        (value as? NSNumber)?.int64Value
    }

    /// Names under `<cache>/index/`.
    func indexFiles(_ fixture: MountFixture) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: fixture.cache + "/index")) ?? [])
    }

    /// What the manifest and the file indexes really take in the cache directory.
    func metadataOnDisk(_ fixture: MountFixture) -> Int64 {
        let paths = [fixture.cache + "/manifest.json", fixture.cache + "/manifest.json.sig"]
            + indexFiles(fixture).map { fixture.cache + "/index/" + $0 }
        return paths.reduce(0) { sum, path in
            sum + ((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0)
        }
    }

    func read(_ fixture: MountFixture, level: Int) async throws {
        for part in 0..<2 {
            let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/level\(level)/part\(part).bin"])
            #expect(cat.status == 0, "\(cat.stderr)")
        }
    }

    @Test("a budget that holds base and three packs but not the file index beside them evicts, and status counts the index")
    func indexTakesItsShareOfTheBudget() async throws {
        let fixture = try await makeFixture()
        let manifest = try fixture.manifest
        let budget = manifest.packs[0].bytes.value + 3 * manifest.packs[1].bytes.value
        try await fixture.mount(extra: ["--cache-size", String(budget)])
        for level in 1...3 { try await read(fixture, level: level) }
        let onDisk = metadataOnDisk(fixture)
        #expect(onDisk > manifest.index.bytes.value, "the manifest and the index are in the cache")
        // Without the index counted, base and three packs fit exactly and nothing is evicted.
        #expect(try fixture.state(of: "Level1") == "not-downloaded", "the oldest pack was not evicted for the index's share")
        #expect(try fixture.state(of: "Level3") == "downloaded")
        var cache: [String: Any] = [:]
        let settled = try await eventually {
            cache = try await cacheStatus(fixture)
            return number(cache["metadataBytes"]) == onDisk && (number(cache["cachedBytes"]) ?? .max) <= budget
        }
        #expect(settled, "status: \(cache), on disk: \(onDisk)")
        let localPacks = try fixture.status().filter { $0.value[2] == "downloaded" || $0.value[2] == "in-use" }
            .reduce(Int64(0)) { $0 + (Int64($1.value[3]) ?? 0) }
        #expect(number(cache["cachedBytes"]) == localPacks + onDisk, "cachedBytes is local packs plus the pinned metadata")
        let text = try String(contentsOfFile: fixture.mountpoint + "/.odrfs/status", encoding: .utf8)
        #expect(text.contains("\(onDisk) pinned in file indexes and manifest"), "\(text)")
    }

    /// The mount's manager is built while the index downloads (session 16); it measures the
    /// pinned metadata again once the index is in place, before the initial install purges
    /// by that figure: status has it right from the first answer, not after maintenance.
    @Test("status counts the downloaded file index and the manifest as soon as the mount is ready")
    func metadataIsMeasuredBeforeReady() async throws {
        let fixture = try await makeFixture()
        // The index is held back by the origin, so the manager is built before it arrives.
        let manifest = try fixture.manifest
        let origin = try await onFreePort { port in
            try await StallingOrigin(serving: fixture.dist, in: fixture.root + "/origin", stalled: [manifest.index.file],
                                     stallAfter: 0, port: port)
        }
        defer { origin.release() }
        // Released from a thread of its own (the cooperative pool may be starved for seconds
        // under the suite's load): once the index has stalled, and half a second later, for
        // the manager to be built meanwhile.
        let (flag, stalling) = (origin.flag, origin.stallingMarker)
        DispatchQueue.global().async {
            for _ in 0..<3_000 where !FileManager.default.fileExists(atPath: stalling) { usleep(10_000) }
            usleep(500_000)
            _ = FileManager.default.createFile(atPath: flag, contents: nil)
        }
        try await fixture.mount(origin: origin.url)
        #expect(FileManager.default.fileExists(atPath: stalling), "the origin never held the index back")
        let onDisk = metadataOnDisk(fixture)
        #expect(onDisk > manifest.index.bytes.value)
        let cache = try await cacheStatus(fixture)
        #expect(number(cache["metadataBytes"]) == onDisk, "status: \(cache), on disk: \(onDisk)")
    }

    @Test("an update keeps the current and the replaced revision's index, the next one deletes the oldest, a remount keeps only the current one")
    func updatesReleaseOldIndexes() async throws {
        let fixture = try await makeFixture()
        try await fixture.mount()
        let name = { (manifest: Manifest) in manifest.index.sha256.hex + "." + FileIndex.fileExtension }
        let revision1 = name(try fixture.manifest)
        #expect(indexFiles(fixture) == [revision1])
        var revisions = [revision1]
        for seed in [201, 202] {
            try Data(TestBundle.pseudoRandom(10_000, seed: UInt64(seed))).write(to: URL(fileURLWithPath: fixture.source + "/level1/part0.bin"))
            let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
            try #require(build.status == 0, "\(build.stderr)")
            let update = try await fixture.odrfs(["update", fixture.mountpoint])
            try #require(update.status == 0, "\(update.stderr)\n\(fixture.log)")
            revisions.append(name(try fixture.manifest))
            #expect(indexFiles(fixture) == Set(revisions.suffix(2)), "revisions \(revisions)")
        }
        #expect(!indexFiles(fixture).contains(revision1), "revision 1's index outlived two updates")
        let onDisk = metadataOnDisk(fixture)
        var cache: [String: Any] = [:]
        let counted = try await eventually {
            cache = try await cacheStatus(fixture)
            return number(cache["metadataBytes"]) == onDisk
        }
        #expect(counted, "status: \(cache), on disk: \(onDisk)")
        #expect(try await fixture.unmount().status == 0)
        try await fixture.mount()
        #expect(indexFiles(fixture) == [revisions[2]])
    }
}
