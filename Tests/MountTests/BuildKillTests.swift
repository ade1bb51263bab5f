import Foundation
import ODRFSCore
import TestSupport
import Testing

/// `odrfs build` killed at any instant of a rebuild leaves a complete dist dir at the output
/// path, and the next build removes what the killed one left beside it (issue 12, defect 10).
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
        }
        #expect(killedMidway > 0, "no build was killed before it finished (a build takes \(buildTime))")
        let last = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        #expect(last.status == 0, "\(last.stderr)")
        try Self.expectComplete(fixture.dist, attempt: -1)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: fixture.root).filter { $0.hasPrefix(".dist.") }
        #expect(leftovers.isEmpty, "\(leftovers)")
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
