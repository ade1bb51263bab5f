import Foundation
import ODRFSCore
import ODRFSFetch

/// Where a retained pack's bytes can be read.
public enum PackAccess: Sendable, Equatable {
    /// Verified and published in the cache.
    case local(path: String)
    /// Still downloading: the leading bytes are verified, the rest arrive in the file at
    /// `path` (renamed into place when done); reads beyond the verified prefix wait.
    case partial(path: String)
    /// The download failed after this caller was let in early.
    case unavailable
}

extension ResourceManager {
    /// Progressive open: retains `pack` and returns as soon as its first `prefix` bytes
    /// are downloaded *and* verified by their chunk hashes, so the first bytes of a large
    /// file are readable long before the whole pack is in. A reader never sees an
    /// unverified byte: reads past the verified prefix wait in `waitForVerified`.
    public func retainProgressively(_ pack: PackNumber, prefix: Int64, priority: DownloadPriority = .urgent) async throws(FetchError) -> PackAccess {
        try await acquire(pack, retains: true, priority: priority, prefix: prefix)
        return access(pack)
    }

    /// The synchronous half of `retainProgressively`, for the FUSE thread: if `pack` is
    /// local, or downloading with its first `prefix` bytes already verified, retains it
    /// and says where to read it; otherwise nil, with nothing retained or started. Most
    /// opens of a pack that is streaming in find their bytes already there; they then
    /// cost no task and no continuation.
    public func retainIfVerified(_ pack: PackNumber, prefix: Int64) -> PackAccess? {
        let now = clock()
        let index = Int(pack.rawValue)
        let local = store.path(of: manifest.pack(pack))
        return state.withLock { state -> PackAccess? in
            if state.slots[index].isLocal {
                retain(index, in: &state, at: now)
                return .local(path: local)
            }
            guard let download = state.slots[index].download, let partial = download.temporaryPath,
                  download.verifiedBytes >= prefix else { return nil }
            state.slots[index].download?.earlyReaders += 1
            retain(index, in: &state, at: now)
            return .partial(path: partial)
        }
    }

    /// Where `pack` can be read now.
    public func access(_ pack: PackNumber) -> PackAccess {
        state.withLock { state in
            let slot = state.slots[Int(pack.rawValue)]
            if slot.isLocal { return .local(path: store.path(of: manifest.pack(pack))) }
            if let path = slot.download?.temporaryPath { return .partial(path: path) }
            return .unavailable
        }
    }

    /// Leading bytes of `pack` a progressive reader may read now (all of them once local).
    public func verifiedBytes(of pack: PackNumber) -> Int64 {
        state.withLock { state in
            let slot = state.slots[Int(pack.rawValue)]
            return slot.isLocal ? Int64.max : (slot.download?.verifiedBytes ?? 0)
        }
    }

    /// Waits until `bytes` leading bytes of `pack` are verified. Never starts a download:
    /// if the one a reader was let into failed, this throws.
    public func waitForVerified(_ pack: PackNumber, bytes: Int64) async throws(FetchError) {
        try await acquire(pack, retains: false, priority: .urgent, prefix: bytes, startIfNeeded: false)
    }
}
