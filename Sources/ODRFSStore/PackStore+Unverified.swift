import Foundation
import ODRFSCore

/// Cached packs the index no longer vouches for, hashed after the mount is ready instead of
/// before: `reconcile(…, deferringHashes: true)` moves them to `unverified/`, where nothing
/// serves them. Two ways lead back to `packs/`, each with the hash checked first:
/// - the background pass of the resource manager (``verifyUnverified(_:chunkSize:)``, then
///   ``moveVerifiedIntoPlace(_:)`` under its lock when no download owns the pack, then
///   ``recordVerified(_:identity:now:)``);
/// - a download of that pack, which tries ``adoptUnverified(_:chunkSize:now:)`` before the
///   network (an open that comes first, an initial-install pack, an offline mount).
/// The two never move the same file: the first only while no download owns the pack, the
/// second only as that download.
extension PackStore {
    /// Hashes the waiting copy of `pack`: its identity if right. A wrong copy is deleted;
    /// nil too when there is none (adopted or deleted meanwhile). Blocking: I/O executor.
    public func verifyUnverified(_ pack: PackDescriptor, chunkSize: ByteCount) -> FileIdentity? {
        let path = layout.unverifiedPath(of: pack)
        guard let identity = FileIdentity.of(path: path) else { return nil }
        guard identity.size == pack.bytes.value, verify(path: path, as: pack, chunkSize: chunkSize) else {
            logger.warning("deleting cached pack that fails verification", metadata: ["pack.id": "\(pack.id)", "path": "\(path)"])
            unlink(path)
            return nil
        }
        return identity
    }

    /// Moves the verified waiting copy of `pack` into `packs/`: one `rename(2)`, cheap enough
    /// under the resource manager's lock, which is what guarantees no download owns the path.
    public func moveVerifiedIntoPlace(_ pack: PackDescriptor) -> Bool {
        rename(layout.unverifiedPath(of: pack), layout.path(of: pack)) == 0
    }

    /// Records a pack just moved into place, durably (the rename too: `packs/` is synced),
    /// keeping the fetch and access history of its earlier row. Blocking: I/O executor.
    @discardableResult
    public func recordVerified(_ pack: PackDescriptor, identity: FileIdentity, now: Date) throws(StoreError) -> CachedPack {
        let directory = open(layout.packsDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            _ = fsync(directory)
            close(directory)
        }
        var record = try index.pack(sha256: pack.sha256.hex)
            ?? CachedPack(sha256: pack.sha256, packID: pack.id, bytes: pack.bytes, firstFetch: now, identity: identity)
        record.chunkList = pack.chunkListDigest.hex
        record.fileSize = identity.size
        record.fileModifiedNanoseconds = identity.modifiedNanoseconds
        record.fileInode = identity.inode
        try index.save(record)
        logger.info("re-verified cached pack", metadata: ["pack.id": "\(pack.id)"])
        return record
    }

    /// For the download of `pack` (which owns its path in `packs/`): the waiting copy, if
    /// there is one and it is right, moved into place and recorded; nil otherwise (then
    /// download it). Blocking: I/O executor.
    public func adoptUnverified(_ pack: PackDescriptor, chunkSize: ByteCount, now: Date) -> CachedPack? {
        guard let identity = verifyUnverified(pack, chunkSize: chunkSize), moveVerifiedIntoPlace(pack) else { return nil }
        do {
            return try recordVerified(pack, identity: identity, now: now)
        } catch {
            // In place but unrecorded: the download publishes over it; the next startup sorts it out.
            logger.error("cannot record a re-verified pack", metadata: ["pack.id": "\(pack.id)", "error": "\(error)"])
            return nil
        }
    }
}
