import Foundation
import ODRFSCore
import TestSupport
import Testing

/// `odrfs mount --metrics`: the endpoint parses as Prometheus text and its figures match
/// what the test did.
@Suite("Mount metrics", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountMetricsTests {
    /// One sample line of the text format: `name{label="value",…} number`.
    private static var sample: Regex<(Substring, Substring, Substring?, Substring)> {
        /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (-?[0-9.e+-]+|\+Inf|-Inf|NaN)$/
    }

    /// Scrapes `url` with python3 (installed by setup.sh) and parses every line strictly.
    private func scrape(_ url: String) async throws -> [String: Double] {
        let script = "import sys, urllib.request; r = urllib.request.urlopen(sys.argv[1], timeout=10); "
            + "sys.stdout.write(r.headers.get('Content-Type', '') + '\\n' + r.read().decode())"
        let result = try await Command.run("/usr/bin/env", ["python3", "-c", script, url], timeout: .seconds(20))
        try #require(result.status == 0, "scrape failed: \(result.stderr)")
        var lines = result.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.removeFirst().hasPrefix("text/plain; version=0.0.4"))
        var samples: [String: Double] = [:]
        for line in lines where !line.isEmpty {
            if line.hasPrefix("# TYPE ") || line.hasPrefix("# HELP ") { continue }
            let match = try #require(line.wholeMatch(of: Self.sample), "not Prometheus text: \(line)")
            samples[String(match.1) + String(match.2 ?? "")] = Double(match.3) ?? .nan
        }
        return samples
    }

    @Test("counters, histograms and gauges match a scripted session")
    func metricsMatchTheSession() async throws {
        let fixture = try MountFixture()
        try MountCacheTests.writeLevels(to: fixture.source)
        #expect(try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist]).status == 0)
        let manifest = try fixture.manifest
        let bytes = { (id: String) in manifest.packs.first { $0.id.rawValue == id }!.bytes.value }
        // What the origin sends for a pack: its file in the dist dir (compressed by default).
        // The fetched-bytes counter counts these (it counted uncompressed bytes, 11 % more on
        // compressible files, issue 26 item 7).
        let dist = fixture.dist
        let sent = { (id: String) -> Int64 in
            let file = manifest.packs.first { $0.id.rawValue == id }!.file
            return ((try? FileManager.default.attributesOfItem(atPath: dist + "/" + file)[.size]) as? NSNumber)?.int64Value ?? -1
        }
        let port = Int.random(in: 20_000..<60_000)
        try await fixture.mount(extra: ["--metrics", "127.0.0.1:\(port)", "--cache-size", "10M"])
        #expect(await eventually { fixture.log.contains("serving metrics") || fixture.log.contains("cannot serve metrics") })
        try #require(!fixture.log.contains("cannot serve metrics"), "port \(port) taken: \(fixture.log)")

        try await MountCacheTests().read(fixture, level: 1)   // cold, then warm
        try await MountCacheTests().read(fixture, level: 2)   // cold, then warm
        try await MountCacheTests().read(fixture, level: 1)   // warm twice
        #expect(try await fixture.odrfs(["request", fixture.mountpoint, "Level3"]).status == 0)
        // A pack missing on the origin: one not-found error.
        try FileManager.default.removeItem(atPath: fixture.dist + "/" + manifest.packs.first { $0.id.rawValue == "Level4" }!.file)
        let missing = try await Command.run("/bin/cat", [fixture.mountpoint + "/level4/part0.bin"])
        #expect(missing.status != 0)
        let purge = try await fixture.odrfs(["purge", fixture.mountpoint, "--all"])
        #expect(purge.status == 0, "\(purge.stderr)")

        let metrics = try await scrape("http://127.0.0.1:\(port)/metrics")
        #expect(sent("Level1") != bytes("Level1"), "the packs travel compressed: the check below tells the two apart")
        #expect(metrics[#"odrfs_fetched_bytes_total{cause="open"}"#] == Double(sent("base") + sent("Level1") + sent("Level2")), "\(metrics)")
        #expect(metrics[#"odrfs_fetched_bytes_total{cause="request"}"#] == Double(sent("Level3")))
        #expect(metrics[#"odrfs_fetched_bytes_total{cause="prefetch"}"#] ?? 0 == 0)
        #expect(metrics[#"odrfs_open_seconds_count{cache="cold"}"#] == 2)
        #expect(metrics[#"odrfs_open_seconds_count{cache="warm"}"#] == 4)
        #expect((metrics[#"odrfs_open_seconds_sum{cache="cold"}"#] ?? 0) > 0)
        #expect(metrics[#"odrfs_open_seconds_bucket{cache="warm",le="+Inf"}"#] == 4)
        // Every failed download counts. A pack the origin does not have is tried by one
        // download only (the open retries a cached copy that vanished, not an origin's 404).
        let failedDownloads = fixture.log.components(separatedBy: "pack fetch failed").count - 1
        #expect(failedDownloads == 1, "\(fixture.log)")
        #expect(metrics[#"odrfs_fetch_errors_total{kind="not-found"}"#] == Double(failedDownloads))
        #expect(metrics[#"odrfs_evictions_total{reason="manual"}"#] == 3)
        #expect(metrics[#"odrfs_evictions_total{reason="cache-size"}"#] ?? 0 == 0)
        #expect(metrics["odrfs_downloads_in_flight"] == 0)
        #expect(metrics["odrfs_downloads_queued"] == 0)
        #expect(metrics["odrfs_cache_bytes"] == Double(bytes("base")))
        #expect(metrics["odrfs_cache_budget_bytes"] == Double(10 * 1024 * 1024))
        #expect((metrics["odrfs_disk_free_bytes"] ?? 0) > 0)
        #expect(metrics["odrfs_retained_packs"] == 0)
        let rtt = metrics.filter { $0.key.hasPrefix("odrfs_origin_rtt_seconds{origin=") }
        #expect(rtt.count == 1 && rtt.values.allSatisfy { $0 > 0 && $0 < 10 }, "\(rtt)")
    }

    /// The gauges describe the revision the mount serves: after `odrfs update` they come from
    /// the new revision's resource manager (they stayed on the first one, issue 22).
    @Test("after odrfs update the gauges follow the new revision")
    func gaugesFollowAnUpdate() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let port = Int.random(in: 20_000..<60_000)
        try await fixture.mount(extra: ["--metrics", "127.0.0.1:\(port)"])
        #expect(await eventually { fixture.log.contains("serving metrics") || fixture.log.contains("cannot serve metrics") })
        try #require(!fixture.log.contains("cannot serve metrics"), "port \(port) taken: \(fixture.log)")
        let url = "http://127.0.0.1:\(port)/metrics"
        let before = try #require(try await scrape(url)["odrfs_cache_bytes"])
        #expect(before == Double(try await packBytesInCache(fixture)), "revision 1's figure")

        // Revision 2 adds a file to Level3 (initial-install, so fetched by the update) and
        // drops one from base: the packs in the cache change size.
        try Data(TestBundle.pseudoRandom(200_000, seed: 42)).write(to: URL(fileURLWithPath: fixture.source + "/levels/3/extra.bin"))
        try await MountUpdateTests.buildRevision2(fixture)
        let update = try await fixture.odrfs(["update", fixture.mountpoint])
        try #require(update.status == 0, "\(update.stderr)\n\(fixture.log)")
        let expected = try await packBytesInCache(fixture)
        try #require(Double(expected) != before, "the update must change the cached bytes for this test to tell the revisions apart")

        let after = try await scrape(url)
        #expect(after["odrfs_cache_bytes"] == Double(expected), "gauge \(after["odrfs_cache_bytes"] ?? -1), revision 2 caches \(expected), revision 1 cached \(before)")
        // A handle opened in revision 2 retains its pack there.
        let handle = try #require(FileHandle(forReadingAtPath: fixture.mountpoint + "/levels/3/extra.bin"))
        defer { try? handle.close() }
        #expect(try handle.read(upToCount: 4) == Data(TestBundle.pseudoRandom(200_000, seed: 42).prefix(4)))
        #expect(try await scrape(url)["odrfs_retained_packs"] == 1)
    }

    /// The bytes of packs (not metadata) the mounted revision counts in its cache, from `odrfs status --json`.
    private func packBytesInCache(_ fixture: MountFixture) async throws -> Int64 {
        let status = try await fixture.odrfs(["status", fixture.mountpoint, "--json"], timeout: .seconds(20))
        try #require(status.status == 0, "\(status.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any])
        let cache = try #require(json["cache"] as? [String: Any], "\(json)")
        let cached = try #require((cache["cachedBytes"] as? NSNumber)?.int64Value, "\(cache)")
        return cached - ((cache["metadataBytes"] as? NSNumber)?.int64Value ?? 0)
    }
}
