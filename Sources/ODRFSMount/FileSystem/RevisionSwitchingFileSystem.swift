import FUSEKit
import Synchronization

/// The mount's FUSE filesystem across revisions: forwards each request, whole, to the
/// ``BundleFileSystem`` of the revision served when the request arrived.
///
/// An update builds the next revision's `BundleFileSystem` aside (sharing the open-file
/// table) and swaps it in with ``switchTo(_:)``: one pointer under a lock, so a request sees
/// one revision from start to end, and a handle opened before the switch keeps reading
/// the bytes it opened (see ``ReaderTable``).
final class RevisionSwitchingFileSystem: FUSEFileSystem {
    /// The revision served now, and the one it replaced (nil before the first update).
    private let revisions: Mutex<(current: BundleFileSystem, previous: BundleFileSystem?)>

    init(_ initial: BundleFileSystem) {
        revisions = Mutex((initial, nil))
    }

    /// The revision served now.
    var served: BundleFileSystem { revisions.withLock { $0.current } }

    /// The revision that knows `inode`: the one served now, or — for an inode of a file
    /// the switch changed, which a program looked up just before it (`open` after
    /// `lookup`, `fstat`) — the one it replaced, so that such a request still sees one
    /// whole revision instead of failing.
    private func serving(_ inode: InodeNumber) -> BundleFileSystem {
        revisions.withLock { revisions in
            guard revisions.current.inodes.node(for: inode) == nil, let previous = revisions.previous,
                  previous.inodes.node(for: inode) != nil else { return revisions.current }
            return previous
        }
    }

    /// Serves `next` from now on; returns the one it replaces.
    @discardableResult
    func switchTo(_ next: BundleFileSystem) -> BundleFileSystem {
        revisions.withLock { revisions in
            let previous = revisions.current
            revisions = (next, previous)
            return previous
        }
    }

    func configure(_ connection: inout ConnectionConfiguration) {
        served.configure(&connection)
    }

    func lookup(parent: InodeNumber, name: String, request: consuming FUSERequest) {
        served.lookup(parent: parent, name: name, request: request)
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
        served.read(inode: inode, handle: handle, offset: offset, size: size, request: request)
    }

    func release(inode: InodeNumber, handle: FileHandleID, request: consuming FUSERequest) {
        served.release(inode: inode, handle: handle, request: request)
    }

    func openDirectory(inode: InodeNumber, request: consuming FUSERequest) {
        served.openDirectory(inode: inode, request: request)
    }

    func readDirectory(inode: InodeNumber, handle: FileHandleID, offset: Int64, size: Int, plus: Bool, request: consuming FUSERequest) {
        served.readDirectory(inode: inode, handle: handle, offset: offset, size: size, plus: plus, request: request)
    }

    func releaseDirectory(inode: InodeNumber, handle: FileHandleID, request: consuming FUSERequest) {
        served.releaseDirectory(inode: inode, handle: handle, request: request)
    }

    func statistics(inode: InodeNumber, request: consuming FUSERequest) {
        served.statistics(inode: inode, request: request)
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
        served.rejectMutation(operation, request: request)
    }

    func destroy() {
        served.destroy()
    }
}
