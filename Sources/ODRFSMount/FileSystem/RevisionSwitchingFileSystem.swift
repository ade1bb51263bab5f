import FUSEKit
import Synchronization

/// The mount's FUSE filesystem across revisions: forwards each request, whole, to the
/// ``BundleFileSystem`` of the revision (``MountedRevision``) served when the request arrived.
///
/// An update builds the next revision aside (its view sharing the open-file table) and
/// swaps it in with ``switchTo(_:)`` (through ``MountRevisions/switchTo(_:)``): one pointer under a lock, so a request sees
/// one revision from start to end, and a handle opened before the switch keeps reading
/// the bytes it opened (see ``ReaderTable``).
final class RevisionSwitchingFileSystem: FUSEFileSystem {
    /// The revision served now, and the one it replaced (nil before the first update).
    private let revisions: Mutex<(current: MountedRevision, previous: MountedRevision?)>

    init(_ initial: MountedRevision) {
        revisions = Mutex((initial, nil))
    }

    /// The revision served now.
    var served: MountedRevision { revisions.withLock { $0.current } }

    /// The view of the revision served now.
    private var view: BundleFileSystem { served.fileSystem }

    /// The revision that knows `inode`: the one served now, or — for an inode of a file
    /// the switch changed, which a program looked up just before it (`open` after
    /// `lookup`, `fstat`) — the one it replaced, so that such a request still sees one
    /// whole revision instead of failing.
    private func serving(_ inode: InodeNumber) -> BundleFileSystem {
        revisions.withLock { revisions in
            let current = revisions.current.fileSystem
            guard current.inodes.node(for: inode) == nil, let previous = revisions.previous?.fileSystem,
                  previous.inodes.node(for: inode) != nil else { return current }
            return previous
        }
    }

    /// Serves `next` from now on; returns the one it replaces.
    @discardableResult
    func switchTo(_ next: MountedRevision) -> MountedRevision {
        revisions.withLock { revisions in
            let previous = revisions.current
            revisions = (next, previous)
            return previous
        }
    }

    func configure(_ connection: inout ConnectionConfiguration) {
        view.configure(&connection)
    }

    func lookup(parent: InodeNumber, name: String, request: consuming FUSERequest) {
        view.lookup(parent: parent, name: name, request: request)
    }

    func getAttributes(inode: InodeNumber, request: consuming FUSERequest) {
        serving(inode).getAttributes(inode: inode, request: request)
    }

    func readLink(inode: InodeNumber, request: consuming FUSERequest) {
        serving(inode).readLink(inode: inode, request: request)
    }

    func open(inode: InodeNumber, flags: OpenFlags, request: consuming FUSERequest) {
        serving(inode).open(inode: inode, flags: flags, request: request)
    }

    func read(inode: InodeNumber, handle: FileHandleID, offset: Int64, size: Int, request: consuming FUSERequest) {
        view.read(inode: inode, handle: handle, offset: offset, size: size, request: request)
    }

    func release(inode: InodeNumber, handle: FileHandleID, request: consuming FUSERequest) {
        view.release(inode: inode, handle: handle, request: request)
    }

    func openDirectory(inode: InodeNumber, request: consuming FUSERequest) {
        view.openDirectory(inode: inode, request: request)
    }

    func readDirectory(inode: InodeNumber, handle: FileHandleID, offset: Int64, size: Int, plus: Bool, request: consuming FUSERequest) {
        view.readDirectory(inode: inode, handle: handle, offset: offset, size: size, plus: plus, request: request)
    }

    func releaseDirectory(inode: InodeNumber, handle: FileHandleID, request: consuming FUSERequest) {
        view.releaseDirectory(inode: inode, handle: handle, request: request)
    }

    func statistics(inode: InodeNumber, request: consuming FUSERequest) {
        view.statistics(inode: inode, request: request)
    }

    func getExtendedAttribute(inode: InodeNumber, name: String, size: Int, request: consuming FUSERequest) {
        serving(inode).getExtendedAttribute(inode: inode, name: name, size: size, request: request)
    }

    func listExtendedAttributes(inode: InodeNumber, size: Int, request: consuming FUSERequest) {
        serving(inode).listExtendedAttributes(inode: inode, size: size, request: request)
    }

    func access(inode: InodeNumber, mask: Int32, request: consuming FUSERequest) {
        serving(inode).access(inode: inode, mask: mask, request: request)
    }

    func rejectMutation(_ operation: String, request: consuming FUSERequest) {
        view.rejectMutation(operation, request: request)
    }

    func destroy() {
        view.destroy()
    }
}
