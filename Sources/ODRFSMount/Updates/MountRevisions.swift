import ODRFSCore
import Synchronization

/// The resource managers of a mount's revisions: the current one (what new opens, tag
/// requests, status and maintenance use) and those an update retired, which still own
/// the retains of handles and tag requests taken before the switch.
final class MountRevisions: Sendable {
    private let fileSystem: RevisionSwitchingFileSystem?
    private let fixed: ResourceManager
    private let retired = Mutex<[ResourceManager]>([])
    /// Tag requests held now, carried over by tag name at each switch.
    let held = HeldRequests()

    /// A mount whose revision an update can switch.
    init(fileSystem: RevisionSwitchingFileSystem) {
        self.fileSystem = fileSystem
        self.fixed = fileSystem.served.manager
    }

    /// One manager for the life of the service (no updates).
    init(manager: ResourceManager) {
        self.fileSystem = nil
        self.fixed = manager
    }

    /// The manager of the revision served now.
    var current: ResourceManager { fileSystem?.served.manager ?? fixed }

    /// The manager that served `revision`, current or retired.
    func manager(revision: Int64) -> ResourceManager? {
        let current = self.current
        if current.manifest.revision == revision { return current }
        return retired.withLock { $0.first { $0.manifest.revision == revision } }
    }

    /// Records a manager an update replaced.
    func retire(_ manager: ResourceManager) {
        retired.withLock { $0.append(manager) }
    }

    /// Moves held tag requests to `manager`'s revision (call it once that revision is
    /// served): new retains first, then the old ones are released in their own revision.
    func carryOverHeldRequests(to manager: ResourceManager) {
        for hold in held.carryOver(to: manager) {
            self.manager(revision: hold.revision)?.endAccessing(hold.packs)
        }
    }
}
