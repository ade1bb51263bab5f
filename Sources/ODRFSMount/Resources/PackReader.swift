import ODRFSCore
import ODRFSStore
import Synchronization

/// What an open file handle reads through: one retain of its pack and the pack file it
/// opened, with that file's own verified prefix.
///
/// The file handle owns its reader (`BundleFileSystem` keeps `FileHandleID → PackReader`)
/// and `close()`s it on release, which drops the retain. A reader is never moved to
/// another file: if the download it opened fails, bytes verified in its file stay
/// readable and the rest fails with EIO — it can never be let past its own file's
/// verified prefix by a later download of the same pack.
public final class PackReader: Sendable {
    public let pack: PackNumber
    /// The pack file this reader reads, shared with other readers of the same file.
    public let file: VerifiedFile
    private let manager: ResourceManager
    private let closed = Atomic<Bool>(false)

    init(pack: PackNumber, file: VerifiedFile, manager: ResourceManager) {
        self.pack = pack
        self.file = file
        self.manager = manager
    }

    /// The descriptor to read (pread or splice at explicit offsets).
    public var descriptor: Int32 { file.descriptor }

    /// Drops the retain. Idempotent.
    public func close() {
        if !closed.exchange(true, ordering: .acquiringAndReleasing) {
            manager.release(pack)
        }
    }

    deinit {
        // A reader dropped without close() (a handle table torn down) must not leak its retain.
        close()
    }
}
