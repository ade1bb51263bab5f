import Foundation
import ODRFSCore
import ODRFSFetch

/// Base resources (the base pack and its variants) and initial-install tags are local
/// before the mount is ready.
enum InitialInstall {
    /// Downloads them all at once (the download queue bounds the concurrency), calling
    /// `progress` with (bytes local, bytes total) for the waiting `odrfs mount`'s bar.
    static func run(manager: ResourceManager, progress: @escaping @Sendable (Int64, Int64) -> Void) async throws(MountError) {
        let manifest = manager.manifest
        let base = manifest.basePacks
        let packs = base + manager.tagPacks.packs(for: manifest.initialInstall).filter { !base.contains($0) }
        for pack in packs { manager.noteAccess(pack, cause: .initialInstall) }
        let total = manager.progress(of: packs).total
        let observation = manager.observeProgress(of: packs) { done, total in progress(done, total) }
        defer { observation.cancel() }
        let failure = await withTaskGroup(of: (PackNumber, FetchError)?.self) { group in
            for pack in packs {
                group.addTask {
                    do throws(FetchError) {
                        try await manager.makeLocal(pack, priority: .urgent)
                        return nil
                    } catch {
                        return (pack, error)
                    }
                }
            }
            var first: (PackNumber, FetchError)?
            for await result in group where first == nil { first = result }
            return first
        }
        if let (pack, error) = failure {
            throw MountError("cannot install pack '\(manifest.pack(pack).id)' before mounting: \(error)")
        }
        progress(total, total)
    }
}
