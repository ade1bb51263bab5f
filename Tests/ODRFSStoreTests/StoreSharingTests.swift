import Foundation
import Logging
import ODRFSCore
import ODRFSStore
import TestSupport
import Testing

/// Issue 23, item 1: one store, any number of mounts of the same or of different bundles.
@Suite("Store sharing")
struct StoreSharingTests {
    let logger = Logger(label: "test")
    static let hashA = String(repeating: "a", count: 64)
    static let hashB = String(repeating: "b", count: 64)

    func write(_ bytes: Int, to path: String) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(repeating: 1, count: bytes))
    }

    @Test("mounts of one store coexist, each with its own work directory; a private cache of the store's directory is refused while they run")
    func mountsCoexist() throws {
        let root = try TemporaryDirectory()
        let first = try PackStore(store: root.path, bundle: "0123456789abcdef", logger: logger)
        let second = try PackStore(store: root.path, bundle: "0123456789abcdef", logger: logger)
        let other = try PackStore(store: root.path, bundle: "fedcba9876543210", logger: logger)
        #expect(first.layout.packsDirectory == other.layout.packsDirectory)
        #expect(first.layout.manifestFile == second.layout.manifestFile)
        #expect(first.layout.manifestFile != other.layout.manifestFile)
        #expect(Set([first.layout.temporaryDirectory, second.layout.temporaryDirectory, other.layout.temporaryDirectory]).count == 3)
        #expect(throws: StoreError.self) { try PackStore(root: root.path, logger: logger) }
        var info = stat()
        #expect(stat(root.path + "/packs", &info) == 0 && info.st_mode & 0o777 == 0o700)
        let work = second.layout.workRoot
        second.releaseLock()
        #expect(access(work, F_OK) != 0, "a mount's work directory outlived it")
        withExtendedLifetime((first, other)) {}
    }

    @Test("one purge at a time across the mounts of a store: a tick skips while another mount purges; a private cache always purges")
    func onePurgeAtATime() throws {
        let root = try TemporaryDirectory()
        let first = try PackStore(store: root.path, bundle: "0123456789abcdef", logger: logger)
        let second = try PackStore(store: root.path, bundle: "fedcba9876543210", logger: logger)
        let inner = first.purging(waiting: false) { second.purging(waiting: false) { "second purged" } }
        #expect(inner == .some(nil), "a second mount purged while the first did")
        #expect(second.purging(waiting: false) { "second purged" } == "second purged")
        #expect(first.purging(waiting: true) { 1 } == 1)
        let other = try TemporaryDirectory()
        let privateCache = try PackStore(root: other.path, logger: logger)
        #expect(privateCache.purging(waiting: false) { privateCache.purging(waiting: false) { 2 } } == .some(2))
    }

    @Test("a pack another mount holds is not moved to the trash; once the hold is gone it is")
    func holdsKeepPacks() throws {
        let root = try TemporaryDirectory()
        let holder = try PackStore(store: root.path, bundle: "0123456789abcdef", logger: logger)
        let evictor = try PackStore(store: root.path, bundle: "fedcba9876543210", logger: logger)
        write(100, to: root.path + "/packs/\(Self.hashA).tar")
        var hold = holder.hold(sha256: Self.hashA)
        #expect(hold != nil)
        #expect(evictor.moveToTrashUnlessHeld(sha256: Self.hashA) == .held)
        #expect(access(root.path + "/packs/\(Self.hashA).tar", F_OK) == 0)
        hold = nil
        #expect(evictor.moveToTrashUnlessHeld(sha256: Self.hashA) == .moved)
        #expect(evictor.moveToTrashUnlessHeld(sha256: Self.hashA) == .absent)
        #expect(holder.hold(sha256: Self.hashA) == nil, "a hold on a file that is gone")
        withExtendedLifetime(hold) {}
    }

    @Test("a private cache takes no holds and evicts as before")
    func privateCacheHasNoHolds() throws {
        let root = try TemporaryDirectory()
        let store = try PackStore(root: root.path, logger: logger)
        write(100, to: root.path + "/packs/\(Self.hashA).tar")
        #expect(store.hold(sha256: Self.hashA) == nil)
        #expect(store.moveToTrashUnlessHeld(sha256: Self.hashA) == .moved)
    }

    @Test("references: a live mount's count for the others, a dead mount's do not, and its work directory is removed")
    func referencesAndDeadMounts() throws {
        let root = try TemporaryDirectory()
        let observer = try PackStore(store: root.path, bundle: "0123456789abcdef", logger: logger)
        var other: PackStore? = try PackStore(store: root.path, bundle: "fedcba9876543210", logger: logger)
        other?.recordReferences([(Self.hashA, 0.5, false)], running: true)
        // A malformed line among them (outside input) is skipped.
        try? "idle\nnot a hash 0.1 -\n\(Self.hashA) 0.5 base\n".write(toFile: other!.layout.referencesFile, atomically: true, encoding: .utf8)
        observer.recordReferences([(Self.hashB, 0, false)], running: false)
        #expect(observer.referencesOfOtherMounts() == [Self.hashA], "a mount counts its own references or a malformed line")
        let published = observer.mountedBundles()
        #expect(published.count == 2)
        #expect(published.contains { $0.packs[Self.hashA]?.isBase == true && $0.packs[Self.hashA]?.priority == 0.5 && !$0.running })
        // A mount that died: its lock is free (here: the process let go of it without
        // cleaning up, as kill -9 would leave it).
        let dead = root.path + "/mounts/12345-00000000deadbeef"
        try FileManager.default.createDirectory(atPath: dead + "/tmp", withIntermediateDirectories: true)
        write(10, to: dead + "/tmp/pack.partial")
        write(0, to: dead + "/lock")
        try (Self.hashB + "\n").write(toFile: dead + "/references", atomically: true, encoding: .utf8)
        #expect(!observer.referencesOfOtherMounts().contains(Self.hashB), "a dead mount's references still count")
        other = nil
        #expect(observer.referencesOfOtherMounts().isEmpty, "a released mount's references still count")
        let next = try PackStore(store: root.path, bundle: "0123456789abcdef", logger: logger)
        #expect(access(dead, F_OK) != 0, "a dead mount's work directory was left")
        #expect(access(observer.layout.workRoot, F_OK) == 0, "a live mount's work directory was removed")
        withExtendedLifetime((observer, next)) {}
    }

    @Test("a cache of the release before the store is taken in: vouched packs moved with their rows, the rest to be hashed, indexes and manifest kept, the directory gone")
    func legacyCacheTakenIn() throws {
        let root = try TemporaryDirectory()
        let key = "0123456789abcdef"
        let legacy = root.path + "/" + key
        let vouched: CachedPack
        do {
            let old = try PackStore(root: legacy, logger: logger)
            write(100, to: legacy + "/packs/\(Self.hashA).tar")
            write(50, to: legacy + "/packs/\(Self.hashB).tar")
            write(30, to: legacy + "/index/\(Self.hashA).odrx")
            try Data("{}".utf8).write(to: URL(fileURLWithPath: legacy + "/manifest.json"))
            let identity = try #require(FileIdentity.of(path: legacy + "/packs/\(Self.hashA).tar"))
            vouched = CachedPack(sha256: try #require(ContentHash(hex: Self.hashA)), packID: PackID("Level1"), bytes: ByteCount(100),
                                 firstFetch: Date(timeIntervalSince1970: 1_000), identity: identity)
            try old.index.save(vouched)
            try old.bundleIndex.setPriority(0.9, for: Tag("Level1"))
        }
        let store = try PackStore(store: root.path, bundle: key, logger: logger)
        #expect(access(legacy, F_OK) != 0, "the old directory was left")
        #expect(try store.index.pack(sha256: Self.hashA)?.identity == vouched.identity)
        #expect(access(root.path + "/packs/\(Self.hashA).tar", F_OK) == 0)
        #expect(access(store.layout.unverifiedDirectory + "/\(Self.hashB).tar", F_OK) == 0, "an unvouched pack was not kept for hashing")
        #expect(try store.index.pack(sha256: Self.hashB) == nil)
        #expect(access(store.layout.indexDirectory + "/\(Self.hashA).odrx", F_OK) == 0)
        #expect(FileManager.default.contents(atPath: store.layout.manifestFile) == Data("{}".utf8))
        #expect(try store.bundleIndex.priorityOverrides() == [Tag("Level1"): 0.9])
    }

    @Test("a cache an older odrfs still uses is not taken in: the mount fails saying so")
    func legacyCacheInUse() throws {
        let root = try TemporaryDirectory()
        let key = "0123456789abcdef"
        let old = try PackStore(root: root.path + "/" + key, logger: logger)
        let error = #expect(throws: StoreError.self) { try PackStore(store: root.path, bundle: key, logger: logger) }
        #expect(error?.kind == .locked)
        #expect(error?.message.contains("older odrfs") == true, "\(error?.message ?? "")")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path + "/mounts").isEmpty, "a failed mount left its directory")
        withExtendedLifetime(old) {}
    }
}
