import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Mounts over HTTP: nginx (a server no one here wrote) and `odrfs serve`, with the
/// origins' access logs as the witness of what was fetched.
@Suite("Mount over HTTP", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountHTTPTests {
    func packFile(_ fixture: MountFixture, _ id: String) throws -> String {
        "/" + (try #require(try fixture.manifest.packs.first { $0.id.rawValue == id })).file
    }

    @Test("ls -lR touches no pack; cat fetches exactly one pack, once", arguments: OriginKind.allCases)
    func fetchesOnOpenOnly(origin kind: OriginKind) async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let nginx = try await kind.start(serving: fixture.dist, in: fixture.root + "/origin")
        try await fixture.mount(origin: nginx.url)
        let initial = nginx.packRequests
        #expect(initial.count == 2, "base and the initial-install pack: \(initial)")
        let listing = try await Command.run("/bin/ls", ["-lR", fixture.mountpoint])
        #expect(listing.status == 0)
        let stat = try await Command.run("/usr/bin/find", [fixture.mountpoint, "-type", "f", "-size", "+0"])
        #expect(stat.status == 0)
        #expect(nginx.packRequests == initial, "metadata operations fetched packs")

        let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/2/map.dat"])
        #expect(cat.stdout == Data(TestBundle.files["levels/2/map.dat"]!))
        let level2 = try packFile(fixture, "Level2")
        #expect(nginx.packRequests.count == initial.count + 1)
        #expect(nginx.packRequests.last?.contains(level2) == true)
        _ = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/2/ünïcödé name.txt"])
        #expect(nginx.packRequests.count == initial.count + 1, "a local pack was fetched again")
    }

    @Test("32 concurrent cold readers over several packs make one request per pack", arguments: OriginKind.allCases)
    func concurrentReaders(origin kind: OriginKind) async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let nginx = try await kind.start(serving: fixture.dist, in: fixture.root + "/origin")
        try await fixture.mount(origin: nginx.url)
        let paths = ["levels/1/map.dat", "levels/1/sprites/hero.png", "levels/2/map.dat", "shared/forest/tree.png", "big.bin"]
        let readers = try (0..<32).map { index in
            try ChildProcess("/usr/bin/cmp", [fixture.mountpoint + "/" + paths[index % paths.count], fixture.source + "/" + paths[index % paths.count]])
        }
        #expect(await eventually(timeout: .seconds(60)) { readers.allSatisfy { !$0.isRunning } })
        readers.forEach { $0.stop() }
        for reader in readers { #expect(reader.terminationStatus == 0) }
        for pack in ["Level1", "Level2", "Level1+Level2"] {
            let file = try packFile(fixture, pack)
            #expect(nginx.packRequests.filter { $0.contains(file) }.count == 1, "\(pack) requested more than once")
        }
        // Big: one download, and the end of big.bin (3 MiB) asked for by range at its cold open
        // (archives are read from their end first), at most once however many readers opened it.
        let bigFile = try packFile(fixture, "Big")
        let big = nginx.packRequests.filter { $0.contains(bigFile) }.count
        #expect(big >= 1 && big <= 2, "Big requested \(big) times")
    }

    @Test("origin down: opens fail with EIO within the fetch timeout, the mount stays healthy, and succeed once the origin is back")
    func originDownAndBack() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        var nginx: NginxOrigin? = try await onFreePort { try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx-\($0)", port: $0) }
        let url = nginx!.url
        try await fixture.mount(origin: url, extra: ["--fetch-timeout", "2"])
        let port = try #require(Int(url.split(separator: ":").last!.filter(\.isNumber)))
        nginx = nil
        // SIGTERM only starts nginx's shutdown: until its port refuses connections it may still
        // answer (a loaded run saw the open below succeed).
        try await waitUntilRefused(url)
        let started = ContinuousClock.now
        let failed = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"], timeout: .seconds(30))
        #expect(failed.status != 0)
        #expect(failed.stderr.contains("Input/output error"), "\(failed.stderr)")
        #expect(ContinuousClock.now - started < .seconds(20), "the failure was not bounded")
        #expect(fixture.log.contains("open failed"))
        // Healthy meanwhile: local packs and metadata still work.
        let local = try await Command.run("/bin/cat", [fixture.mountpoint + "/README.txt"])
        #expect(local.status == 0 && local.stdout == Data(TestBundle.files["README.txt"]!))
        #expect(try await Command.run("/bin/ls", ["-l", fixture.mountpoint + "/levels/1"]).status == 0)

        let revived = try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx2", port: port)
        let retried = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"])
        #expect(retried.status == 0, "\(retried.stderr)")
        #expect(retried.stdout == Data(TestBundle.files["levels/1/map.dat"]!))
        withExtendedLifetime(revived) {}
    }

    @Test("odrfs serve with a token: without it the mount fails clearly; with it everything works; the token never shows")
    func serveWithToken() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let token = "s3cr3t-\(UUID().uuidString)"
        let tokenFile = fixture.root + "/token"
        try (token + "\n").write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let server = try await onFreePort { try await ServeOrigin(serving: fixture.dist, in: fixture.root + "/serve-\($0)", port: $0, tokenFile: tokenFile) }
        let url = server.url

        let refused = try await fixture.odrfs(["mount", url, fixture.mountpoint, "--cache", fixture.cache, "--fetch-timeout", "5"])
        #expect(refused.status == 1)
        #expect(refused.stderr.lowercased().contains("401") || refused.stderr.lowercased().contains("unauthorized") || refused.stderr.lowercased().contains("token"), "\(refused.stderr)")

        try await fixture.mount(origin: url, extra: ["--token-file", tokenFile])
        let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/shared/forest/tree.png"])
        #expect(cat.stdout == Data(TestBundle.files["shared/forest/tree.png"]!))
        let pid = try #require(fixture.daemonPID())
        let commandLine = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
        #expect(!commandLine.contains(token), "the token is in the process listing")
        #expect(!fixture.log.contains(token), "the token is in the mount log")
        let serverLog = server.logText
        #expect(!serverLog.contains(token), "the token is in the server log")
        #expect(serverLog.contains("401"), "the refused mount left no trace in the access log")
    }

    @Test("HTTPS with a private CA: without --ca-file the mount fails and names the fix; with it files read")
    func httpsWithPrivateCA() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let ca = try await PrivateCA(in: fixture.root + "/ca")
        let nginx = try await onFreePort {
            try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx-\($0)", port: $0,
                            tls: (ca.serverCertificate, ca.serverKey))
        }
        #expect(nginx.url.hasPrefix("https://"))

        let untrusted = try await fixture.odrfs(["mount", nginx.url, fixture.mountpoint, "--cache", fixture.cache, "--fetch-timeout", "5"])
        #expect(untrusted.status == 1)
        #expect(untrusted.stderr.contains("--ca-file"), "\(untrusted.stderr)")

        try await fixture.mount(origin: nginx.url, extra: ["--ca-file", ca.certificate])
        let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"])
        #expect(cat.status == 0, "\(cat.stderr)")
        #expect(cat.stdout == Data(TestBundle.files["levels/1/map.dat"]!))
        #expect(nginx.packRequests.count == 1 + 2, "Level1 plus the two packs mount installs (base, Level3)")
    }

    @Test("HTTP/2 over TLS: with the connection hook that opens the windows, streams go over HTTP/2, ranges readers wait for over HTTP/1.1 connections of their own, and every file reads back")
    func http2WithOpenWindows() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let ca = try await PrivateCA(in: fixture.root + "/ca")
        // Whole files at 1 MiB/s: big.bin's pack (3 MiB) streams for seconds, so the cold
        // open's request for its end is served by range while the stream is far from it.
        let nginx = try await onFreePort {
            try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx-\($0)", port: $0,
                                  tls: (ca.serverCertificate, ca.serverKey), http2: true, wholeFileRate: "1m")
        }
        try await fixture.mount(origin: nginx.url, extra: ["--ca-file", ca.certificate])
        let big = Data(TestBundle.files["big.bin"]!)
        // The open returns once the end is proven (by range), long before the stream's 3 s.
        let file = try await HeldFile.open(fixture.mountpoint + "/big.bin")
        let tail = await file.read(at: Int64(big.count - 65_536), count: 65_536)
        file.close()
        #expect(tail == big.suffix(65_536))
        for path in ["big.bin", "levels/1/map.dat", "levels/2/map.dat"] {
            #expect(await readThroughMount(fixture.mountpoint + "/" + path) == Data(TestBundle.files[path]!), "\(path)")
        }
        let log = (try? String(contentsOfFile: nginx.accessLog, encoding: .utf8)) ?? ""
        let lines = log.split(separator: "\n")
        let ranges = lines.filter { $0.contains("\" 206 ") }
        let whole = lines.filter { !$0.contains("\" 206 ") }
        #expect(!whole.isEmpty && whole.allSatisfy { $0.contains("HTTP/2.0") }, "not every whole-file request went over HTTP/2: \(log)")
        #expect(!ranges.isEmpty, "the end of big.bin was not fetched by range: \(log)")
        #expect(ranges.allSatisfy { $0.contains("HTTP/1.1") }, "a reader's range did not go over HTTP/1.1: \(log)")
        #expect(try await fixture.unmount().status == 0)
    }

    @Test("prefetch tags arrive over HTTP without any open, in order", arguments: OriginKind.allCases)
    func prefetchOverHTTP(origin kind: OriginKind) async throws {
        let fixture = try MountFixture()
        try MountCacheTests.writeLevels(to: fixture.source)
        var spec = try String(contentsOfFile: fixture.source + "/odr.yaml", encoding: .utf8)
        spec += "prefetch: [Level4, Level2]\n"
        try spec.write(toFile: fixture.source + "/odr.yaml", atomically: true, encoding: .utf8)
        #expect(try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist]).status == 0)
        let origin = try await kind.start(serving: fixture.dist, in: fixture.root + "/origin")
        try await fixture.mount(origin: origin.url)
        #expect(await eventually { (try? fixture.state(of: "Level2")) == "downloaded" }, "prefetch did not complete")
        let level4 = try packFile(fixture, "Level4")
        let level2 = try packFile(fixture, "Level2")
        let requests = origin.packRequests
        let first = try #require(requests.firstIndex { $0.contains(level4) })
        let second = try #require(requests.firstIndex { $0.contains(level2) })
        #expect(first < second, "prefetch order not kept: \(requests)")
        #expect(try fixture.state(of: "Level3") == "not-downloaded")
    }

    @Test("with the origin down at mount time, the cached bundle version mounts offline: local packs read, others fail with EIO")
    func offlineMount() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        var origin: NginxOrigin? = try await onFreePort { try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx-\($0)", port: $0) }
        let url = origin!.url
        try await fixture.mount(origin: url, extra: ["--fetch-timeout", "2"])
        _ = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/2/map.dat"])
        #expect(try await fixture.unmount().status == 0)
        origin = nil
        try await fixture.mount(origin: url, extra: ["--fetch-timeout", "2"])
        #expect(fixture.log.contains("mounting the cached bundle version offline"))
        let local = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/2/map.dat"])
        #expect(local.status == 0 && local.stdout == Data(TestBundle.files["levels/2/map.dat"]!))
        let remote = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"], timeout: .seconds(30))
        #expect(remote.status != 0 && remote.stderr.contains("Input/output error"))
    }
}
