import FUSEKit
import ODRFSCore

/// Maps kernel inode numbers to index entries and the mount's virtual files.
///
/// For the revision a mount starts with, entry *n* of the file index is inode *n + 1*
/// (so the root, entry 0, is FUSE's root inode 1), and the virtual `.odrfs` directory and
/// its `status` file take the two numbers after the last entry. Those two keep their
/// numbers for the life of the mount. After an update (see ``RevisionTransition``) the
/// map is a ``InodeRenumbering``: an entry unchanged since the previous revision keeps
/// its inode number, anything new or changed gets a number never used before in this
/// mount, so the kernel can never confuse an old file with a new one. Because nothing is
/// ever allocated per lookup, `forget` has nothing to do.
struct InodeMap: Sendable {
    let entryCount: Int
    let controlDirectory: InodeNumber
    let statusFile: InodeNumber
    /// nil: entry n is inode n + 1.
    let renumbering: InodeRenumbering?
    /// The lowest number no revision of this mount has used.
    let nextFreeInode: UInt64

    /// The name of the virtual control directory at the root of every mount.
    static let controlDirectoryName = ".odrfs"
    /// The name of the virtual status file inside it.
    static let statusFileName = "status"

    enum Node: Equatable {
        case entry(EntryNumber)
        case controlDirectory
        case statusFile
    }

    /// The first revision's map: entry n is inode n + 1.
    init(entryCount: Int) {
        self.entryCount = entryCount
        self.controlDirectory = InodeNumber(rawValue: UInt64(entryCount) + 1)
        self.statusFile = InodeNumber(rawValue: UInt64(entryCount) + 2)
        self.renumbering = nil
        self.nextFreeInode = UInt64(entryCount) + 3
    }

    /// A later revision's map; the virtual files keep `previous`'s numbers.
    init(entryCount: Int, renumbering: InodeRenumbering, following previous: InodeMap) {
        self.entryCount = entryCount
        self.controlDirectory = previous.controlDirectory
        self.statusFile = previous.statusFile
        self.renumbering = renumbering
        self.nextFreeInode = renumbering.nextFreeInode
    }

    func inode(for entry: EntryNumber) -> InodeNumber {
        if let renumbering, Int(entry.rawValue) < renumbering.inodes.count {
            return InodeNumber(rawValue: renumbering.inodes[Int(entry.rawValue)])
        }
        return InodeNumber(rawValue: UInt64(entry.rawValue) + 1)
    }

    func node(for inode: InodeNumber) -> Node? {
        if inode == controlDirectory { return .controlDirectory }
        if inode == statusFile { return .statusFile }
        if let renumbering {
            return renumbering.entries[inode.rawValue].map { .entry(EntryNumber($0)) }
        }
        let raw = inode.rawValue
        if raw >= 1 && raw <= UInt64(entryCount) { return .entry(EntryNumber(UInt32(raw - 1))) }
        return nil
    }
}

/// Inode numbers of a revision after the first: both directions, built once per update.
final class InodeRenumbering: Sendable {
    /// Entry number → inode number.
    let inodes: [UInt64]
    /// Inode number → entry number.
    let entries: [UInt64: UInt32]
    let nextFreeInode: UInt64

    init(inodes: [UInt64], nextFreeInode: UInt64) {
        self.inodes = inodes
        var entries: [UInt64: UInt32] = [:]
        entries.reserveCapacity(inodes.count)
        for (entry, inode) in inodes.enumerated() { entries[inode] = UInt32(entry) }
        self.entries = entries
        self.nextFreeInode = nextFreeInode
    }
}
