import Foundation
import ODRFSCore
import TestSupport
import Testing

/// `odrfs build` killed at any instant of a rebuild leaves a complete dist dir at the output
/// path, and the next build removes what the killed one left beside it (issue 12, defect 10).
/// Since builds publish revisions next to each other (issue 13), the previous revision's
/// manifest and every object it names also survive the kill intact, and the manifest at
/// the path is the previous revision or the next one, never anything between.
@Suite("odrfs build killed mid-way", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct BuildKillTests {
    @Test("a rebuild killed at any instant leaves a complete dist dir, and the next build cleans up")
    func killedRebuildLeavesACompleteDistDir() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let full = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(full.status == 0, "\(full.stderr)")
        // How long a rebuild takes, timed on a thread that waits for the child by blocking
        // (an async wait polls, and its polling interval would inflate the figure).
        let source = fixture.source, dist = fixture.dist
        let buildTime = await onDedicatedThread { () -> Duration in
            let started = ContinuousClock.now
            guard let child = try? ChildProcess(MountFixture.binary, ["build", source, "-o", dist]) else { return .seconds(1) }
            var status: Int32 = 0
            while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
            return ContinuousClock.now - started
        }
        let microseconds = max(1_000, Int(buildTime.components.seconds) * 1_000_000 + Int(buildTime.components.attoseconds / 1_000_000_000_000))
        var killedMidway = 0
        for attempt in 0..<16 {
            // A new bundle version each time, so every build really replaces the output.
            try Data("version \(attempt)\n".utf8).write(to: URL(fileURLWithPath: fixture.source + "/README.txt"))
            // Started, timed and killed on a thread of its own: a task's sleep can wake late
            // in a parallel run (past the end of the build), a thread's usleep does not.
            let delay = UInt32(clamping: Int.random(in: 0...(microseconds * 6 / 5)))
            let previousBytes = try Data(contentsOf: URL(fileURLWithPath: fixture.dist + "/" + Manifest.fileName))
            let previous = try Manifest.decode(previousBytes)
            let started = await onDedicatedThread { () -> Result<(ChildProcess, Bool), POSIXError> in
                do {
                    let child = try ChildProcess(MountFixture.binary, ["build", source, "-o", dist])
                    usleep(delay)
                    let running = child.isRunning
                    kill(child.pid, SIGKILL)
                    return .success((child, running))
                } catch {
                    return .failure(error as? POSIXError ?? POSIXError(.EIO))
                }
            }
            let (child, wasRunning) = try started.get()
            if wasRunning { killedMidway += 1 }
            #expect(await child.wait(timeout: .seconds(10)))
            try Self.expectComplete(fixture.dist, attempt: attempt)
            let now = try Data(contentsOf: URL(fileURLWithPath: fixture.dist + "/" + Manifest.fileName))
            let revision = try Manifest.decode(now).revision
            #expect(now == previousBytes || revision == previous.revision + 1, "revision \(revision) after \(previous.revision), kill \(attempt)")
            try Self.expectIntact(previous, in: fixture.dist, attempt: attempt)
        }
        #expect(killedMidway > 0, "no build was killed before it finished (a build takes \(buildTime))")
        let last = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        #expect(last.status == 0, "\(last.stderr)")
        try Self.expectComplete(fixture.dist, attempt: -1)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: fixture.root).filter { $0.hasPrefix(".dist.") }
        #expect(leftovers.isEmpty, "\(leftovers)")
        // Nothing a killed build wrote is left inside the dist dir either: no temporary file,
        // and no object that no kept revision names.
        let final = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: fixture.dist + "/" + Manifest.fileName)))
        var named = Set<String>()
        for name in try FileManager.default.contentsOfDirectory(atPath: fixture.dist + "/manifests") where name.hasSuffix(".json") {
            let kept = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: fixture.dist + "/manifests/" + name)))
            named.formUnion(kept.packs.map(\.file) + [kept.index.file])
        }
        #expect(named.isSuperset(of: final.packs.map(\.file)))
        for directory in ["", "/packs", "/index", "/manifests"] {
            let names = try FileManager.default.contentsOfDirectory(atPath: fixture.dist + directory)
            #expect(!names.contains { $0.hasPrefix(".odrfs-tmp-") }, "temporary files left in dist\(directory): \(names)")
            if directory == "/packs" || directory == "/index" {
                let prefix = String(directory.dropFirst()) + "/"
                #expect(Set(names.map { prefix + $0 }) == named.filter { $0.hasPrefix(prefix) }, "objects in dist\(directory)")
            }
        }
    }

    /// Every object `manifest` names is still in the dist dir with its size and SHA-256.
    static func expectIntact(_ manifest: Manifest, in dist: String, attempt: Int) throws {
        let index = try Data(contentsOf: URL(fileURLWithPath: dist + "/" + manifest.index.file))
        #expect(ContentHash.of(index) == manifest.index.sha256, "index of revision \(manifest.revision) after kill \(attempt)")
        for pack in manifest.packs {
            var bytes = try Data(contentsOf: URL(fileURLWithPath: dist + "/" + pack.file))
            // A compressed pack is checked by what it decompresses to (zstd(1), as a user would).
            if pack.compression != nil { bytes = try Self.decompressed(dist + "/" + pack.file) }
            #expect(ContentHash.of(bytes) == pack.sha256, "pack \(pack.id) of revision \(manifest.revision) after kill \(attempt)")
        }
    }

    /// The bytes `zstd -dc` makes of a compressed pack.
    static func decompressed(_ path: String) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/zstd")
        process.arguments = ["-dcq", path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "zstd -d \(path)")
        return data
    }

    /// The manifest decodes, the index matches it, and every pack has its size.
    static func expectComplete(_ dist: String, attempt: Int) throws {
        let data = try #require(FileManager.default.contents(atPath: dist + "/" + Manifest.fileName), "no manifest after kill \(attempt)")
        let manifest = try Manifest.decode(data)
        let index = try FileIndex(contentsOf: dist + "/" + manifest.index.file)
        try index.validate(against: manifest)
        for pack in manifest.packs {
            let attributes = try FileManager.default.attributesOfItem(atPath: dist + "/" + pack.file)
            // A compressed pack's file is its frames; the manifest records their total.
            let expected = pack.compression?.bytes.value ?? pack.bytes.value
            #expect((attributes[.size] as? NSNumber)?.int64Value == expected, "pack \(pack.id) after kill \(attempt)")
        }
    }
}
