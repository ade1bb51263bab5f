import CPowerCutVFS
import Foundation
import ODRFSCore
import ODRFSStore
import TestSupport
import Testing

/// What the cache index keeps across a power cut, as opposed to a crash: the highest
/// revision seen per trust key (the rollback guard), the user's priority overrides and the
/// rows of verified packs must be on stable storage when the write returns.
///
/// The power cut is simulated as LazyFS does it, without FUSE: the index is opened through
/// the test VFS "powercut" (Tests/CPowerCutVFS), which copies each file SQLite writes to
/// `<file>.synced` every time SQLite fsyncs it. Those copies are the directory as a power
/// cut leaves it: every byte written since a file's last fsync lost, every byte before kept,
/// a file never synced gone. The test cuts the power while the index is still open (no
/// close, no checkpoint), puts the copies in a fresh directory under their own names and
/// opens the index there, as the next mount would after the machine comes back.
@Suite("Power cut")
struct PowerCutTests {
    let signer = SigningKey()

    /// The cache index in `directory`, its every fsync recorded.
    static func openRecorded(in directory: TemporaryDirectory) throws -> CacheIndex {
        try #require(CPowerCutVFS_register() == 0)
        let path = (directory.path as NSString).standardizingPath + "/index.sqlite"
        return try CacheIndex(path: "file:\(path)?vfs=powercut")
    }

    /// A new directory holding what a power cut leaves of `directory`: the synced copies.
    static func afterPowerCut(of directory: TemporaryDirectory) throws -> TemporaryDirectory {
        let survivor = try TemporaryDirectory()
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasSuffix(".synced") {
            try FileManager.default.copyItem(atPath: directory.path + "/" + name,
                                             toPath: survivor.path + "/" + name.dropLast(".synced".count))
        }
        return survivor
    }

    func signedManifest(revision: Int64) throws -> (manifest: Data, signature: Data) {
        var bundle = SyntheticBundle(packContents: [(.base, SyntheticBundle.bytes(10, seed: 0)), (PackID("Italy"), SyntheticBundle.bytes(100, seed: 1))])
        bundle.manifest.revision = revision
        let data = bundle.manifest.encoded()
        return (data, Data(try signer.sign(data).fileContents.utf8))
    }

    @Test("a signed revision recorded before a power cut still refuses an older one after it")
    func revisionSurvives() throws {
        let cache = try TemporaryDirectory()
        let index = try Self.openRecorded(in: cache)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let trust = ManifestTrust(trustedKeys: [signer.publicKey])
        let second = try signedManifest(revision: 2)
        let accepted = try trust.verify(manifest: second.manifest, signature: second.signature, now: now,
                                        seen: try index.seenRevisions())
        try index.recordRevision(accepted.manifest.revision, key: accepted.signer.id, at: now)

        // The power goes while the index is open: a close would checkpoint and sync.
        let survivor = try withExtendedLifetime(index) { try Self.afterPowerCut(of: cache) }
        let seen = try CacheIndex(path: survivor.path + "/index.sqlite").seenRevisions()
        #expect(seen[signer.publicKey.id]?.revision == 2)
        let first = try signedManifest(revision: 1)
        do {
            _ = try trust.verify(manifest: first.manifest, signature: first.signature, now: now, seen: seen)
            Issue.record("revision 1 was accepted after a power cut that followed revision 2")
        } catch {
            #expect(error.kind == .rollback)
        }
    }

    @Test("a priority override and a verified pack's row survive a power cut")
    func prioritiesAndPacksSurvive() throws {
        let cache = try TemporaryDirectory()
        let index = try Self.openRecorded(in: cache)
        let hash = ContentHash.of(Array("pack".utf8))
        let row = CachedPack(sha256: hash, packID: PackID("Italy"), bytes: ByteCount(4), firstFetch: Date(timeIntervalSince1970: 1_800_000_000),
                             identity: FileIdentity(size: 4, modifiedNanoseconds: 5, inode: 6))
        try index.save(row)
        try index.setPriority(0.75, for: Tag("Italy"))

        let survivor = try withExtendedLifetime(index) { try Self.afterPowerCut(of: cache) }
        let reopened = try CacheIndex(path: survivor.path + "/index.sqlite")
        #expect(try reopened.priorityOverrides() == [Tag("Italy"): 0.75])
        // Known after the power cut: reconcile trusts it by its identity, with no re-hash.
        #expect(try reopened.pack(sha256: hash.hex) == row)
    }
}
