import ODRFSCore
import Synchronization

/// The revisions of a mount: the one served now (``current``: what new opens, tag
/// requests, status, metrics and maintenance use) and those an update retired, whose
/// managers still own the retains of handles and tag requests taken before the switch.
///
/// ``current`` is the one way to the revision served now; ``switchTo(_:)`` the one way to
/// change it.
final class MountRevisions: Sendable {
    private let fileSystem: RevisionSwitchingFileSystem
    /// Managers only: a retired revision's file index (mapped) and view are let go.
    private let retired = Mutex<[ResourceManager]>([])
    /// Tag requests held now, carried over by tag name at each switch.
    let held = HeldRequests()

    /// A mount whose revision an update can switch.
    init(fileSystem: RevisionSwitchingFileSystem) {
        self.fileSystem = fileSystem
    }

    /// One manager for the life of the service, without a mount (no updates).
    convenience init(manager: ResourceManager) throws(FileIndexError) {
        self.init(fileSystem: RevisionSwitchingFileSystem(try MountedRevision.detached(manager)))
    }

    /// The revision served now.
    var current: MountedRevision { fileSystem.served }

    /// The manager of the view `generation` (``ResourceManager/generation``), current or retired.
    func manager(generation: Int64) -> ResourceManager? {
        let current = self.current
        if current.manager.generation == generation { return current.manager }
        return retired.withLock { $0.first { $0.generation == generation } }
    }

    /// Serves `next` from now on: the revision it replaces is retired (its manager keeps
    /// the retains taken before), FUSE requests reach `next`, and held tag requests move to
    /// it. Returns the revision replaced.
    @discardableResult
    func switchTo(_ next: MountedRevision) -> MountedRevision {
        let old = current
        retired.withLock { $0.append(old.manager) }
        fileSystem.switchTo(next)
        carryOverHeldRequests(to: next.manager)
        return old
    }

    /// Moves held tag requests to `manager`'s revision (call it once that revision is
    /// served): new retains first, then the old ones are released in their own revision.
    private func carryOverHeldRequests(to manager: ResourceManager) {
        for hold in held.carryOver(to: manager) {
            self.manager(generation: hold.generation)?.endAccessing(hold.packs)
        }
    }
}
