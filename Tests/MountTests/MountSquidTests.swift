import Foundation
import ODRFSCore
import TestSupport
import Testing

/// A CernVM-FS-style site: mounts reach the origin through the site's caching forward proxy,
/// Debian's Squid as Debian configures it (plus a rule that lets the test in). http://
/// requests go to it in absolute form, so it caches the packs; https:// goes by `CONNECT`.
@Suite("Mounts behind Debian's Squid", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountSquidTests {
    static func isHit(_ result: String) -> Bool {
        result.hasPrefix("TCP_HIT/200") || result.hasPrefix("TCP_MEM_HIT/200")
    }

    @Test("two mounts behind one Squid (--proxy, then HTTP_PROXY): the origin serves each pack once, the second mount's packs are hits, the manifest is revalidated")
    func secondMountIsServedFromTheSiteCache() async throws {
        let first = try MountFixture()
        try await first.buildTestBundle()
        let second = try MountFixture()
        let origin = try await onFreePort { try await ServeOrigin(serving: first.dist, in: first.root + "/serve-\($0)", port: $0) }
        let squid = try await onFreePort { try await SquidProxy(port: $0) }
        let expected = Data(TestBundle.files["levels/1/map.dat"]!)

        try await first.mount(origin: origin.url, extra: ["--proxy", squid.url])
        let firstRead = try await Command.run("/bin/cat", [first.mountpoint + "/levels/1/map.dat"])
        #expect(firstRead.status == 0 && firstRead.stdout == expected, "\(firstRead.stderr)")
        try await second.mount(origin: origin.url, environment: ["HTTP_PROXY": squid.url])
        let secondRead = try await Command.run("/bin/cat", [second.mountpoint + "/levels/1/map.dat"])
        #expect(secondRead.status == 0 && secondRead.stdout == expected, "\(secondRead.stderr)")

        let originLines = origin.logText.split(separator: "\n")
        for pack in try first.manifest.packs {
            let name = (pack.file as NSString).lastPathComponent
            let served = originLines.filter { $0.contains(name) }.count
            #expect(served <= 1, "the origin served \(pack.id.rawValue) \(served) times")
        }
        let level1 = try #require(try first.manifest.packs.first { $0.id.rawValue == "Level1" })
        let name = (level1.file as NSString).lastPathComponent
        #expect(originLines.filter { $0.contains(name) }.count == 1)
        let level1Results = squid.results(for: name)
        #expect(level1Results.count == 2, "\(squid.accessLog)")
        #expect(level1Results.first?.hasPrefix("TCP_MISS/200 GET http://127.0.0.1:\(origin.port)/") == true, "\(level1Results)")
        #expect(level1Results.last.map(Self.isHit) == true, "the second mount's Level1 was not a hit: \(level1Results)")
        // Every pack the second mount fetched (at mount and on open) came from Squid's cache.
        let packResults = squid.results(for: "/packs/")
        #expect(packResults.count >= 4 && packResults.filter(Self.isHit).count == packResults.count / 2, "\(packResults)")
        // The manifest is never served from the cache without asking the origin.
        let manifestResults = squid.results(for: "manifest.json")
        #expect(manifestResults.count >= 2 && !manifestResults.contains(where: Self.isHit), "\(manifestResults)")
        #expect(originLines.filter { $0.contains("manifest.json") }.count >= 2)
        #expect(!squid.accessLog.contains { $0.contains(" CONNECT ") }, "\(squid.accessLog)")
    }

    /// Regression: every request went by CONNECT, which this Squid refuses for any port but
    /// 443, so the mount failed after the whole fetch timeout with `invalidProxyResponse`.
    @Test("Squid exactly as Debian ships it (CONNECT to port 443 only) carries a mount of an http:// origin")
    func squidAsDebianShipsIt() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let origin = try await onFreePort { try await ServeOrigin(serving: fixture.dist, in: fixture.root + "/serve-\($0)", port: $0) }
        let squid = try await onFreePort { try await SquidProxy(port: $0, admittingTheTest: false) }
        try await fixture.mount(origin: origin.url, extra: ["--proxy", squid.url, "--fetch-timeout", "5"])
        let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"])
        #expect(cat.status == 0 && cat.stdout == Data(TestBundle.files["levels/1/map.dat"]!), "\(cat.stderr)")
        #expect(squid.results(for: "/packs/").count == 3, "\(squid.accessLog)")
    }

    @Test("an https:// origin through the same Squid goes by CONNECT")
    func httpsOriginIsTunnelled() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let ca = try await PrivateCA(in: fixture.root + "/ca")
        let nginx = try await onFreePort {
            try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx-\($0)", port: $0,
                                  tls: (ca.serverCertificate, ca.serverKey))
        }
        let squid = try await onFreePort { try await SquidProxy(port: $0) }
        try await fixture.mount(origin: nginx.url, extra: ["--proxy", squid.url, "--ca-file", ca.certificate])
        let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"])
        #expect(cat.status == 0 && cat.stdout == Data(TestBundle.files["levels/1/map.dat"]!), "\(cat.stderr)")
        #expect(nginx.packRequests.count == 1 + 2, "Level1 plus the two packs mount installs (base, Level3)")
        // Squid logs a tunnel when it closes: after the unmount at the latest.
        #expect(try await fixture.unmount().status == 0)
        let tunnelled = await eventually(timeout: .seconds(15)) {
            squid.accessLog.contains { $0.contains("TCP_TUNNEL/200") && $0.contains("CONNECT 127.0.0.1:\(nginx.port)") }
        }
        #expect(tunnelled, "\(squid.accessLog)")
        #expect(!squid.accessLog.contains { $0.contains(" GET ") }, "\(squid.accessLog)")
    }
}
