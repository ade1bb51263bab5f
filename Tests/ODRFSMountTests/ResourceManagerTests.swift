import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import ODRFSRuntime
import ODRFSStore
import TestSupport
import Testing

@Suite("ResourceManager")
struct ResourceManagerTests {
    let bundle = SyntheticBundle(packContents: [
        (.base, SyntheticBundle.bytes(100, seed: 1)),
        (PackID("Level1"), SyntheticBundle.bytes(10_000, seed: 2)),
        (PackID("Level1+Level2"), SyntheticBundle.bytes(5_000, seed: 3)),
    ])
    let level1 = PackNumber(1)

    func makeManager(origin: FakeOrigin, cache: String, clock: @escaping @Sendable () -> Date = Date.init) throws -> ResourceManager {
        let logger = Logger(label: "test")
        let store = try PackStore(root: cache, logger: logger)
        let downloader = PackDownloader(origin: origin, store: store, chunkSize: bundle.manifest.chunkSize, logger: logger)
        return try ResourceManager(manifest: bundle.manifest, store: store, downloader: downloader, logger: logger, clock: clock)
    }

    @Test("32 concurrent retains of a remote pack cause exactly one download")
    func singleFlight() async throws {
        let cache = try TemporaryDirectory()
        let origin = FakeOrigin(files: bundle.files, gate: Gate())
        let manager = try makeManager(origin: origin, cache: cache.path)
        #expect(manager.state(of: level1) == .notDownloaded)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<32 {
                group.addTask { try await manager.retain(level1) }
            }
            try await waitUntil { origin.startedDownloads == 1 }
            #expect(manager.state(of: level1) == .downloading)
            origin.gate.open()
            try await group.waitForAll()
        }
        #expect(origin.downloads(of: bundle.manifest.pack(level1).file) == 1)
        #expect(manager.state(of: level1) == .inUse)
        #expect(manager.status()[1].retainCount == 32)
        for _ in 0..<32 { manager.release(level1) }
        #expect(manager.state(of: level1) == .downloaded)
        #expect(FileManager.default.contents(atPath: manager.path(of: level1)) == Data(bundle.files[bundle.manifest.pack(level1).file]!))
    }

    @Test("a cancelled waiter leaves; the download goes on for the others")
    func cancelledWaiter() async throws {
        let cache = try TemporaryDirectory()
        let origin = FakeOrigin(files: bundle.files, gate: Gate())
        let manager = try makeManager(origin: origin, cache: cache.path)
        let first = Task { try await manager.retain(level1) }
        let second = Task { try await manager.retain(level1) }
        try await waitUntil { origin.startedDownloads == 1 }
        first.cancel()
        await #expect(throws: FetchError.self) { try await first.value }
        #expect(manager.state(of: level1) == .downloading)
        origin.gate.open()
        try await second.value
        #expect(manager.status()[1].retainCount == 1)
        #expect(origin.downloads(of: bundle.manifest.pack(level1).file) == 1)
    }

    @Test("a corrupt pack is never published, and the next retain tries again")
    func corruptPackRetries() async throws {
        let cache = try TemporaryDirectory()
        let file = bundle.manifest.pack(level1).file
        let good = bundle.files[file]!
        var bad = good
        bad[bad.count / 2] ^= 0xFF
        let origin = FakeOrigin(files: bundle.files)
        origin.setFile(file, bad)
        let manager = try makeManager(origin: origin, cache: cache.path)
        do {
            try await manager.retain(level1)
            Issue.record("a corrupt pack was accepted")
        } catch {
            #expect(error.kind == .corrupt)
        }
        #expect(manager.state(of: level1) == .notDownloaded)
        #expect(manager.status()[1].retainCount == 0)
        #expect(!FileManager.default.fileExists(atPath: manager.path(of: level1)))
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path + "/tmp").isEmpty)

        // Truncated is corrupt too.
        origin.setFile(file, Array(good.prefix(good.count - 1)))
        await #expect(throws: FetchError.self) { try await manager.retain(level1) }

        origin.setFile(file, good)
        try await manager.retain(level1)
        #expect(manager.state(of: level1) == .inUse)
        #expect(origin.downloads(of: file) == 3)
    }

    @Test("a missing pack on the origin fails clearly")
    func missingPack() async throws {
        let cache = try TemporaryDirectory()
        let origin = FakeOrigin(files: [:])
        let manager = try makeManager(origin: origin, cache: cache.path)
        do {
            try await manager.retain(level1)
            Issue.record("retain succeeded without a pack")
        } catch {
            #expect(error.kind == .notFound)
            #expect(error.message.contains(bundle.manifest.pack(level1).file))
        }
    }

    @Test("retain counts never go negative and opening counts as an access")
    func retainAccounting() async throws {
        let cache = try TemporaryDirectory()
        let origin = FakeOrigin(files: bundle.files)
        let now = Mutex(Date(timeIntervalSince1970: 1_000))
        let manager = try makeManager(origin: origin, cache: cache.path, clock: { now.withLock { $0 } })
        #expect(manager.openReaderIfReady(level1, prefix: 1) == nil)
        try await manager.makeLocal(level1)
        #expect(manager.state(of: level1) == .downloaded)
        #expect(manager.status()[1].lastAccess == nil)
        manager.release(level1)
        #expect(manager.status()[1].retainCount == 0)
        // Kept to the millisecond, as the cache index stores it, so a remount shows the same time.
        now.withLock { $0 = Date(timeIntervalSince1970: 2_000.9996) }
        let reader = try #require(manager.openReaderIfReady(level1, prefix: .max))
        #expect(reader.file.isComplete)
        #expect(manager.status()[1].lastAccess == Date(timeIntervalSince1970: 2_000.999))
        #expect(manager.state(of: level1) == .inUse)
        reader.close()
        reader.close()
        #expect(manager.state(of: level1) == .downloaded, "a reader's close is idempotent")
    }

    @Test("packs already in the cache are local at startup; no download happens")
    func cacheSurvivesRestart() async throws {
        let cache = try TemporaryDirectory()
        let origin = FakeOrigin(files: bundle.files)
        do {
            let manager = try makeManager(origin: origin, cache: cache.path)
            try await manager.makeLocal(level1)
            await manager.shutdown()
        }
        let restarted = try makeManager(origin: origin, cache: cache.path)
        #expect(restarted.state(of: level1) == .downloaded)
        #expect(restarted.state(of: PackNumber(2)) == .notDownloaded)
        #expect(origin.downloads(of: bundle.manifest.pack(level1).file) == 1)
    }

    /// `odrfs priority --set` is answered after the override is in the index (written
    /// durably, see PowerCutTests): a power cut after the command returns cannot undo it.
    @Test("setting a priority through the control service returns once the index holds it")
    func prioritySetReturnsAfterTheWrite() async throws {
        let cache = try TemporaryDirectory()
        let logger = Logger(label: "test")
        let store = try PackStore(root: cache.path, logger: logger)
        // One I/O thread, kept busy for a moment: a write queued behind it is not done yet.
        let io = IOExecutor(name: "test-io", threads: 1)
        let downloader = PackDownloader(origin: FakeOrigin(files: bundle.files), store: store, chunkSize: bundle.manifest.chunkSize, logger: logger)
        let manager = try ResourceManager(manifest: bundle.manifest, store: store, downloader: downloader, logger: logger, io: io)
        let busy = Atomic<Bool>(false)
        io.submit {
            busy.store(true, ordering: .sequentiallyConsistent)
            usleep(300_000)
        }
        try await waitUntil { busy.load(ordering: .sequentiallyConsistent) }
        try await MountControlService(manager: manager, logger: logger).setPreservationPriority(0.9, tags: ["Level1"])
        #expect(try store.index.priorityOverrides() == [Tag("Level1"): 0.9])
        await manager.shutdown()
    }
}

import Synchronization

/// Polls `condition` every few milliseconds for at most `timeout`.
func waitUntil(timeout: Duration = .seconds(10), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("condition not met within \(timeout)")
            return
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}

