import Foundation
import ODRFSCore
import ODRFSStore

extension ResourceManager {
    /// The background pass over the packs whose cached copies wait in `unverified/` (a
    /// lost or damaged index; see `PackStore+Unverified.swift`): hashes each on the I/O
    /// executor, one at a time, and makes it local if it is right and nothing fetched it
    /// meanwhile. A pack an open needs first does not wait for this pass: its download
    /// adopts the copy itself. Returns the packs made local; stops early when cancelled or
    /// when `isServing` turns false (an update retired this manager: the copies left are
    /// adopted by the new revision's downloads, or listed again at the next mount).
    @discardableResult
    public func verifyUnverifiedPacks(while isServing: @Sendable () -> Bool = { true }) async -> Int {
        var adopted = 0
        for pack in unverified {
            if Task.isCancelled || !isServing() { break }
            let descriptor = manifest.pack(pack)
            // Local or downloading already: the download adopts (or has adopted) the copy.
            guard state(of: pack) == .notDownloaded else { continue }
            let chunkSize = manifest.chunkSize
            let identity = await io.run { [store] in store.verifyUnverified(descriptor, chunkSize: chunkSize) }
            guard let identity, !Task.isCancelled, isServing() else { continue }
            // The rename runs on the I/O executor, never under the lock (no lock across I/O).
            // A download that starts meanwhile finds no copy to adopt and publishes the same
            // verified bytes at the same path; so the pack is made local here only if none
            // did, and otherwise the download's own publication decides.
            guard state(of: pack) == .notDownloaded,
                  await io.run({ [store] in store.moveVerifiedIntoPlace(descriptor) }) else { continue }
            guard table.publishVerifiedCopy(pack) else { continue }
            adopted += 1
            let now = table.clock()
            do {
                let record = try await io.run { [store] () throws(StoreError) in
                    try store.recordVerified(descriptor, identity: identity, now: now)
                }
                table.noteAccess(pack, ifNoneSince: record.lastAccess)
            } catch {
                // Local for this session; unrecorded, so the next startup hashes it again.
                logger.error("cannot record a re-verified pack", metadata: ["pack.id": "\(descriptor.id)", "error": "\(error)"])
            }
            // A pack back in the cache may have pushed it over its limits.
            purger.wake(.afterDownload)
        }
        return adopted
    }
}
