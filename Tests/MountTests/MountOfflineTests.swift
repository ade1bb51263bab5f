import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Fail fast and offline mode: with the only origin down an open fails within 5 s (not the
/// 30 s fetch timeout), `--offline` never contacts the origin, status says whether the mount
/// is online and when the origin last answered, and a mount goes back online by itself.
@Suite("Mount offline and fail-fast", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountOfflineTests {
    /// `odrfs status --json` as a dictionary.
    func statusJSON(_ fixture: MountFixture) async throws -> [String: Any] {
        let result = try await fixture.odrfs(["status", fixture.mountpoint, "--json"])
        try #require(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
    }

    func port(of url: String) throws -> Int {
        try #require(Int(url.split(separator: ":").last!.filter(\.isNumber)))
    }

    @Test("only origin down: cat fails within 5 s with EIO; status says offline; back online by itself")
    func originDownFailsFastAndComesBack() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        var nginx: NginxOrigin? = try await onFreePort { try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx-\($0)", port: $0) }
        let url = nginx!.url
        try await fixture.mount(origin: url)   // the default --fetch-timeout of 30 s
        var status = try await statusJSON(fixture)
        #expect(status["online"] as? Bool == true)
        #expect(status["last_origin_contact"] is String)
        let mirrors = try #require(status["mirrors"] as? [[String: Any]])
        #expect(mirrors.count == 1 && mirrors.first?["reachable"] as? Bool == true && mirrors.first?["http_status"] as? Int == 200)
        #expect(mirrors.first?["rtt_ms"] is Double)
        nginx = nil
        try await waitUntilRefused(url)

        let started = ContinuousClock.now
        let failed = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"], timeout: .seconds(40))
        let elapsed = ContinuousClock.now - started
        #expect(failed.status != 0 && failed.stderr.contains("Input/output error"), "\(failed.stderr)")
        #expect(elapsed < .seconds(5), "the open took \(elapsed) to fail")
        let log = fixture.log
        #expect(log.components(separatedBy: "open failed").count == 2, "one line for the failed open: \(log)")
        #expect(!log.contains("pack fetch failed") && !log.contains("fetch attempt failed"), "\(log)")
        status = try await statusJSON(fixture)
        #expect(status["online"] as? Bool == false)
        #expect(status["last_origin_contact"] is String, "the last contact is kept while offline")
        let text = try String(contentsOfFile: fixture.mountpoint + "/.odrfs/status", encoding: .utf8)
        #expect(text.contains("origin: OFFLINE"), "\(text)")

        let revived = try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx2", port: try port(of: url))
        // Nobody opens anything: the background probe alone finds the origin again.
        let online = await eventually(timeout: .seconds(20)) { (try? await statusJSON(fixture))?["online"] as? Bool == true }
        #expect(online, "the mount did not come back online by itself")
        #expect(fixture.log.contains("back online"))
        let retried = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"])
        #expect(retried.status == 0 && retried.stdout == Data(TestBundle.files["levels/1/map.dat"]!), "\(retried.stderr)")
        withExtendedLifetime(revived) {}
    }

    @Test("--offline: the origin is never contacted; cached files read, others fail at once with EIO")
    func explicitOffline() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let nginx = try await onFreePort { try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx-\($0)", port: $0) }
        try await fixture.mount(origin: nginx.url)
        _ = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/2/map.dat"])
        #expect(try await fixture.unmount().status == 0)
        let before = nginx.requests.count

        try await fixture.mount(origin: nginx.url, extra: ["--offline"])
        let local = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/2/map.dat"])
        #expect(local.status == 0 && local.stdout == Data(TestBundle.files["levels/2/map.dat"]!))
        let started = ContinuousClock.now
        let remote = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"], timeout: .seconds(30))
        #expect(remote.status != 0 && remote.stderr.contains("Input/output error"), "\(remote.stderr)")
        #expect(ContinuousClock.now - started < .seconds(1), "--offline did not fail at once")
        let status = try await statusJSON(fixture)
        #expect(status["online"] as? Bool == false)
        #expect(status["last_origin_contact"] is String, "the cached manifest's age is unknown")
        await pause(.seconds(3))   // longer than the probe's interval: it must not run either
        #expect(nginx.requests.count == before, "an --offline mount contacted the origin: \(nginx.requests.suffix(3))")
    }

    /// The mount does not hash the packs a lost index no longer vouches for before it is
    /// ready (UnverifiedPackTests): here, the daemon's wiring of the two ways back.
    @Test("a lost cache index: an --offline remount checks the packs on disk again and serves them")
    func lostIndexOffline() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await fixture.mount()
        _ = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/2/map.dat"])
        #expect(try await fixture.unmount().status == 0)
        // Gone, as a deleted or damaged index is (or a power cut's, before it was durable).
        for suffix in ["", "-wal", "-shm"] { unlink(fixture.cache + "/index.sqlite" + suffix) }

        try await fixture.mount(extra: ["--offline"])
        // Level3 (initial install) came back through its download, Level2 through the background pass.
        #expect(try fixture.state(of: "Level3") == "downloaded", "\(fixture.log)")
        #expect(await eventually { (try? fixture.state(of: "Level2")) == "downloaded" }, "\(fixture.log)")
        let local = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/2/map.dat"])
        #expect(local.status == 0 && local.stdout == Data(TestBundle.files["levels/2/map.dat"]!), "\(local.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.cache + "/unverified").isEmpty)
    }

    @Test("origin down at mount time: mounts offline within seconds, announced, and goes online once the origin returns")
    func automaticOfflineAtMount() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        var nginx: NginxOrigin? = try await onFreePort { try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx-\($0)", port: $0) }
        let url = nginx!.url
        try await fixture.mount(origin: url)
        #expect(try await fixture.unmount().status == 0)
        nginx = nil
        try await waitUntilRefused(url)

        let started = ContinuousClock.now
        try await fixture.mount(origin: url)
        #expect(ContinuousClock.now - started < .seconds(10), "mounting offline took \(ContinuousClock.now - started)")
        #expect(fixture.log.contains("mounting the cached bundle version offline"))
        let status = try await statusJSON(fixture)
        #expect(status["online"] as? Bool == false)
        #expect(status["last_origin_contact"] is String)

        let revived = try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx2", port: try port(of: url))
        #expect(await eventually(timeout: .seconds(20)) { (try? await statusJSON(fixture))?["online"] as? Bool == true })
        let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"])
        #expect(cat.status == 0 && cat.stdout == Data(TestBundle.files["levels/1/map.dat"]!), "\(cat.stderr)")
        withExtendedLifetime(revived) {}
    }
}
