import Foundation
import ODRFSCore
import TestSupport
import Testing

/// The README's site set-up: many mounts behind one ordinary HTTP cache (a real nginx with
/// `proxy_cache`), and `odrfs serve`'s cache headers that make it work.
@Suite("Mounts behind a caching proxy", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountProxyCacheTests {
    @Test("two cold mounts behind an nginx cache read the same pack: the origin serves it once")
    func oneOriginRequestPerPack() async throws {
        let first = try MountFixture()
        try await first.buildTestBundle()
        let second = try MountFixture()
        let origin = try await onFreePort { try await ServeOrigin(serving: first.dist, in: first.root + "/serve-\($0)", port: $0) }
        let cache = try await onFreePort { try await NginxCache(upstream: origin.url, in: first.root + "/cache-\($0)", port: $0) }

        try await first.mount(origin: cache.url)
        try await second.mount(origin: cache.url)
        for fixture in [first, second] {
            let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"])
            #expect(cat.status == 0 && cat.stdout == Data(TestBundle.files["levels/1/map.dat"]!), "\(cat.stderr)")
        }
        let level1 = try #require(try first.manifest.packs.first { $0.id.rawValue == "Level1" })
        let name = (level1.file as NSString).lastPathComponent
        let requests = origin.logText.split(separator: "\n").filter { $0.contains(name) }
        #expect(requests.count == 1, "the origin served Level1 \(requests.count) times: \(requests)")
        // The manifest is revalidated, never cached blindly; packs are immutable.
        let manifestHead = try await Command.run("/usr/bin/curl", ["-sI", origin.url + "manifest.json"])
        #expect(manifestHead.output.lowercased().contains("cache-control: no-cache"))
        #expect(manifestHead.output.lowercased().contains("etag:"))
        let packHead = try await Command.run("/usr/bin/curl", ["-sI", origin.url + level1.file])
        #expect(packHead.output.lowercased().contains("cache-control: public, max-age=31536000, immutable"))
    }

    @Test("--proxy: every request of the mount goes through the forward proxy, in absolute form for http://")
    func forwardProxy() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let origin = try await onFreePort { try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx-\($0)", port: $0) }
        let proxy = try await onFreePort { try await LoggingProxy(in: fixture.root + "/proxy-\($0)", port: $0) }
        try await fixture.mount(origin: origin.url, extra: ["--proxy", proxy.url])
        let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"])
        #expect(cat.status == 0 && cat.stdout == Data(TestBundle.files["levels/1/map.dat"]!), "\(cat.stderr)")
        // What curl, apt and cvmfs send for http:// URLs, and what a caching proxy can cache.
        let lines = proxy.requestLines
        #expect(lines.count == origin.requests.count && lines.count >= 4, "proxy: \(lines); origin: \(origin.requests)")
        #expect(lines.allSatisfy { $0.hasPrefix("GET http://127.0.0.1:\(origin.port)/") }, "\(lines)")
    }
}
