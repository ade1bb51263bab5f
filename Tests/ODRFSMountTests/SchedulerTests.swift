import Foundation
import Logging
import NIOCore
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import ODRFSStore
import Synchronization
import TestSupport
import Testing

/// An origin that streams each file in `pieces` buffers with `pause` between them, and holds
/// the files in `gated` until the gate opens: a slow link, and a pack an open waits for.
final class PacedOrigin: Origin {
    let files: [String: [UInt8]]
    let gated: Set<String>
    let gate = Gate()
    let pieces: Int
    let pause: Duration

    init(files: [String: [UInt8]], gated: Set<String> = [], pieces: Int = 50, pause: Duration = .milliseconds(10)) {
        self.files = files
        self.gated = gated
        self.pieces = pieces
        self.pause = pause
    }

    var displayName: String { "paced-origin" }

    func download(_ path: String, expectedBytes: ByteCount, into consume: (ByteBuffer) async throws(FetchError) -> Void) async throws(FetchError) {
        guard let bytes = files[path] else { throw FetchError(.notFound, "no \(path)") }
        if gated.contains(path) { await gate.wait() }
        let size = max(1, (bytes.count + pieces - 1) / pieces)
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + size)
            try await consume(ByteBuffer(bytes: bytes[offset..<end]))
            offset = end
            if pause > .zero {
                do { try await Task.sleep(for: pause) } catch { throw FetchError(.cancelled, "cancelled") }
            }
        }
    }
}

/// The download classes: an open beats prefetch, which pauses while an open waits; the
/// background rate cap; the quiet period before prefetch.
@Suite("Download scheduler", .timingSensitive, .timeLimit(.minutes(1)))
struct SchedulerTests {
    let bundle = SyntheticBundle(packContents: [
        (.base, SyntheticBundle.bytes(10, seed: 0)),
        (PackID("Levels"), SyntheticBundle.bytes(400_000, seed: 1)),
        (PackID("Menu"), SyntheticBundle.bytes(5_000, seed: 2)),
    ])
    let levels = PackNumber(1)
    let menu = PackNumber(2)

    func makeManager(_ origin: any Origin, cache: String, schedule: SchedulerSettings = SchedulerSettings()) throws -> ResourceManager {
        let logger = Logger(label: "test")
        let store = try PackStore(root: cache, logger: logger)
        return try ResourceManager(manifest: bundle.manifest, store: store,
                                   downloader: PackDownloader(origin: origin, store: store, chunkSize: bundle.manifest.chunkSize, logger: logger),
                                   logger: logger, schedule: schedule)
    }

    func waitUntil(_ timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
        let end = ContinuousClock.now + timeout
        while ContinuousClock.now < end {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

    @Test("a prefetch download pauses while an open waits, and resumes after")
    func prefetchPausesForAnOpen() async throws {
        let cache = try TemporaryDirectory()
        // 200 pieces 10 ms apart: about 2 s unpaused, so that a loaded machine still sees
        // the open arrive while the prefetch runs.
        let origin = PacedOrigin(files: bundle.files, gated: [bundle.manifest.pack(menu).file], pieces: 200)
        let manager = try makeManager(origin, cache: cache.path)
        let prefetch = Task { try await manager.makeLocal(levels, priority: .prefetch) }
        #expect(await waitUntil { manager.progress(of: [levels]).completed > 0 }, "prefetch never started")
        let open = Task { try await manager.openReader(menu, prefix: 1) }
        #expect(await waitUntil { manager.isForegroundBusy })
        try await Task.sleep(for: .milliseconds(50))   // a buffer already in flight may land
        let before = manager.progress(of: [levels]).completed
        try await Task.sleep(for: .milliseconds(300))  // the whole pack would take about 2 s unpaused
        let after = manager.progress(of: [levels]).completed
        #expect(after == before, "prefetch moved from \(before) to \(after) bytes while an open waited")
        #expect(manager.state(of: levels) == .downloading)
        origin.gate.open()
        let reader = try await open.value
        reader.close()
        try await prefetch.value
        #expect(manager.state(of: levels) == .downloaded)
    }

    @Test("--max-background-rate slows prefetch, never an open")
    func backgroundRateCap() async throws {
        let cache = try TemporaryDirectory()
        let origin = PacedOrigin(files: bundle.files, pieces: 40, pause: .zero)
        // 400,000 bytes at 25,000 B/s, less the bucket's first burst: about 15 s. A wide
        // margin: under `swift test` on two cores the uncapped open alone has taken 3.5 s.
        let rate = ByteCount(25_000)
        let manager = try makeManager(origin, cache: cache.path, schedule: SchedulerSettings(maximumBackgroundRate: rate))
        var started = ContinuousClock.now
        try await manager.makeLocal(levels, priority: .prefetch)
        let capped = ContinuousClock.now - started
        #expect(capped >= .seconds(14), "prefetch took only \(capped)")

        let other = try TemporaryDirectory()
        let uncappedManager = try makeManager(origin, cache: other.path, schedule: SchedulerSettings(maximumBackgroundRate: rate))
        started = ContinuousClock.now
        let reader = try await uncappedManager.openReader(levels, prefix: 400_000)
        let uncapped = ContinuousClock.now - started
        reader.close()
        #expect(uncapped < capped / 2, "an open took \(uncapped), prefetch \(capped)")
    }

    @Test("the quiet period: waitForQuiet returns only once no open has waited for that long")
    func quietPeriod() async throws {
        let cache = try TemporaryDirectory()
        let origin = PacedOrigin(files: bundle.files, gated: [bundle.manifest.pack(menu).file], pause: .zero)
        let manager = try makeManager(origin, cache: cache.path)
        let open = Task { try await manager.openReader(menu, prefix: 1) }
        #expect(await waitUntil { manager.isForegroundBusy })
        let quiet = Task { await manager.waitForQuiet(.milliseconds(300)); return ContinuousClock.now }
        try await Task.sleep(for: .milliseconds(400))
        let released = ContinuousClock.now
        origin.gate.open()
        try await open.value.close()
        let ended = await quiet.value
        #expect(ended - released >= .milliseconds(280), "prefetch started \(ended - released) after the open")
    }

    @Test func classesAreOrdered() {
        #expect(DownloadPriority.background < .prefetch)
        #expect(DownloadPriority.prefetch < .request(0))
        #expect(DownloadPriority.request(1) < .urgent)
    }
}
