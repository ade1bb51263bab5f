import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import ODRFSStore
import TestSupport
import Testing

/// The coordinator's single flight, waiters, abandonment, failures, progress and pacing,
/// driven piece by piece through a ``HeldOrigin``: every step is one the test allows, so
/// nothing here depends on how fast the machine is. Waits are bounded (`waitUntil`).
@Suite("DownloadCoordinator", .timeLimit(.minutes(1)))
struct DownloadCoordinatorTests {
    static let chunk = Int(SyntheticBundle.chunkSize.value)
    let bundle = SyntheticBundle(packContents: [
        (.base, SyntheticBundle.bytes(100, seed: 1)),
        (PackID("Levels"), SyntheticBundle.bytes(8 * DownloadCoordinatorTests.chunk, seed: 2)),
        (PackID("Menu"), SyntheticBundle.bytes(DownloadCoordinatorTests.chunk, seed: 3)),
    ])
    let levels = PackNumber(1)
    let menu = PackNumber(2)
    var levelsFile: String { bundle.manifest.pack(levels).file }
    var menuFile: String { bundle.manifest.pack(menu).file }

    func makeManager(_ origin: HeldOrigin, cache: String) throws -> ResourceManager {
        let logger = Logger(label: "test")
        let store = try PackStore(root: cache, logger: logger)
        let downloader = PackDownloader(origin: origin, store: store, chunkSize: bundle.manifest.chunkSize, logger: logger)
        return try ResourceManager(manifest: bundle.manifest, store: store, downloader: downloader, logger: logger)
    }

    func makeOrigin(servesRanges: Bool = true) -> HeldOrigin {
        HeldOrigin(files: bundle.files, pieceBytes: Self.chunk, servesRanges: servesRanges)
    }

    /// Joins `pack` as waiter `id`, its outcome recorded in `outcomes`; true if it waits.
    func join(_ manager: ResourceManager, _ pack: PackNumber, _ id: UInt64, _ outcomes: Outcomes,
              retains: Bool = true, priority: DownloadPriority = .request(0), prefix: Int64? = nil) -> Bool {
        let outcome = manager.coordinator.join(pack, retains: retains, priority: priority, needed: prefix.map { 0..<$0 }, startIfNeeded: true,
                                               waiter: Self.waiterBase + id, resume: outcomes.resume(id))
        if case .waiting = outcome { return true }
        return false
    }

    /// Withdraws the test's waiter `id`.
    func cancelWaiter(_ manager: ResourceManager, _ id: UInt64, on pack: PackNumber) {
        manager.coordinator.cancelWaiter(Self.waiterBase + id, on: pack)
    }

    /// The test's waiter ids, far above those `acquire` takes from `VerifiedFile.makeWaiterID()`.
    static let waiterBase: UInt64 = 1 << 48

    func reservedBytes(_ manager: ResourceManager) -> Int64 { manager.table.read { $0.reservedBytes } }

    /// The start of the pacing scenarios: a prefetch of `levels` (waiter 1, not retaining)
    /// with its first `pieces` chunks written. The directory is returned to keep it alive.
    func prefetchUnderway(servesRanges: Bool, pieces: Int) async throws
        -> (cache: TemporaryDirectory, origin: HeldOrigin, manager: ResourceManager, outcomes: Outcomes) {
        let cache = try TemporaryDirectory()
        let origin = makeOrigin(servesRanges: servesRanges)
        let manager = try makeManager(origin, cache: cache.path)
        let outcomes = Outcomes()
        _ = join(manager, levels, 1, outcomes, retains: false, priority: .prefetch)
        origin.allow(levelsFile, pieces: pieces)
        try await waitUntil { manager.progress(of: [levels]).completed == Int64(pieces * Self.chunk) }
        return (cache, origin, manager, outcomes)
    }

    @Test("a second waiter joins the running download: one request, both resumed, the priority raised")
    func secondWaiterJoins() async throws {
        let cache = try TemporaryDirectory()
        let origin = makeOrigin()
        let manager = try makeManager(origin, cache: cache.path)
        let outcomes = Outcomes()
        #expect(join(manager, levels, 1, outcomes, retains: true, priority: .prefetch))
        try await waitUntil { origin.isWaiting(levelsFile) }
        #expect(join(manager, levels, 2, outcomes, retains: false, priority: .urgent))
        #expect(manager.table.read { $0.slots[1].download?.priority } == .urgent, "the open raised the download")
        #expect(manager.state(of: levels) == .downloading)
        #expect(outcomes.count == 0)

        origin.allowAll(levelsFile)
        try await waitUntil { outcomes.count == 2 }
        #expect(outcomes[1] == .success && outcomes[2] == .success)
        #expect(origin.requests(levelsFile).count == 1)
        #expect(manager.status()[1].retainCount == 1, "only the first waiter retains")
        #expect(manager.state(of: levels) == .inUse)
        #expect(reservedBytes(manager) == 0)
        manager.release(levels)
    }

    @Test("a withdrawn waiter hears .cancelled at once; the download goes on for the others")
    func withdrawnWaiterLeaves() async throws {
        let cache = try TemporaryDirectory()
        let origin = makeOrigin()
        let manager = try makeManager(origin, cache: cache.path)
        let events = EventLog(manager.events)
        let outcomes = Outcomes()
        _ = join(manager, levels, 1, outcomes)
        _ = join(manager, levels, 2, outcomes)
        origin.allow(levelsFile)
        try await waitUntil { manager.progress(of: [levels]).completed == Int64(Self.chunk) }

        cancelWaiter(manager, 1, on: levels)
        #expect(outcomes[1] == .failure(.cancelled), "resumed before cancelWaiter returns")
        #expect(manager.state(of: levels) == .downloading)
        origin.allowAll(levelsFile)
        try await waitUntil { events.kinds(of: "Levels").contains("fetch-finished") }
        #expect(outcomes[2] == .success)
        #expect(origin.requests(levelsFile).map(\.offset) == [0])
        #expect(manager.status()[1].retainCount == 1)
        #expect(events.kinds(of: "Levels").filter { $0 != "fetch-progress" } == ["fetch-started", "retained", "fetch-finished"], "\(events.kinds(of: "Levels"))")
        events.stop()
    }

    @Test("a task cancelled in acquire withdraws only its own wait")
    func cancelledAcquire() async throws {
        let cache = try TemporaryDirectory()
        let origin = makeOrigin()
        let manager = try makeManager(origin, cache: cache.path)
        let outcomes = Outcomes()
        _ = join(manager, levels, 1, outcomes)
        let pack = levels
        let acquiring = Finishing { try await manager.coordinator.acquire(pack, retains: true, priority: .urgent) }
        try await waitUntil { manager.table.read { $0.slots[1].download?.waiters.count } == 2 }
        acquiring.cancel()
        let ended = await acquiring.result(within: .seconds(10))
        #expect((ended?.error as? FetchError)?.kind == .cancelled)
        #expect(manager.state(of: levels) == .downloading)
        #expect(!manager.isForegroundBusy, "the withdrawn open no longer counts as waiting")
        origin.allowAll(levelsFile)
        try await waitUntil { outcomes[1] != nil }
        #expect(outcomes[1] == .success)
        #expect(manager.status()[1].retainCount == 1)
    }

    @Test("the last waiter to leave abandons the download: nothing is published or left behind")
    func lastWaiterAbandons() async throws {
        let cache = try TemporaryDirectory()
        let origin = makeOrigin()
        let manager = try makeManager(origin, cache: cache.path)
        let events = EventLog(manager.events)
        let outcomes = Outcomes()
        _ = join(manager, levels, 1, outcomes)
        _ = join(manager, levels, 2, outcomes, prefix: Int64(4 * Self.chunk))
        origin.allow(levelsFile, pieces: 2)
        try await waitUntil { manager.progress(of: [levels]).completed == Int64(2 * Self.chunk) }

        cancelWaiter(manager, 1, on: levels)
        #expect(manager.state(of: levels) == .downloading, "a waiter is left")
        cancelWaiter(manager, 2, on: levels)
        #expect(outcomes[1] == .failure(.cancelled) && outcomes[2] == .failure(.cancelled))
        // The abandoned download ends: settled, then its failure published.
        try await waitUntil { !events.failures(of: "Levels").isEmpty }
        #expect(manager.state(of: levels) == .notDownloaded)
        #expect(origin.requests(levelsFile).first?.ended == true)

        #expect(reservedBytes(manager) == 0)
        #expect(manager.status()[1].retainCount == 0)
        #expect(!FileManager.default.fileExists(atPath: manager.path(of: levels)))
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path + "/tmp").isEmpty, "the partial file is discarded")
        #expect(events.kinds(of: "Levels").filter { $0 != "fetch-progress" } == ["fetch-started", "fetch-failed"])
        #expect(events.failures(of: "Levels") == [.cancelled])
        // Bytes let through now reach nobody: no second request, nothing published.
        origin.allowAll(levelsFile)
        #expect(origin.requests(levelsFile).count == 1)
        #expect(manager.state(of: levels) == .notDownloaded)
        events.stop()
    }

    @Test("a caller who joins while an abandoned download winds down gets a fresh download")
    func joinDuringAbandonmentRestarts() async throws {
        let cache = try TemporaryDirectory()
        let origin = makeOrigin()
        let manager = try makeManager(origin, cache: cache.path)
        let outcomes = Outcomes()
        _ = join(manager, levels, 1, outcomes)
        origin.allow(levelsFile)
        try await waitUntil { manager.progress(of: [levels]).completed == Int64(Self.chunk) }
        // The download's task is cancelled, but it is held in the origin until let go.
        origin.holdsCancellation.store(true, ordering: .relaxed)
        cancelWaiter(manager, 1, on: levels)
        #expect(join(manager, levels, 2, outcomes), "joins the download still in its slot")
        origin.holdsCancellation.store(false, ordering: .relaxed)
        origin.allow(levelsFile)  // the held download wakes, finds itself cancelled, and ends
        try await waitUntil { origin.requests(levelsFile).count == 2 }
        #expect(origin.requests(levelsFile).map(\.offset) == [0, 0], "started over, in a new file")
        origin.allowAll(levelsFile)
        try await waitUntil { outcomes[2] != nil }
        #expect(outcomes[2] == .success)
        #expect(manager.state(of: levels) == .inUse)
        #expect(reservedBytes(manager) == 0)
    }

    @Test("a failed download fails every waiter, the progressive one too; the next join tries again")
    func failureReachesEveryWaiter() async throws {
        let cache = try TemporaryDirectory()
        let origin = makeOrigin()
        let manager = try makeManager(origin, cache: cache.path)
        let events = EventLog(manager.events)
        let outcomes = Outcomes()
        _ = join(manager, levels, 1, outcomes, retains: true)
        _ = join(manager, levels, 2, outcomes, retains: false)
        _ = join(manager, levels, 3, outcomes, prefix: Int64(3 * Self.chunk))
        origin.allow(levelsFile)
        try await waitUntil { manager.progress(of: [levels]).completed == Int64(Self.chunk) }
        origin.fail(levelsFile, with: FetchError(.unauthorized, "401 for the test"))
        origin.allow(levelsFile)
        try await waitUntil { !events.failures(of: "Levels").isEmpty }
        #expect(outcomes.count == 3)
        #expect((1...3).map { outcomes[$0] } == Array(repeating: .failure(.unauthorized), count: 3))
        #expect(manager.state(of: levels) == .notDownloaded)
        #expect(manager.status()[1].retainCount == 0)
        #expect(reservedBytes(manager) == 0)
        #expect(events.failures(of: "Levels") == [.unauthorized], "one fetch-failed event")

        origin.allowAll(levelsFile)
        _ = join(manager, levels, 4, outcomes)
        try await waitUntil { outcomes[4] != nil }
        #expect(outcomes[4] == .success)
        #expect(origin.requests(levelsFile).count == 2)
        events.stop()
    }

    @Test("progress: each verified chunk moves the fraction and sends an event; a progressive waiter wakes at its prefix")
    func progressFollowsVerifiedBytes() async throws {
        let cache = try TemporaryDirectory()
        let origin = makeOrigin()
        let manager = try makeManager(origin, cache: cache.path)
        let events = EventLog(manager.events)
        let outcomes = Outcomes()
        let total = bundle.manifest.pack(levels).bytes.value
        _ = join(manager, levels, 1, outcomes, retains: false)
        _ = join(manager, levels, 2, outcomes, prefix: Int64(3 * Self.chunk))
        try await waitUntil { origin.isWaiting(levelsFile) }
        #expect(manager.progress(of: [levels]) == (0, total))
        for piece in 1...7 {
            origin.allow(levelsFile)
            let done = Int64(piece * Self.chunk)
            // Published last, after the waiters' resumes (on the thread that verified the bytes).
            try await waitUntil { events.progress(of: "Levels").last == done }
            guard events.progress(of: "Levels").last == done else { break }  // recorded; no point waiting more
            #expect(manager.progress(of: [levels]) == (done, total), "\(piece)/8 of the pack")
            #expect((outcomes[2] != nil) == (piece >= 3), "the progressive waiter after piece \(piece)")
        }
        #expect(outcomes[2] == .success)
        #expect(outcomes[1] == nil)
        origin.allow(levelsFile)
        try await waitUntil { events.kinds(of: "Levels").last == "fetch-finished" }
        #expect(outcomes[1] == .success)
        #expect(manager.progress(of: [levels]) == (total, total))
        #expect(events.progress(of: "Levels") == (1...8).map { Int64($0 * Self.chunk) })
        #expect(events.kinds(of: "Levels").first == "fetch-started")
        #expect(events.kinds(of: "Levels").last == "fetch-finished")
        manager.release(levels)  // the progressive waiter's retain
        events.stop()
    }

    @Test("a prefetch steps aside while an open waits and resumes from its verified bytes")
    func prefetchStepsAsideForAnOpen() async throws {
        let (cache, origin, manager, outcomes) = try await prefetchUnderway(servesRanges: true, pieces: 2)
        defer { withExtendedLifetime(cache) {} }

        _ = join(manager, menu, 2, outcomes, priority: .urgent)
        try await waitUntil { origin.isWaiting(menuFile) }
        #expect(manager.isForegroundBusy)
        // The next prefetch buffer arrives while the open waits: dropped with its connection.
        origin.allow(levelsFile)
        try await waitUntil { origin.requests(levelsFile).first?.ended == true }
        #expect(origin.requests(levelsFile).count == 1, "no new request while the open waits")
        #expect(manager.progress(of: [levels]).completed == Int64(2 * Self.chunk), "the buffer in hand was not written")

        origin.allowAll(menuFile)
        try await waitUntil { outcomes[2] != nil }
        #expect(outcomes[2] == .success)
        try await waitUntil { origin.requests(levelsFile).count == 2 }
        #expect(origin.requests(levelsFile).map(\.offset) == [0, Int64(2 * Self.chunk)], "resumed from the verified bytes")
        origin.allowAll(levelsFile)
        try await waitUntil { outcomes[1] != nil }
        #expect(outcomes[1] == .success)
        #expect(manager.state(of: levels) == .downloaded)
        manager.release(menu)
    }

    @Test("over an origin that cannot resume, a prefetch waits at its next buffer instead, on the same request")
    func prefetchWaitsWithoutRanges() async throws {
        let (cache, origin, manager, outcomes) = try await prefetchUnderway(servesRanges: false, pieces: 1)
        defer { withExtendedLifetime(cache) {} }
        _ = join(manager, menu, 2, outcomes, priority: .urgent)
        try await waitUntil { origin.isWaiting(menuFile) }
        origin.allow(levelsFile)
        try await waitUntil { origin.requests(levelsFile).first?.delivered == 2 }
        // Not a bound on anything: a look after a while that the buffer is still held.
        try await Task.sleep(for: .milliseconds(100))
        #expect(manager.progress(of: [levels]).completed == Int64(Self.chunk), "written while an open waited")

        origin.allowAll(menuFile)
        try await waitUntil { manager.progress(of: [levels]).completed == Int64(2 * Self.chunk) }
        origin.allowAll(levelsFile)
        try await waitUntil { outcomes[1] != nil }
        #expect(outcomes[1] == .success)
        #expect(origin.requests(levelsFile).map(\.offset) == [0], "one request, never dropped")
        manager.release(menu)
    }

    @Test("a download an open has joined is never held back for opens")
    func joinedByAnOpenIsNotHeld() async throws {
        let (cache, origin, manager, outcomes) = try await prefetchUnderway(servesRanges: true, pieces: 1)
        defer { withExtendedLifetime(cache) {} }
        _ = join(manager, levels, 2, outcomes, priority: .urgent)
        #expect(manager.isForegroundBusy, "the open waits, for this very download")
        origin.allowAll(levelsFile)
        try await waitUntil { outcomes.count == 2 }
        #expect(outcomes[1] == .success && outcomes[2] == .success)
        #expect(origin.requests(levelsFile).map(\.offset) == [0], "never stepped aside")
        manager.release(levels)
    }
}
