import FaultOriginSupport
import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Issue 26, item 2: a server that sends a few bytes and stalls (or resets) on every
/// attempt held `odrfs mount`, an open and `odrfs update` for ever, since each resumed
/// attempt's bytes counted as progress. Now a transfer slower than `--low-speed-limit` is
/// no progress across attempts, and each gives up after about `--fetch-timeout`.
@Suite("Trickling servers", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct TrickleMountTests {
    static let fetchTimeout = 3

    static func withOrigin(_ fixture: MountFixture, _ body: (FaultOrigin) async throws -> Void) async throws {
        try await withFaultOrigin(serving: fixture.dist, body)
    }

    static func packPath(_ fixture: MountFixture, _ id: String) throws -> String {
        "/" + (try #require(try fixture.manifest.packs.first { $0.id.rawValue == id })).file
    }

    static let trickle = Array(repeating: FaultOrigin.Behaviour.trickle(after: 100), count: 100_000)

    @Test("an initial-install pack that trickles: odrfs mount fails with a clear message after about --fetch-timeout")
    func trickledMount() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await Self.withOrigin(fixture) { origin in
            origin.script(try Self.packPath(fixture, "Level3"), Self.trickle)
            let started = ContinuousClock.now
            let mount = try await fixture.odrfs(["mount", origin.baseURL, fixture.mountpoint, "--cache", fixture.cache,
                                                 "--fetch-timeout", "\(Self.fetchTimeout)"], timeout: .seconds(90))
            let took = ContinuousClock.now - started
            #expect(mount.status != 0, "the mount succeeded on a trickle")
            #expect(mount.stderr.contains("--low-speed-limit"), "\(mount.stderr)")
            // Two fetch timeouts, the last attempt's read timeout and start-up; never the
            // minutes of one resumed attempt per 100 bytes.
            #expect(took < .seconds(30), "odrfs mount took \(took)")
        }
    }

    @Test("a pack that trickles on a running mount: the open fails with EIO after about --fetch-timeout while every other file reads")
    func trickledOpen() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await Self.withOrigin(fixture) { origin in
            try await fixture.mount(origin: origin.baseURL, extra: ["--fetch-timeout", "\(Self.fetchTimeout)"])
            origin.script(try Self.packPath(fixture, "Level1"), Self.trickle)
            let started = ContinuousClock.now
            let stuckPath = fixture.mountpoint + "/levels/1/map.dat"
            async let stuck = Command.run("/bin/cat", [stuckPath], timeout: .seconds(90))
            // Meanwhile everything else answers: a base file and another pack.
            for _ in 0..<3 {
                let base = try await Command.run("/bin/cat", [fixture.mountpoint + "/README.txt"], timeout: .seconds(5))
                #expect(base.status == 0 && base.stdout == Data(TestBundle.files["README.txt"]!))
                await pause(.milliseconds(300))
            }
            let level2 = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/2/map.dat"], timeout: .seconds(10))
            #expect(level2.status == 0 && level2.stdout == Data(TestBundle.files["levels/2/map.dat"]!), "\(level2.stderr)")
            let result = try await stuck
            let took = ContinuousClock.now - started
            #expect(result.status != 0 && result.stderr.contains("Input/output error"), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(took < .seconds(30), "the open took \(took)")
            #expect(fixture.log.contains("--low-speed-limit"), "no log line says why")
            #expect(origin.requests(of: try Self.packPath(fixture, "Level1")).count >= 2)
        }
    }

    @Test("an update whose mirror corrupts every pack and whose origin resets every pack request gives up after about --fetch-timeout, stays on its revision, and unmount ends the daemon")
    func hopelessUpdate() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let mirror = try await FaultOrigin.start()
        do {
            try await Self.withOrigin(fixture) { origin in
                try await Self.hopelessUpdate(fixture, origin: origin, mirror: mirror)
            }
        } catch {
            await mirror.stop()
            throw error
        }
        await mirror.stop()
    }

    static func hopelessUpdate(_ fixture: MountFixture, origin: FaultOrigin, mirror: FaultOrigin) async throws {
        try await fixture.mount(origin: origin.baseURL, extra: ["--fetch-timeout", "\(fetchTimeout)"])
        let daemon = try #require(fixture.daemonPID())
        let oldMap = Data(TestBundle.files["levels/3/map.dat"]!)
        // Revision 2 changes the initial-install file levels/3/map.dat (pack Level3).
        try Data(TestBundle.pseudoRandom(30_000, seed: 77)).write(to: URL(fileURLWithPath: fixture.source + "/levels/3/map.dat"))
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
        let packPath = try Self.packPath(fixture, "Level3")
        try origin.setFiles(from: fixture.dist)
        try mirror.setFiles(from: fixture.dist)
        // The mirror corrupts the pack; the manifest lists the mirror; the origin resets
        // every request for the pack after a few bytes.
        var corrupt = try Array(Data(contentsOf: URL(fileURLWithPath: fixture.dist + packPath)))
        for index in stride(from: 0, to: corrupt.count, by: 997) { corrupt[index] ^= 0x5A }
        mirror.setFile(packPath, corrupt)
        var manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: fixture.dist + "/manifest.json"))) as? [String: Any])
        manifest["mirrors"] = [mirror.baseURL]
        origin.setFile("/manifest.json", Array(try JSONSerialization.data(withJSONObject: manifest)))
        origin.script(packPath, Array(repeating: .reset(after: 150), count: 100_000))

        let started = ContinuousClock.now
        let update = try await fixture.odrfs(["update", fixture.mountpoint], timeout: .seconds(120))
        let took = ContinuousClock.now - started
        #expect(update.status != 0, "the update succeeded: \(update.stdout)")
        #expect(update.stderr.contains("Level3") || update.stderr.contains("--fetch-timeout"), "the update does not say why: \(update.stderr)")
        // About --fetch-timeout (3 s) after the check, never the minute and more it took.
        #expect(took < .seconds(15), "odrfs update took \(took)")
        // Still revision 1.
        let map = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/3/map.dat"])
        #expect(map.status == 0 && map.stdout == oldMap)
        // Unmount ends the daemon promptly.
        #expect(try await fixture.unmount().status == 0)
        let exited = await eventually(timeout: .seconds(10)) { kill(daemon, 0) != 0 }
        #expect(exited, "the daemon is still running after odrfs unmount")
    }

    @Test("odrfs unmount during an update that cannot finish: the daemon exits promptly and the update command returns")
    func unmountDuringAStuckUpdate() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try await Self.withOrigin(fixture) { origin in
            // A long --fetch-timeout: the update would hold on for 30 s and more.
            try await fixture.mount(origin: origin.baseURL, extra: ["--fetch-timeout", "30"])
            let daemon = try #require(fixture.daemonPID())
            try Data(TestBundle.pseudoRandom(30_000, seed: 78)).write(to: URL(fileURLWithPath: fixture.source + "/levels/3/map.dat"))
            let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
            try #require(build.status == 0, "\(build.stderr)")
            try origin.setFiles(from: fixture.dist)
            let packPath = try Self.packPath(fixture, "Level3")
            origin.script(packPath, Array(repeating: .stall, count: 1000))
            let mountpoint = fixture.mountpoint
            let binary = MountFixture.binary
            async let update = Command.run(binary, ["update", mountpoint], timeout: .seconds(90))
            let asked = await eventually(timeout: .seconds(20)) { !origin.requests(of: packPath).isEmpty }
            #expect(asked, "the update never asked for the pack")
            let started = ContinuousClock.now
            let unmount = try await fixture.unmount()
            #expect(unmount.status == 0, "\(unmount.stderr)")
            let exited = await eventually(timeout: .seconds(15)) { kill(daemon, 0) != 0 }
            #expect(exited, "the daemon is still running \(ContinuousClock.now - started) after odrfs unmount")
            let result = try await update
            #expect(result.status != 0, "the update reports success after an unmount: \(result.stdout)")
            #expect(ContinuousClock.now - started < .seconds(15), "odrfs update returned only after \(ContinuousClock.now - started)")
        }
    }
}
