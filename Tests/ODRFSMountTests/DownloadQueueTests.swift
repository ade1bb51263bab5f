import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import ODRFSStore
import TestSupport
import Testing

@Suite("Download queue")
struct DownloadQueueTests {
    @Test("urgent downloads jump the queue; prefetch never takes the last slot")
    func ordering() async throws {
        let queue = DownloadQueue(maximumConcurrent: 2)
        let order = LockedValue<[String]>([])
        let first = queue.makeTicket()
        try await queue.acquire(first, priority: .prefetch)
        // A second prefetch must wait: the last slot is kept for urgent work.
        let secondPrefetch = queue.makeTicket()
        let prefetchTask = Task {
            try await queue.acquire(secondPrefetch, priority: .prefetch)
            order.withLock { $0.append("prefetch") }
        }
        let request = queue.makeTicket()
        let requestTask = Task {
            try await queue.acquire(request, priority: .request(0.5))
            order.withLock { $0.append("request") }
        }
        try await waitUntil { order.value == ["request"] }
        let urgent = queue.makeTicket()
        let urgentTask = Task {
            try await queue.acquire(urgent, priority: .urgent)
            order.withLock { $0.append("urgent") }
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(order.value == ["request"], "no slot should be free")
        queue.release(request)
        try await urgentTask.value
        #expect(order.value == ["request", "urgent"], "urgent goes before the waiting prefetch")
        queue.release(urgent)
        queue.release(first)
        try await prefetchTask.value
        try await requestTask.value
        #expect(order.value == ["request", "urgent", "prefetch"])
        queue.release(secondPrefetch)
    }

    @Test("a queued download whose caller becomes urgent is raised")
    func raise() async throws {
        let queue = DownloadQueue(maximumConcurrent: 1)
        let running = queue.makeTicket()
        try await queue.acquire(running, priority: .urgent)
        let order = LockedValue<[String]>([])
        let low = queue.makeTicket()
        let lowTask = Task { try await queue.acquire(low, priority: .request(0.1)); order.withLock { $0.append("low") } }
        let mid = queue.makeTicket()
        let midTask = Task { try await queue.acquire(mid, priority: .request(0.5)); order.withLock { $0.append("mid") } }
        try await Task.sleep(for: .milliseconds(50))
        queue.raise(low, to: .urgent)
        queue.release(running)
        try await lowTask.value
        queue.release(low)
        try await midTask.value
        queue.release(mid)
        #expect(order.value == ["low", "mid"])
    }

    @Test("a cancelled queued download leaves the queue")
    func cancelWhileQueued() async throws {
        let queue = DownloadQueue(maximumConcurrent: 1)
        let running = queue.makeTicket()
        try await queue.acquire(running, priority: .urgent)
        let queued = queue.makeTicket()
        let task = Task { try await queue.acquire(queued, priority: .urgent) }
        try await Task.sleep(for: .milliseconds(20))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        queue.release(running)
        let next = queue.makeTicket()
        try await queue.acquire(next, priority: .prefetch)
        queue.release(next)
    }

    @Test("when its only waiter gives up, the download is abandoned and nothing is published")
    func abandonedDownload() async throws {
        let cache = try TemporaryDirectory()
        let bundle = SyntheticBundle(packContents: [(.base, SyntheticBundle.bytes(10, seed: 0)), (PackID("A"), SyntheticBundle.bytes(5_000, seed: 1))])
        let origin = FakeOrigin(files: bundle.files, gate: Gate())
        let logger = Logger(label: "test")
        let store = try PackStore(root: cache.path, logger: logger)
        let manager = try ResourceManager(manifest: bundle.manifest, store: store,
                                          downloader: PackDownloader(origin: origin, store: store, chunkSize: bundle.manifest.chunkSize, logger: logger),
                                          logger: logger)
        let waiter = Task { try await manager.retain(PackNumber(1)) }
        try await waitUntil { origin.startedDownloads == 1 }
        waiter.cancel()
        await #expect(throws: FetchError.self) { try await waiter.value }
        origin.gate.open()
        try await waitUntil { manager.state(of: PackNumber(1)) == .notDownloaded }
        #expect(origin.downloads(of: bundle.manifest.packs[1].file) == 0, "the abandoned download went on")
        #expect(manager.cacheStatus().reservedBytes == 0)
        // A later caller fetches it normally.
        try await manager.retain(PackNumber(1))
        #expect(manager.state(of: PackNumber(1)) == .inUse)
    }
}
