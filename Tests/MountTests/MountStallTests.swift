import Foundation
import ODRFSCore
import TestSupport
import Testing

/// Issue 11's stall test: a mount whose origin is a directory on another FUSE mount that
/// stops answering (an ODRFS mount over an HTTP origin that stalls mid-body), with eight
/// downloads stuck in `open(2)` on it. Everything that does not need those packs must go on
/// answering at once; the stuck downloads fail after `--fetch-timeout`; then the mount works.
@Suite("Mount stalls", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountStallTests {
    static let levels = 1...8
    static let levelBytes = 300_000

    static func levelFile(_ level: Int) -> [UInt8] {
        SyntheticBundle.bytes(levelBytes, seed: UInt8(level))
    }

    /// How long `body` takes.
    static func timed<T>(_ body: () async throws -> T) async rethrows -> (T, Duration) {
        let start = ContinuousClock.now
        let value = try await body()
        return (value, ContinuousClock.now - start)
    }

    @Test("eight downloads stuck on a stalled origin: local opens, getfattr, ls, status and Ctrl-C answer at once (not after --fetch-timeout); the stuck ones fail after --fetch-timeout; the mount then works")
    func stalledOrigin() async throws {
        // Inner bundle: eight level packs, a local (initial-install) tag and a base file.
        let inner = try MountFixture()
        let outer = try MountFixture()
        try FileManager.default.createDirectory(atPath: inner.source + "/local", withIntermediateDirectories: true)
        for level in Self.levels {
            try FileManager.default.createDirectory(atPath: inner.source + "/levels/\(level)", withIntermediateDirectories: true)
            try Data(Self.levelFile(level)).write(to: URL(fileURLWithPath: inner.source + "/levels/\(level)/data.bin"))
        }
        try "always here\n".write(toFile: inner.source + "/base.txt", atomically: true, encoding: .utf8)
        try "installed at mount time\n".write(toFile: inner.source + "/local/readme.txt", atomically: true, encoding: .utf8)
        var spec = "tags:\n  Local: [\"local/**\"]\n"
        for level in Self.levels { spec += "  L\(level): [\"levels/\(level)/**\"]\n" }
        spec += "initial-install: [Local]\n"
        try spec.write(toFile: inner.source + "/odr.yaml", atomically: true, encoding: .utf8)
        // The inner dist dir is the outer bundle's resource tree.
        let built = try await inner.odrfs(["build", inner.source, "-o", outer.source])
        try #require(built.status == 0, "\(built.stderr)")
        let innerManifest = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: outer.source + "/manifest.json")))
        // Outer bundle: each inner level pack in a tag of its own (fetched on demand from the
        // stalling origin); the inner manifest, index, base and Local packs are outer base.
        var outerSpec = "tags:\n"
        for pack in innerManifest.packs where pack.tags.contains(where: { $0.name.hasPrefix("L") && Int($0.name.dropFirst()) != nil }) {
            outerSpec += "  Inner\(pack.id.rawValue): [\"\(pack.file)\"]\n"
        }
        try outerSpec.write(toFile: outer.source + "/odr.yaml", atomically: true, encoding: .utf8)
        let outerBuilt = try await outer.odrfs(["build", outer.source, "-o", outer.dist])
        try #require(outerBuilt.status == 0, "\(outerBuilt.stderr)")
        let stalledFiles = try outer.manifest.packs.filter { !$0.tags.isEmpty }.map(\.file)
        try #require(stalledFiles.count == Self.levels.count)

        let origin = try await onFreePort { port in
            try await StallingOrigin(serving: outer.dist, in: outer.root + "/origin", stalled: stalledFiles, stallAfter: 0, port: port)
        }
        try await outer.mount(origin: origin.url, extra: ["--fetch-timeout", "60"])
        try await inner.mount(origin: outer.mountpoint, extra: ["--fetch-timeout", "20"])
        // If the test stops early, the fixtures' deinits unmount both lazily.
        defer { origin.release() }

        // Eight cold opens: each inner download blocks in open(2) on the outer mount.
        let cats = try Self.levels.map { level in
            try ChildProcess("/bin/cat", [inner.mountpoint + "/levels/\(level)/data.bin"],
                             stdout: inner.root + "/cat-\(level).out", stderr: inner.root + "/cat-\(level).err")
        }
        defer { cats.forEach { $0.stop() } }
        let stuck = await eventually(timeout: .seconds(5)) {
            ((try? inner.status()) ?? [:]).values.filter { $0.count > 2 && $0[2].hasPrefix("downloading") }.count == Self.levels.count
        }
        #expect(stuck, "the eight downloads did not start: \(inner.log)")
        await pause(.milliseconds(300))
        #expect(cats.allSatisfy { $0.isRunning }, "a reader did not wait for its stuck pack")

        // An operation held up by the stuck downloads would wait for the inner mount's
        // --fetch-timeout (20 s); one that is not answers in milliseconds (see the printed
        // times). The bound sits between the two, on top of what starting a tool costs right
        // now: the whole suite in parallel on two cores has made a spawn take 0.2 s and an
        // `ls -lR` of the tree 1.85 s (CI, session 15).
        var spawn = Duration.zero
        for tool in ["/bin/cat", "/usr/bin/getfattr", "/bin/ls"] {
            let (_, time) = try await Self.timed { try await Command.run(tool, ["--version"], timeout: .seconds(10)) }
            spawn = max(spawn, time)
        }
        let limit = Duration.milliseconds(3_000) + spawn
        let (local, localTime) = try await Self.timed { try await Command.run("/bin/cat", [inner.mountpoint + "/local/readme.txt"], timeout: .seconds(10)) }
        #expect(local.output == "installed at mount time\n")
        #expect(localTime < limit, "opening a local file took \(localTime)")
        let (attribute, attributeTime) = try await Self.timed {
            try await Command.run("/usr/bin/getfattr", ["--only-values", "-n", "user.odrfs.state", inner.mountpoint + "/levels/3/data.bin"], timeout: .seconds(10))
        }
        #expect(attribute.output.hasPrefix("downloading"))
        #expect(attributeTime < limit, "getfattr took \(attributeTime)")
        let (listing, listingTime) = try await Self.timed { try await Command.run("/bin/ls", ["-lR", inner.mountpoint], timeout: .seconds(10)) }
        #expect(listing.status == 0 && listing.output.contains("data.bin"))
        #expect(listingTime < limit, "ls -lR took \(listingTime)")
        let (status, statusTime) = try await Self.timed { try await inner.odrfs(["status", inner.mountpoint], timeout: .seconds(10)) }
        #expect(status.status == 0 && status.output.contains("downloading"))
        #expect(statusTime < limit, "odrfs status took \(statusTime)")
        // Ctrl-C of a reader waiting for a stuck pack.
        let interrupted = cats[0]
        let (stopped, stopTime) = await Self.timed { () async -> Bool in
            interrupted.signal(SIGINT)
            return await interrupted.wait(timeout: .seconds(5))
        }
        #expect(stopped)
        #expect(stopTime < limit, "Ctrl-C of a waiting cat took \(stopTime)")

        print("stall test: tool start-up \(spawn), local open \(localTime), getfattr \(attributeTime), ls -lR \(listingTime), status \(statusTime), Ctrl-C \(stopTime)")
        // The others fail after the inner mount's --fetch-timeout (20 s), not the outer's 60 s.
        // (3 s was too close: on a loaded machine the checks above took 3 s, and status no
        // longer saw a download.)
        let (_, failTime) = await Self.timed {
            for cat in cats.dropFirst() {
                #expect(await cat.wait(timeout: .seconds(30)), "a read stuck on a stalled origin never failed")
                #expect(cat.terminationStatus != 0)
            }
        }
        print("stall test: the stuck reads failed \(failTime) after the checks (--fetch-timeout 20)")
        let errors = try String(contentsOfFile: inner.root + "/cat-2.err", encoding: .utf8)
        #expect(errors.contains("Input/output error"), "\(errors)")
        #expect(inner.log.contains("stalled") || inner.log.contains("did not answer"), "no log line says the origin stalled")

        // The origin recovers: the same files now read correctly through both mounts.
        origin.release()
        let (again, _) = try await Self.timed { try await Command.run("/bin/cat", [inner.mountpoint + "/levels/2/data.bin"], timeout: .seconds(60)) }
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout == Data(Self.levelFile(2)))
        let base = try await Command.run("/bin/cat", [inner.mountpoint + "/base.txt"], timeout: .seconds(10))
        #expect(base.output == "always here\n")
        _ = try? await inner.unmount()
        _ = try? await outer.unmount()
    }
}
