import Foundation
import Logging
import ODRFSControl
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import ODRFSStore
import Synchronization
import TestSupport
import Testing

/// The control plane's view of a mount, without a socket: ODRFS errors mapped to the
/// control codes in one place, refusals before any work, retains tied to tokens, events.
@Suite("MountControlService")
struct MountControlServiceTests {
    let bundle = SyntheticBundle(packContents: [
        (.base, SyntheticBundle.bytes(100, seed: 1)),
        (PackID("Level1"), SyntheticBundle.bytes(10_000, seed: 2)),
        (PackID("Level1+Level2"), SyntheticBundle.bytes(5_000, seed: 3)),
    ])
    let level1 = PackNumber(1)
    let shared = PackNumber(2)

    func makeService(origin: FakeOrigin, cache: String, limits: CacheLimits = CacheLimits(),
                     availableBytes: (@Sendable () -> Int64?)? = nil) throws -> (MountControlService, ResourceManager) {
        let logger = Logger(label: "test")
        let store = try PackStore(root: cache, logger: logger)
        let downloader = PackDownloader(origin: origin, store: store, chunkSize: bundle.manifest.chunkSize, logger: logger)
        let manager = try ResourceManager(manifest: bundle.manifest, store: store, downloader: downloader, limits: limits,
                                          logger: logger, availableBytes: availableBytes)
        return (try MountControlService(manager: manager, logger: logger), manager)
    }

    @Test("every resource error maps to one control code, with ODR's numbers where ODR has one")
    func errorMapping() {
        let pack = PackID("Level1")
        let cases: [(ResourceRequestError, ControlError.Code)] = [
            (.invalidTag(Tag("Nope")), .invalidTag),
            (.exceedsMaximumInUse(requested: ByteCount(10), inUse: ByteCount(5), limit: ByteCount(12)), .exceededMaximumSize),
            (.fetchFailed(pack, FetchError(.noSpace, "full")), .outOfSpace),
            (.fetchFailed(pack, FetchError(.cancelled, "gave up")), .cancelled),
            (.fetchFailed(pack, FetchError(.unreachable, "down")), .originUnreachable),
            (.fetchFailed(pack, FetchError(.unauthorized, "401")), .originUnreachable),
            (.fetchFailed(pack, FetchError(.invalidOrigin, "bad URL")), .originUnreachable),
            (.fetchFailed(pack, FetchError(.unsupported, "ftp")), .originUnreachable),
            (.fetchFailed(pack, FetchError(.notFound, "404")), .resourceUnavailable),
            (.fetchFailed(pack, FetchError(.corrupt, "bad bytes")), .resourceUnavailable),
            (.fetchFailed(pack, FetchError(.localIO, "EIO")), .resourceUnavailable),
            (.fetchFailed(pack, FetchError(.tooManyOpenFiles, "EMFILE")), .resourceUnavailable),
        ]
        for (error, code) in cases {
            let mapped = MountControlService.controlError(error)
            #expect(mapped.code == code, "\(error)")
            #expect(mapped.message == error.description, "the message says what went wrong")
        }
        #expect(MountControlService.controlError(.invalidTag(Tag("Nope"))).odrCode == 4994)
        #expect(MountControlService.controlError(cases[1].0).odrCode == 4993)
        #expect(MountControlService.controlError(cases[2].0).odrCode == 4992)
    }

    @Test("unknown tags, out-of-range priorities and an update without an origin are refused before any work")
    func refusals() async throws {
        let cache = try TemporaryDirectory()
        let origin = FakeOrigin(files: bundle.files)
        let (service, manager) = try makeService(origin: origin, cache: cache.path)
        await #expect(throws: ControlError(.invalidTag, ResourceRequestError.invalidTag(Tag("Nope")).description)) {
            try await service.beginAccessing(tags: ["Level1", "Nope"], loadingPriority: .urgent, progress: .ignored)
        }
        #expect(throws: ControlError.self) { try service.beginAccessingIfLocal(tags: ["Nope"]) }
        #expect(throws: ControlError.self) { try service.preservationPriorities(tags: ["Level1", "Nope"]) }
        let range = await #expect(throws: ControlError.self) { try await service.setPreservationPriority(1.5, tags: ["Level1"]) }
        #expect(range?.code == .badRequest)
        let unknown = await #expect(throws: ControlError.self) { try await service.setPreservationPriority(0.5, tags: ["Nope"]) }
        #expect(unknown?.code == .invalidTag)
        let purge = await #expect(throws: ControlError.self) { _ = try await service.purge(tags: ["Nope"]) }
        #expect(purge?.code == .invalidTag)
        let update = await #expect(throws: ControlError.self) { _ = try await service.update(check: true) }
        #expect(update?.code == .unsupported)
        // Nothing was fetched or retained on the way.
        #expect(origin.startedDownloads == 0)
        #expect(manager.status().allSatisfy { $0.retainCount == 0 })
        #expect(manager.preservationPriority(of: Tag("Level1")) == 0)
    }

    @Test("a request retains its packs until its token ends; a local request needs no download")
    func retainsFollowTokens() async throws {
        let cache = try TemporaryDirectory()
        let origin = FakeOrigin(files: bundle.files)
        let (service, manager) = try makeService(origin: origin, cache: cache.path)
        #expect(try service.beginAccessingIfLocal(tags: ["Level2"]) == nil, "not local yet: nothing retained")
        #expect(manager.status()[Int(shared.rawValue)].retainCount == 0)

        let reports = Mutex<[(Int64, Int64)]>([])
        let token = try await service.beginAccessing(tags: ["Level1"], loadingPriority: .value(0.5),
                                                     progress: ProgressSink { done, total in reports.withLock { $0.append((done, total)) } })
        #expect(Set(token.packs) == [level1.rawValue, shared.rawValue])
        #expect(token.generation == manager.generation)
        let total = bundle.manifest.pack(level1).bytes.value + bundle.manifest.pack(shared).bytes.value
        #expect(reports.withLock { $0.last.map { $0 == (total, total) } } == true, "the last report says everything is local")
        #expect(manager.status()[Int(level1.rawValue)].retainCount == 1)

        let local = try #require(try service.beginAccessingIfLocal(tags: ["Level2"]))
        #expect(local.packs == [shared.rawValue])
        #expect(manager.status()[Int(shared.rawValue)].retainCount == 2)
        #expect(origin.startedDownloads == 2)

        service.endAccessing(token)
        service.endAccessing(local)
        #expect(manager.status().allSatisfy { $0.retainCount == 0 })
        let status = await service.status()
        #expect(status.packs.first { $0.id == "Level1" }?.state == .downloaded)
    }

    @Test("a pack the origin does not have fails the request as resource-unavailable")
    func fetchFailureIsMapped() async throws {
        let cache = try TemporaryDirectory()
        let origin = FakeOrigin(files: bundle.files)
        origin.setFile(bundle.manifest.pack(level1).file, nil)
        let (service, manager) = try makeService(origin: origin, cache: cache.path)
        let error = await #expect(throws: ControlError.self) {
            try await service.beginAccessing(tags: ["Level1"], loadingPriority: .urgent, progress: .ignored)
        }
        #expect(error?.code == .resourceUnavailable, "\(String(describing: error))")
        #expect(error?.message.contains("Level1") == true)
        #expect(manager.status().allSatisfy { $0.retainCount == 0 }, "a failed request keeps no retain")
    }

    @Test("more than --max-in-use is refused as exceeded-maximum-size")
    func inUseLimit() async throws {
        let cache = try TemporaryDirectory()
        let (service, _) = try makeService(origin: FakeOrigin(files: bundle.files), cache: cache.path,
                                           limits: CacheLimits(maximumInUse: ByteCount(1_000)))
        let error = await #expect(throws: ControlError.self) {
            try await service.beginAccessing(tags: ["Level1"], loadingPriority: .urgent, progress: .ignored)
        }
        #expect(error?.code == .exceededMaximumSize)
        #expect(error?.odrCode == 4993)
    }

    @Test("a subscription sees a request's fetch, its retain and its release")
    func events() async throws {
        let cache = try TemporaryDirectory()
        let (service, _) = try makeService(origin: FakeOrigin(files: bundle.files), cache: cache.path)
        let subscription = try #require(service.mountEvents())
        defer { subscription.finish() }
        let token = try await service.beginAccessing(tags: ["Level2"], loadingPriority: .urgent, progress: .ignored)
        service.endAccessing(token)
        let seen = await collect(subscription, until: [.fetchStarted, .fetchFinished, .retained, .released])
        #expect(seen[.fetchStarted]?.map(\.pack) == ["Level1+Level2"], "\(seen)")
        #expect(seen[.fetchFinished]?.map(\.pack) == ["Level1+Level2"], "\(seen)")
        #expect(seen[.retained]?.contains { $0.pack == "Level1+Level2" } == true, "\(seen)")
        #expect(seen[.released]?.contains { $0.pack == "Level1+Level2" } == true, "\(seen)")
        #expect(seen[.fetchFailed] == nil)
    }

    @Test("a subscription hears when the cache's filesystem has less than --min-free")
    func lowDiskSpaceEvents() async throws {
        let cache = try TemporaryDirectory()
        let (service, _) = try makeService(origin: FakeOrigin(files: bundle.files), cache: cache.path,
                                           limits: CacheLimits(minimumFree: ByteCount(1 << 30)), availableBytes: { 1_000 })
        let subscription = try #require(service.mountEvents())
        defer { subscription.finish() }
        let seen = await collect(subscription, until: [.lowDiskSpace])
        #expect(seen[.lowDiskSpace]?.first?.bytes == 1_000, "\(seen)")
    }

    /// Events by kind until each of `wanted` was seen, or 30 s passed (a missing event then
    /// fails the test's expectations; it never hangs it). One reader drains the subscription,
    /// so no event is lost to a timed-out wait.
    private func collect(_ subscription: MountEventSubscription, until wanted: [MountEvent.Kind]) async -> [MountEvent.Kind: [MountEvent]] {
        let seen = Mutex<[MountEvent.Kind: [MountEvent]]>([:])
        let reader = Task {
            while let event = await subscription.next() {
                seen.withLock { $0[event.event, default: []].append(event) }
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, !seen.withLock({ seen in wanted.allSatisfy { seen[$0] != nil } }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        reader.cancel()
        return seen.withLock { $0 }
    }
}
