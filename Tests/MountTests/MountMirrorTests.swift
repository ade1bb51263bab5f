import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Several origins: one refusing connections, one stalling mid-body, one serving a corrupt
/// chunk, one healthy (real servers on 127.0.0.1). Every read returns the original bytes.
@Suite("Mount with mirrors", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountMirrorTests {
    @Test("refusing, stalling, corrupt and healthy servers: every byte right, the bad ones passed over")
    func failoverAcrossMirrors() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let manifest = try fixture.manifest
        let big = try #require(manifest.packs.first { $0.id.rawValue == "Big" })
        // A copy of the dist dir whose Big pack has one byte wrong in its second chunk.
        let corruptDist = fixture.root + "/dist-corrupt"
        try FileManager.default.copyItem(atPath: fixture.dist, toPath: corruptDist)
        let bigPath = corruptDist + "/" + big.file
        var bytes = try Data(contentsOf: URL(fileURLWithPath: bigPath))
        // In a compressed pack, a byte inside the second chunk's frame.
        let secondChunk = try FrameTable(validating: big, chunkSize: manifest.chunkSize).map { Int($0.compressedRange(ofChunk: 1).lowerBound) }
            ?? Int(manifest.chunkSize.value)
        bytes[secondChunk + 10] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: bigPath))

        let refusing = "http://127.0.0.1:\(try unusedLoopbackPort())/"
        let packFiles = manifest.packs.map(\.file)
        let stalling = try await onFreePort {
            try await StallingOrigin(serving: fixture.dist, in: fixture.root + "/stall-\($0)", stalled: packFiles, stallAfter: 1000, port: $0)
        }
        let corrupt = try await onFreePort { try await NginxOrigin(serving: corruptDist, in: fixture.root + "/corrupt-\($0)", port: $0) }
        let healthy = try await onFreePort { try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/healthy-\($0)", port: $0) }

        let started = ContinuousClock.now
        try await fixture.mount(origin: refusing, extra: [
            "--mirror", stalling.url, "--mirror", corrupt.url, "--mirror", healthy.url, "--fetch-timeout", "3",
        ])
        let mountTime = ContinuousClock.now - started
        // The stalled server holds one download for at most the fetch timeout; the refused one costs an attempt.
        #expect(mountTime < .seconds(15), "mounting took \(mountTime)")
        let log = fixture.log
        #expect(log.contains("mirror failed; moving the download to the next"), "\(log)")

        for (path, contents) in TestBundle.files {
            let read = try await Command.run("/bin/cat", [fixture.mountpoint + "/" + path], timeout: .seconds(30))
            #expect(read.status == 0 && read.stdout == Data(contents), "\(path): \(read.stderr)")
        }
        let after = fixture.log
        #expect(after.contains("sent bytes that failed verification; passing it over"), "\(after)")
        // Big moved to the healthy server from its verified first chunk, with a range request.
        let bigName = (big.file as NSString).lastPathComponent
        let healthyLines = (try? String(contentsOfFile: healthy.accessLog, encoding: .utf8)) ?? ""
        #expect(healthyLines.split(separator: "\n").contains { $0.contains(bigName) && $0.contains("\" 206 ") }, "\(healthyLines)")

        let status = try await fixture.odrfs(["status", fixture.mountpoint, "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any])
        let mirrors = try #require(json["mirrors"] as? [[String: Any]])
        #expect(mirrors.count == 4)
        #expect(mirrors.first?["reachable"] as? Bool == false, "the refusing origin: \(mirrors)")
        #expect(json["online"] as? Bool == true)
        withExtendedLifetime((stalling, corrupt, healthy)) {}
    }

    @Test("a refusing main origin and a healthy mirror: mounting and a cold open cost well under 5 s more")
    func refusedOriginCostsLittle() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let healthy = try await onFreePort { try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/healthy-\($0)", port: $0) }
        let refusing = "http://127.0.0.1:\(try unusedLoopbackPort())/"
        let started = ContinuousClock.now
        try await fixture.mount(origin: refusing, extra: ["--mirror", healthy.url])
        let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"])
        let elapsed = ContinuousClock.now - started
        #expect(cat.status == 0 && cat.stdout == Data(TestBundle.files["levels/1/map.dat"]!))
        #expect(elapsed < .seconds(5), "mount and open took \(elapsed)")
    }

    @Test("the manifest's mirrors list is used when the main origin lacks a pack")
    func manifestMirrorsAndTokens() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let healthy = try await onFreePort { try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/healthy-\($0)", port: $0) }
        // The main origin (odrfs serve, with a token) holds a manifest naming the mirror; its packs are gone.
        let mainDist = fixture.root + "/dist-main"
        try FileManager.default.copyItem(atPath: fixture.dist, toPath: mainDist)
        let manifestPath = mainDist + "/manifest.json"
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: manifestPath))) as? [String: Any])
        object["mirrors"] = [healthy.url]
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: manifestPath))
        let level1 = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Level1" })
        try FileManager.default.removeItem(atPath: mainDist + "/" + level1.file)
        let tokenFile = fixture.root + "/token"
        try "main-\(UUID().uuidString)\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let main = try await onFreePort { try await ServeOrigin(serving: mainDist, in: fixture.root + "/serve-\($0)", port: $0, tokenFile: tokenFile) }

        try await fixture.mount(origin: main.url, extra: ["--token-file", tokenFile])
        let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"])
        #expect(cat.status == 0 && cat.stdout == Data(TestBundle.files["levels/1/map.dat"]!), "\(cat.stderr)\n\(fixture.log)")
        let level1Name = (level1.file as NSString).lastPathComponent
        #expect(healthy.packRequests.contains { $0.contains(level1Name) }, "the manifest's mirror was not used")
        #expect(fixture.log.contains("mirrors from the manifest added"))
    }

    @Test("--mirror URL,token-file=F: the mirror gets its own token, never the main origin's")
    func perMirrorToken() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let mainToken = fixture.root + "/main-token", mirrorToken = fixture.root + "/mirror-token"
        try "main-\(UUID().uuidString)\n".write(toFile: mainToken, atomically: true, encoding: .utf8)
        try "mirror-\(UUID().uuidString)\n".write(toFile: mirrorToken, atomically: true, encoding: .utf8)
        // The main origin lacks Level1's pack, so it can only come from the mirror.
        let mainDist = fixture.root + "/dist-main"
        try FileManager.default.copyItem(atPath: fixture.dist, toPath: mainDist)
        let level1 = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Level1" })
        try FileManager.default.removeItem(atPath: mainDist + "/" + level1.file)
        let main = try await onFreePort { try await ServeOrigin(serving: mainDist, in: fixture.root + "/main-\($0)", port: $0, tokenFile: mainToken) }
        let mirror = try await onFreePort { try await ServeOrigin(serving: fixture.dist, in: fixture.root + "/mirror-\($0)", port: $0, tokenFile: mirrorToken) }

        try await fixture.mount(origin: main.url, extra: ["--token-file", mainToken, "--mirror", mirror.url + ",token-file=" + mirrorToken])
        let cat = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/1/map.dat"])
        #expect(cat.status == 0 && cat.stdout == Data(TestBundle.files["levels/1/map.dat"]!), "\(cat.stderr)\n\(fixture.log)")
        #expect(!mirror.logText.contains("http.status=401"), "the mirror refused a token: \(mirror.logText)")
        #expect(!main.logText.contains("http.status=401"), "\(main.logText)")
    }
}

/// A loopback port nothing listens on (bound, then closed).
func unusedLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EMFILE) }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw POSIXError(.EADDRINUSE) }
    return Int(UInt16(bigEndian: address.sin_port))
}
