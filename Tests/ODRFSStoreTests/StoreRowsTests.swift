import Foundation
import Logging
import ODRFSCore
import ODRFSStore
import TestSupport
import Testing

/// Issue 23, item 3: a mount's mirror of the store's rows reads, after its first look, only
/// what changed, whoever changed it, and stays equal to the rows.
@Suite("Store rows mirror")
struct StoreRowsTests {
    static func hash(_ n: Int) -> ContentHash {
        let digits = String(n, radix: 16)
        return ContentHash(hex: String(repeating: "0", count: 64 - digits.count) + digits)!
    }

    static func row(_ n: Int, bytes: Int64 = 100, used: Double? = nil) -> CachedPack {
        var pack = CachedPack(sha256: hash(n), packID: PackID("P\(n)"), bytes: ByteCount(bytes), firstFetch: Date(timeIntervalSince1970: 1_800_000_000),
                              identity: FileIdentity(size: bytes, modifiedNanoseconds: 1, inode: Int64(n)), chunkList: nil)
        pack.lastAccess = used.map { Date(timeIntervalSince1970: $0) }
        return pack
    }

    /// The mirror's objects as a comparable set, and the rows' own.
    static func snapshot(_ objects: [StorePurgePlan.Object]) -> Set<String> {
        Set(objects.map { "\($0.isFileCopy ? "file" : "pack") \($0.sha256) \($0.bytes) \($0.lastAccess?.timeIntervalSince1970 ?? -1)" })
    }

    static func rows(_ index: CacheIndex) throws -> Set<String> {
        let packs = try index.storedPacks().map { StorePurgePlan.Object(sha256: $0.sha256, bytes: $0.bytes, lastAccess: $0.lastAccess) }
        let copies = try index.fileCopies().map { StorePurgePlan.Object(sha256: $0.sha256, bytes: $0.bytes, lastAccess: $0.lastAccess, isFileCopy: true) }
        return snapshot(packs + copies)
    }

    @Test("inserts, updates and removals by another connection reach the mirror; the bytes add up; nothing changed reads nothing")
    func followsChanges() throws {
        let root = try TemporaryDirectory()
        let mine = try CacheIndex(path: root.path + "/index.sqlite")
        let other = try CacheIndex(path: root.path + "/index.sqlite")   // another mount's connection
        for n in 0..<50 { try other.save(Self.row(n)) }
        let mirror = StoreRows()
        var state = try mirror.refresh(from: mine)
        #expect(state.objects.count == 50 && state.bytes == 5_000)
        let first = try mine.storeChanges(since: 0)
        #expect(first.isComplete && first.changed.count == 50)
        #expect(try mine.storeChanges(since: first.sequence).changed.isEmpty, "nothing changed, something read")

        try other.recordAccesses([(Self.hash(7).hex, Date(timeIntervalSince1970: 1_900_000_000), 1)])
        try other.save(Self.row(8, bytes: 300))
        try other.removePack(sha256: Self.hash(9).hex)
        try other.recordFileCopy(sha256: Self.hash(9).hex, bytes: 42, at: Date(timeIntervalSince1970: 1_850_000_000))
        try other.save(Self.row(60))
        let changes = try mine.storeChanges(since: first.sequence)
        #expect(!changes.isComplete && changes.changed.count == 4 && changes.removed.count == 1, "\(changes.changed.count) \(changes.removed.count)")
        state = try mirror.refresh(from: mine)
        #expect(Self.snapshot(state.objects) == (try Self.rows(mine)))
        #expect(state.bytes == (try mine.storedBytes()))
        try other.removeFileCopy(sha256: Self.hash(9).hex)
        for n in 0..<20 { try other.removePack(sha256: Self.hash(n).hex) }
        state = try mirror.refresh(from: mine)
        #expect(Self.snapshot(state.objects) == (try Self.rows(mine)))
        let stored = try mine.storedBytes()
        #expect(state.objects.count == 31 && state.bytes == stored)
    }

    @Test("a mirror further behind than the removals the store keeps reads every row again")
    func farBehindReadsEverything() throws {
        let root = try TemporaryDirectory()
        let index = try CacheIndex(path: root.path + "/index.sqlite")
        try index.save(Self.row(1))
        let mirror = StoreRows()
        try mirror.refresh(from: index)
        let seen = try index.storeChanges(since: 0).sequence
        try index.removePack(sha256: Self.hash(1).hex)
        // Many numbered changes later, recording evictions prunes the removals' log.
        for n in 0..<30 { try index.recordFileCopy(sha256: Self.hash(n + 10).hex, bytes: 1, at: Date()) }
        for n in 0..<25 { try index.removeFileCopy(sha256: Self.hash(n + 10).hex) }
        try index.recordEvictions([Self.hash(1).hex], keeping: 10)
        let now = try index.storeChanges(since: 0).sequence
        let recent = try index.storeChanges(since: now - 5)
        #expect(!recent.isComplete, "a recent mirror must not read everything")
        let changes = try index.storeChanges(since: seen)
        #expect(changes.isComplete, "a mirror that missed pruned removals was not told to read everything")
        let state = try mirror.refresh(from: index)
        #expect(Self.snapshot(state.objects) == (try Self.rows(index)))
    }
}
