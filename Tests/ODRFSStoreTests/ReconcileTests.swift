import Foundation
import Logging
import ODRFSCore
import ODRFSStore
import TestSupport
import Testing

/// Startup reconciliation: every way index and files can disagree after a crash.
@Suite("Reconcile")
struct ReconcileTests {
    let bundle = SyntheticBundle(packContents: [
        (.base, SyntheticBundle.bytes(100, seed: 1)),
        (PackID("A"), SyntheticBundle.bytes(9_000, seed: 2)),
        (PackID("B"), SyntheticBundle.bytes(5_000, seed: 3)),
    ])
    var packA: PackDescriptor { bundle.manifest.packs[1] }
    var packB: PackDescriptor { bundle.manifest.packs[2] }
    let logger = Logger(label: "test")

    func publish(_ pack: PackDescriptor, in store: PackStore) throws {
        let file = try store.makeTemporaryFile(label: "pack")
        try bundle.files[pack.file]!.withUnsafeBytes { try file.write($0) }
        try store.publish(file, as: pack, at: Date(timeIntervalSince1970: 100))
    }

    func reconcile(_ store: PackStore) throws -> ReconcileReport {
        try store.reconcile(expected: bundle.manifest.packs, chunkSize: SyntheticBundle.chunkSize)
    }

    @Test("consistent index and files: everything is kept, nothing rehashed")
    func consistent() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        try publish(packA, in: store)
        let report = try reconcile(store)
        #expect(Set(report.packs.keys) == [packA.sha256.hex])
        #expect(report.reverified.isEmpty && report.deleted.isEmpty && report.missingFiles.isEmpty)
        #expect(report.packs[packA.sha256.hex]?.firstFetch == Date(timeIntervalSince1970: 100))
    }

    @Test("a row without a file is dropped: the pack is remote again")
    func rowWithoutFile() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        try publish(packA, in: store)
        unlink(store.path(of: packA))
        let report = try reconcile(store)
        #expect(report.packs.isEmpty)
        #expect(report.missingFiles == [packA.sha256.hex])
        #expect(try store.index.allPacks().isEmpty)
    }

    @Test("a verified file without a row (crash before the index write) is re-verified and recorded")
    func fileWithoutRow() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        try Data(bundle.files[packB.file]!).write(to: URL(fileURLWithPath: store.path(of: packB)))
        let report = try reconcile(store)
        #expect(report.reverified == [packB.sha256.hex])
        #expect(Set(report.packs.keys) == [packB.sha256.hex])
        #expect(try store.index.allPacks().map(\.sha256) == [packB.sha256.hex])
    }

    @Test("an unknown or misnamed file is deleted")
    func unknownFile() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        let stranger = store.layout.packsDirectory + "/" + String(repeating: "ab", count: 32) + ".tar"
        _ = FileManager.default.createFile(atPath: stranger, contents: Data([1, 2, 3]))
        _ = FileManager.default.createFile(atPath: store.layout.packsDirectory + "/junk.txt", contents: Data([1]))
        let report = try reconcile(store)
        #expect(report.packs.isEmpty)
        #expect(report.deleted.count == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.layout.packsDirectory).isEmpty)
    }

    @Test("a recorded file whose bytes changed on disk fails its hash and is deleted with its row")
    func wrongHashOnDisk() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        try publish(packA, in: store)
        var bytes = bundle.files[packA.file]!
        bytes[4_000] ^= 0x55
        // Same size, new content: the recorded mtime/inode no longer match.
        usleep(10_000)
        try Data(bytes).write(to: URL(fileURLWithPath: store.path(of: packA)))
        let report = try reconcile(store)
        #expect(report.packs.isEmpty)
        #expect(report.deleted == [packA.sha256.hex])
        #expect(!FileManager.default.fileExists(atPath: store.path(of: packA)))
        #expect(try store.index.allPacks().isEmpty)
    }

    /// Downloads are verified by chunk hashes only. A manifest pairing pack A's SHA-256
    /// (its file name) with other chunks must not get its bytes trusted as pack A later.
    @Test("a file verified against other chunks than the current descriptor is checked again and dropped")
    func verifiedAgainstOtherChunks() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        // The hostile descriptor: A's name and size, B's content and chunks (padded to A's size).
        var content = bundle.files[packB.file]!
        content += [UInt8](repeating: 0, count: Int(packA.bytes.value) - content.count)
        var hostile = packA
        hostile.chunks = stride(from: 0, to: content.count, by: Int(SyntheticBundle.chunkSize.value)).map {
            ContentHash.of(Array(content[$0..<min($0 + Int(SyntheticBundle.chunkSize.value), content.count)]))
        }
        let file = try store.makeTemporaryFile(label: "pack")
        try content.withUnsafeBytes { try file.write($0) }
        try store.publish(file, as: hostile, at: Date(timeIntervalSince1970: 100))
        #expect(store.contains(hostile))
        #expect(!store.contains(packA), "verified against other chunks: not pack A")

        // The next mount, with the honest manifest: the file fails A's chunks and goes.
        let report = try reconcile(store)
        #expect(report.packs[packA.sha256.hex] == nil)
        #expect(report.deleted == [packA.sha256.hex])
        #expect(!FileManager.default.fileExists(atPath: store.path(of: packA)))

        // The honest download is trusted from then on, by a later reconcile too.
        try publish(packA, in: store)
        #expect(store.contains(packA))
        let again = try reconcile(store)
        #expect(again.packs[packA.sha256.hex]?.chunkList == packA.chunkListDigest.hex)
        #expect(again.reverified.isEmpty && again.deleted.isEmpty)
    }

    @Test("a recorded file that was touched but still verifies is kept")
    func touchedButIntact() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        try publish(packA, in: store)
        usleep(10_000)
        try Data(bundle.files[packA.file]!).write(to: URL(fileURLWithPath: store.path(of: packA)))
        let report = try reconcile(store)
        #expect(report.reverified == [packA.sha256.hex])
        #expect(Set(report.packs.keys) == [packA.sha256.hex])
        #expect(report.packs[packA.sha256.hex]?.firstFetch == Date(timeIntervalSince1970: 100), "history kept")
    }

    @Test("deferring hashes: files that need one wait unread in unverified/, the history of their rows kept")
    func deferredHashes() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        try publish(packA, in: store)
        // A touched pack A (row kept) and an unrecorded pack B whose bytes are wrong: neither is read now.
        usleep(10_000)
        try Data(bundle.files[packA.file]!).write(to: URL(fileURLWithPath: store.path(of: packA)))
        var wrong = bundle.files[packB.file]!
        wrong[10] ^= 1
        try Data(wrong).write(to: URL(fileURLWithPath: store.path(of: packB)))
        let report = try store.reconcile(expected: bundle.manifest.packs, chunkSize: SyntheticBundle.chunkSize, deferringHashes: true)
        #expect(report.packs.isEmpty && report.deleted.isEmpty && report.reverified.isEmpty)
        #expect(Set(report.unverified.map(\.id)) == [packA.id, packB.id])
        #expect(FileManager.default.fileExists(atPath: store.layout.unverifiedPath(of: packB)), "hashed at startup")
        #expect(!store.contains(packA) && !store.contains(packB))

        // The background check: the right copy goes back with its history, the wrong one goes.
        let identity = try #require(store.verifyUnverified(packA, chunkSize: SyntheticBundle.chunkSize))
        #expect(store.moveVerifiedIntoPlace(packA))
        #expect(try store.recordVerified(packA, identity: identity, now: Date()).firstFetch == Date(timeIntervalSince1970: 100))
        #expect(store.contains(packA))
        #expect(store.verifyUnverified(packB, chunkSize: SyntheticBundle.chunkSize) == nil)
        #expect(!FileManager.default.fileExists(atPath: store.layout.unverifiedPath(of: packB)))

        // A copy still waiting at the next start is listed again; one of another bundle goes.
        try Data(bundle.files[packB.file]!).write(to: URL(fileURLWithPath: store.layout.unverifiedPath(of: packB)))
        let stranger = store.layout.unverifiedDirectory + "/" + String(repeating: "ab", count: 32) + ".tar"
        _ = FileManager.default.createFile(atPath: stranger, contents: Data([1]))
        let again = try store.reconcile(expected: bundle.manifest.packs, chunkSize: SyntheticBundle.chunkSize, deferringHashes: true)
        #expect(again.unverified.map(\.id) == [packB.id])
        #expect(Set(again.packs.keys) == [packA.sha256.hex])
        #expect(!FileManager.default.fileExists(atPath: stranger))
    }

    @Test("a partial download left in tmp/ is removed when the store opens")
    func partialTemporaryFile() throws {
        let cache = try TemporaryDirectory()
        do {
            let store = try PackStore(root: cache.path, logger: logger)
            let file = try store.makeTemporaryFile(label: "pack")
            try [UInt8](repeating: 1, count: 100).withUnsafeBytes { try file.write($0) }
            // Simulate kill -9: the file is never discarded.
            _ = Unmanaged.passRetained(file)
            store.releaseLock()
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path + "/tmp").count == 1)
        _ = try PackStore(root: cache.path, logger: logger)
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path + "/tmp").isEmpty)
    }

    @Test("verified packs of another bundle version stay cached")
    func packsOfOtherVersionsStay() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        try publish(packA, in: store)
        let report = try store.reconcile(expected: [bundle.manifest.packs[0]], chunkSize: SyntheticBundle.chunkSize)
        #expect(Set(report.packs.keys) == [packA.sha256.hex])
    }

    @Test("access times and priorities persist in the index")
    func indexPersists() throws {
        let cache = try TemporaryDirectory()
        do {
            let store = try PackStore(root: cache.path, logger: logger)
            try publish(packA, in: store)
            try store.index.recordAccesses([(packA.sha256.hex, Date(timeIntervalSince1970: 500), 3)])
            try store.index.setPriority(0.75, for: Tag("A"))
            store.releaseLock()
        }
        let store = try PackStore(root: cache.path, logger: logger)
        let record = try #require(try store.index.allPacks().first)
        #expect(record.lastAccess == Date(timeIntervalSince1970: 500))
        #expect(record.accessCount == 3)
        #expect(try store.index.priorityOverrides() == [Tag("A"): 0.75])
    }

    @Test("a last access kept at the index's precision survives the round trip exactly",
          arguments: [500.0, 500.4996, 500.49999, 500.5, 500.9996, 500.99999])
    func lastAccessRoundTrip(seconds: Double) throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        try publish(packA, in: store)
        let when = Date(timeIntervalSince1970: seconds).cacheIndexPrecision
        try store.index.recordAccesses([(packA.sha256.hex, when, 1)])
        let stored = try #require(try store.index.allPacks().first?.lastAccess)
        #expect(stored == when)
        // The status table shows whole seconds: a remount must not move them.
        #expect(stored.formatted(.iso8601) == Date(timeIntervalSince1970: seconds).formatted(.iso8601))
    }
}
