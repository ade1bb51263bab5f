import Foundation
import ODRFSControl
import Synchronization
import TestSupport
import Testing

/// Issue 11's storm test: for 30 s, 1,000 control connections held open (some asking
/// `status`), 64 concurrent readers over 16 packs checking every byte, and a purge of
/// every tag every 10 ms on a cache budget of a few packs. Nothing may hang, every read
/// must be correct, and the daemon's threads, descriptors and memory must not grow.
/// Run it alone with `swift test --filter Storm`. In the whole suite it waits until no
/// `.timingSensitive` test runs (it saturates two cores on purpose), hence its longer limit.
@Suite("Storm", .serialized, .disturbsTheMachine, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(5)))
struct StormTests {
    static let tags = 16
    static let filesPerTag = 4
    static let connections = 1_000
    static let readers = 64
    static let duration = Duration.seconds(30)
    static let warmUp = Duration.seconds(5)

    /// Relative path → contents: four files of 8–100 KB per tag, each tag its own pack.
    static let files: [String: [UInt8]] = {
        var files: [String: [UInt8]] = [:]
        for tag in 0..<tags {
            for file in 0..<filesPerTag {
                let size = 8_000 + (tag * 7 + file * 13) % 23 * 4_000
                files["t\(tag)/f\(file).bin"] = TestBundle.pseudoRandom(size, seed: UInt64(tag * 100 + file + 1))
            }
        }
        return files
    }()

    @Test("storm: 1,000 control connections, 64 readers over 16 packs, a purge every 10 ms for 30 s")
    func storm() async throws {
        let fixture = try MountFixture()
        for (path, bytes) in Self.files {
            let full = fixture.source + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: full))
        }
        try "README\n".write(toFile: fixture.source + "/README.txt", atomically: true, encoding: .utf8)
        var spec = "tags:\n"
        for tag in 0..<Self.tags { spec += "  T\(tag): [\"t\(tag)/**\"]\n" }
        try spec.write(toFile: fixture.source + "/odr.yaml", atomically: true, encoding: .utf8)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
        let packBytes = try fixture.manifest.packs.map(\.bytes.value).max() ?? 0
        // A budget of about three packs: the readers' downloads evict each other besides the purges.
        try await fixture.mount(extra: ["--cache-size", String(3 * packBytes)])
        let pid = try #require(fixture.daemonPID(), "no daemon pid")
        let socketPath = RuntimeDirectory(clientOfMountpoint: fixture.mountpoint).controlSocket
        let loadFiles = [fixture.cache + "/packs/", fixture.cache + "/tmp/", fixture.cache + "/trash/", fixture.dist + "/"]

        let storm = Storm(mountpoint: fixture.mountpoint, files: Self.files)
        let lines = await onDedicatedThread(name: "storm-connect") {
            (0..<Self.connections).compactMap { _ in ControlLine.connect(to: socketPath) }
        }
        defer { lines.forEach { $0.close() } }
        try #require(lines.count == Self.connections, "only \(lines.count) control connections opened")
        // Every tenth connection asks for the status once: each is really served.
        let firstAnswers = await onDedicatedThread(name: "storm-status") {
            stride(from: 0, to: lines.count, by: 10).filter { index in
                lines[index].send(#"{"v":1,"id":1,"op":"status"}"#)
                    && lines[index].readLine(timeout: .seconds(20))?.contains(#""ok":true"#) == true
            }.count
        }
        #expect(firstAnswers == Self.connections / 10, "status on the held connections: \(firstAnswers) answers")

        let started = ContinuousClock.now
        storm.start(readers: Self.readers, purgeLine: lines[1], statusLines: stride(from: 2, to: lines.count, by: 50).map { lines[$0] })
        try? await Task.sleep(until: started + Self.warmUp)
        let warm = try #require(ProcessSample(pid, loadFiles: loadFiles), "the daemon died during the warm-up")
        try? await Task.sleep(until: started + Self.duration)
        let end = ProcessSample(pid, loadFiles: loadFiles)
        storm.stop()
        let finished = await eventually(timeout: .seconds(30)) { storm.finishedWorkers == storm.workerCount }
        #expect(finished, "\(storm.workerCount - storm.finishedWorkers) storm workers hung (a read, a purge or a status never answered)")
        // Quiet again (the control connections still open): what the load held is released.
        try? await Task.sleep(for: .seconds(1))
        let quiet = ProcessSample(pid, loadFiles: loadFiles)

        let stats = storm.stats.withLock { $0 }
        print("storm: \(stats.reads) reads (\(stats.bytes) bytes), \(stats.purges) purges, \(stats.statuses) status replies, \(stats.interrupted) interrupted opens in \(ContinuousClock.now - started)")
        print("storm: daemon after warm-up: \(warm)")
        print("storm: daemon at the end:    \(end.map(String.init(describing:)) ?? "gone")")
        print("storm: daemon when quiet:    \(quiet.map(String.init(describing:)) ?? "gone")")
        print("storm: descriptors by kind: warm-up \(warm.kinds), end \(end?.kinds ?? [:])")
        #expect(stats.failures.isEmpty, "\(stats.failures.count) failures, first: \(stats.failures.prefix(5))")
        #expect(stats.reads > Self.readers, "the readers made no progress")
        // The readers block every signal, so nothing interrupts their opens: an EINTR
        // here would be the daemon answering an interrupt no one sent.
        #expect(stats.interrupted == 0, "\(stats.interrupted) opens failed with EINTR")
        #expect(stats.purges > 100, "only \(stats.purges) purges answered")
        #expect(stats.statuses > 10, "only \(stats.statuses) status replies")
        // The purges and the budget really evicted: packs were fetched again and again.
        let fetches = try fixture.status().values.compactMap { $0.count > 5 ? Int($0[5]) : nil }.reduce(0, +)
        print("storm: \(fetches) pack fetches for \(Self.tags) packs")
        #expect(fetches > 4 * Self.tags, "only \(fetches) fetches: nothing was evicted")
        let last = try #require(end, "the daemon died during the storm")
        let rest = try #require(quiet, "the daemon died after the storm")
        #expect(last.threads <= warm.threads + 4, "threads grew: \(warm) → \(last)")
        // Pack, download and origin files follow the load (one per open reader, two or
        // three per download); all the others (the 1,000 connections among them) stay put.
        #expect(last.otherDescriptors <= warm.otherDescriptors + 16, "descriptors grew: \(warm.kinds) → \(last.kinds)")
        // (Plus one kept descriptor per local pack, base included.)
        #expect(last.loadDescriptors <= 2 * Self.readers + 4 * Self.tags + 1, "pack/download/origin descriptors beyond the load: \(last.kinds)")
        #expect(last.residentKiB <= warm.residentKiB * 3 / 2 + 32 * 1024, "memory grew: \(warm) → \(last)")
        #expect(rest.threads <= warm.threads + 4, "threads grew: \(warm) → quiet \(rest)")
        #expect(rest.otherDescriptors <= warm.otherDescriptors + 16, "descriptors grew: \(warm.kinds) → quiet \(rest.kinds)")
        // With no reader left, only local packs keep a descriptor (one each, shared by later
        // opens: CacheLedger+KeptFiles); evicted packs must have closed theirs.
        let localPacks = try fixture.status().values.count { $0.count > 2 && ($0[2] == "downloaded" || $0[2] == "in-use") }
        #expect(rest.loadDescriptors <= 2 + localPacks, "pack/download/origin files still open with no reader left (\(localPacks) local packs): \(rest.kinds)")
        #expect(kill(pid, 0) == 0, "the daemon is gone")
        #expect(try await fixture.unmount().status == 0)
    }
}
