import Foundation
import Logging
import NIOCore
import ODRFSCore
import ODRFSStore
import Synchronization
import Testing
import TestSupport
@testable import ODRFSFetch

/// A scripted server for a mirror set: serves `bytes` from the asked offset, optionally
/// failing after `failAfter` bytes or flipping one byte, and records the offsets asked.
final class ScriptedServer: Origin {
    let name: String
    let bytes: [UInt8]
    let record: OriginHealth
    private let state = Mutex<(offsets: [Int64], failure: FetchError.Kind?, failAfter: Int?, corruptAt: Int?)>(([], nil, nil, nil))

    init(_ name: String, bytes: [UInt8], failure: FetchError.Kind? = nil, failAfter: Int? = nil, corruptAt: Int? = nil) {
        self.name = name
        self.bytes = bytes
        self.record = OriginHealth(url: name)
        state.withLock { $0 = ([], failure, failAfter, corruptAt) }
    }

    var displayName: String { name }
    var health: [OriginHealth] { [record] }
    var offsets: [Int64] { state.withLock { $0.offsets } }

    /// The server starts (an offset) or stops (nil) sending a flipped byte.
    func setCorruptAt(_ offset: Int?) {
        state.withLock { $0.corruptAt = offset }
    }

    /// The server comes back (nil) or goes down.
    func setFailure(_ failure: FetchError.Kind?) {
        state.withLock { $0.failure = failure }
    }

    func download(_ path: String, expectedBytes: ByteCount, into consume: (ByteBuffer) async throws(FetchError) -> Void) async throws(FetchError) {
        try await download(path, from: 0, expectedBytes: expectedBytes, into: consume)
    }

    func download(_ path: String, from offset: Int64, expectedBytes: ByteCount,
                  into consume: (ByteBuffer) async throws(FetchError) -> Void) async throws(FetchError) {
        let (failure, failAfter, corruptAt) = state.withLock { state in
            state.offsets.append(offset)
            return (state.failure, state.failAfter, state.corruptAt)
        }
        if let failure, failAfter == nil {
            if failure == .unreachable { record.recordUnreachable("refused") }
            throw FetchError(failure, "\(name) fails")
        }
        record.recordResponse(status: 200, roundTrip: .milliseconds(1))
        var body = Array(bytes[Int(offset)...])
        if let corruptAt, corruptAt >= Int(offset) { body[corruptAt - Int(offset)] ^= 0xFF }
        var sent = 0
        while sent < body.count {
            let end = min(body.count, sent + 1000)
            if let failAfter, sent >= failAfter { throw FetchError(failure ?? .unreachable, "\(name) stalled") }
            try await consume(ByteBuffer(bytes: body[sent..<end]))
            sent = end
        }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct MirrorSetTests {
    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SplitMix(seed: 42)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }

    let logger = Logger(label: "test")

    @Test func aFailingServerHandsTheDownloadOnFromItsOffset() async throws {
        let bytes = Self.randomBytes(10_000)
        let first = ScriptedServer("a", bytes: bytes, failure: .unreachable, failAfter: 3_000)
        let second = ScriptedServer("b", bytes: bytes)
        let set = MirrorSet([first, second], logger: logger)
        let data = try await set.data(at: "f", limit: ByteCount(10_000))
        #expect(Array(data) == bytes)
        #expect(first.offsets == [0])
        #expect(second.offsets == [3_000], "the second server resumed where the first stopped")
    }

    @Test func serversAreRankedHealthiestFirst() {
        let bytes = [UInt8](repeating: 1, count: 10)
        let down = ScriptedServer("down", bytes: bytes), slow = ScriptedServer("slow", bytes: bytes)
        let fast = ScriptedServer("fast", bytes: bytes), failing = ScriptedServer("failing", bytes: bytes)
        down.record.recordUnreachable("refused")
        slow.record.recordResponse(status: 200, roundTrip: .milliseconds(80))
        fast.record.recordResponse(status: 200, roundTrip: .milliseconds(10))
        failing.record.recordResponse(status: 200, roundTrip: .milliseconds(1))
        failing.record.recordFailure("stalled")
        let set = MirrorSet([down, slow, failing, fast], logger: logger)
        #expect(set.ranking(for: "f").map { set.urls[$0] } == ["fast", "slow", "failing", "down"])
    }

    @Test func aServerThatCameBackIsRecheckedAndRankedAgain() async throws {
        let bytes = Self.randomBytes(100)
        let main = ScriptedServer("main", bytes: bytes, failure: .unreachable), mirror = ScriptedServer("mirror", bytes: bytes)
        let set = MirrorSet([main, mirror], logger: logger)
        _ = try await set.data(at: "manifest.json", limit: ByteCount(100))
        #expect(set.ranking(for: "f").map { set.urls[$0] } == ["mirror", "main"])
        main.setFailure(nil)
        await set.recheckUnreachable("manifest.json", limit: ByteCount(100))
        #expect(main.record.snapshot.isReachable == true)
        #expect(mirror.offsets.count == 1, "only the unreachable server is asked again")
        #expect(set.ranking(for: "f").first.map { set.urls[$0] } == "main", "equal health: the given order again")
    }

    @Test func everyServerDownFailsWithinTheBudget() async throws {
        let set = MirrorSet([ScriptedServer("a", bytes: [1], failure: .unreachable), ScriptedServer("b", bytes: [1], failure: .unreachable)],
                            unreachableAfter: .milliseconds(600), logger: logger)
        let start = ContinuousClock.now
        let error = await #expect(throws: FetchError.self) { _ = try await set.data(at: "f", limit: ByteCount(1)) }
        #expect(error?.kind == .unreachable)
        #expect(error?.message.contains("all 2 servers failed") == true, "\(error?.message ?? "")")
        let elapsed = ContinuousClock.now - start
        // The 600 ms budget, not a fetch deadline (30 s by default); the margin is for load.
        #expect(elapsed >= .milliseconds(500) && elapsed < .seconds(8), "took \(elapsed)")
        #expect(!set.isOnline)
    }

    @Test func aServerWithBadBytesIsDroppedForThatPackAndTheRestComesFromAnother() async throws {
        let bytes = Self.randomBytes(5 * 4096 + 100)
        let bundle = bundleHolding(bytes)
        let corrupt = ScriptedServer("corrupt", bytes: bytes, corruptAt: 2 * 4096 + 7)
        let good = ScriptedServer("good", bytes: bytes)
        let set = MirrorSet([corrupt, good], logger: logger)
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        let downloader = PackDownloader(origin: set, store: store, chunkSize: SyntheticBundle.chunkSize, logger: logger)
        let pack = bundle.manifest.packs[1]
        // The distrust lasts 5 s from the bad answer: look at the ranking as of before the
        // fetch began, which a loaded machine cannot push past it.
        let began = ContinuousClock.now
        _ = try await downloader.fetch(pack)
        let published = try Data(contentsOf: URL(fileURLWithPath: store.path(of: pack)))
        #expect(Array(published) == bytes)
        #expect(corrupt.offsets == [0])
        #expect(good.offsets == [2 * 4096], "resumed from the verified prefix: \(good.offsets)")
        #expect(set.hasAlternative(for: "other"), "another pack may still use both")
        #expect(set.hasAlternative(for: pack.file), "the good server remains")
        #expect(set.ranking(for: pack.file, now: began).map { set.urls[$0] } == ["good"])
    }

    /// Issue 26, item 3: one bad response from the only server made the pack unreadable for
    /// the life of the mount (every later fetch failed at once, asking nobody). Distrust
    /// expires, and the last server left is always tried on the next fetch, with a log line.
    @Test func theOnlyServerIsTriedAgainAfterBadBytes() async throws {
        let bytes = Self.randomBytes(5 * 4096 + 100)
        let bundle = bundleHolding(bytes)
        let only = ScriptedServer("only", bytes: bytes, corruptAt: 4096 + 3)
        let log = LogCapture()
        let set = MirrorSet([only], logger: log.logger)
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        let downloader = PackDownloader(origin: set, store: store, chunkSize: SyntheticBundle.chunkSize, logger: logger)
        let pack = bundle.manifest.packs[1]
        let first = await #expect(throws: FetchError.self) { _ = try await downloader.fetch(pack) }
        #expect(first?.kind == .corrupt)
        #expect(!set.hasAlternative(for: pack.file), "no trusted server left to restart with at once")
        // The origin is repaired (or the CDN edge's bad answer has gone): the next fetch asks again.
        only.setCorruptAt(nil)
        _ = try await downloader.fetch(pack)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: store.path(of: pack)))) == bytes)
        #expect(only.offsets == [0, 0])
        #expect(log.records.contains { $0.message.contains("trying the last one again") })
        #expect(set.hasAlternative(for: pack.file), "a good answer forgets the distrust")
    }

    @Test func distrustExpiresAndGrowsWithEachBadAnswer() {
        let now = ContinuousClock.now
        var distrust: ServerDistrust?
        var backoffs: [Int64] = []
        for _ in 0..<10 {
            distrust = ServerDistrust.after(distrust, now: now)
            backoffs.append(distrust!.backoff.components.seconds)
        }
        #expect(backoffs == [5, 10, 20, 40, 80, 160, 300, 300, 300, 300])
        // A mirror distrusted for a file is ranked again once its backoff has passed.
        let set = MirrorSet([ScriptedServer("main", bytes: [1]), ScriptedServer("mirror", bytes: [1])], logger: logger)
        set.distrusted.withLock { $0["f"] = [0: ServerDistrust.after(nil, now: now)] }
        #expect(set.ranking(for: "f", now: now + .seconds(1)).map { set.urls[$0] } == ["mirror"])
        #expect(set.ranking(for: "f", now: now + .seconds(6)).map { set.urls[$0] } == ["main", "mirror"])
        #expect(set.candidates(for: "g", now: now).lastResort == false)
    }
}



/// A bundle whose only non-base pack holds `bytes`.
func bundleHolding(_ bytes: [UInt8]) -> SyntheticBundle {
    SyntheticBundle(packContents: [(.base, [0]), (PackID("Level"), bytes)])
}
