import FUSEKit
import ODRFSCore

/// Maps kernel inode numbers to index entries and the mount's virtual files.
///
/// Inode numbers are stable for a bundle version: entry *n* of the file index is
/// inode *n + 1* (so the root, entry 0, is FUSE's root inode 1). The virtual
/// `.odrfs` directory and its `status` file take the two numbers after the last
/// entry. Because nothing is ever allocated per lookup, `forget` has nothing to do.
struct InodeMap: Sendable {
    let entryCount: Int

    /// The name of the virtual control directory at the root of every mount.
    static let controlDirectoryName = ".odrfs"
    /// The name of the virtual status file inside it.
    static let statusFileName = "status"

    enum Node: Equatable {
        case entry(EntryNumber)
        case controlDirectory
        case statusFile
    }

    var controlDirectory: InodeNumber { InodeNumber(rawValue: UInt64(entryCount) + 1) }
    var statusFile: InodeNumber { InodeNumber(rawValue: UInt64(entryCount) + 2) }

    func inode(for entry: EntryNumber) -> InodeNumber {
        InodeNumber(rawValue: UInt64(entry.rawValue) + 1)
    }

    func node(for inode: InodeNumber) -> Node? {
        let raw = inode.rawValue
        if raw >= 1 && raw <= UInt64(entryCount) { return .entry(EntryNumber(UInt32(raw - 1))) }
        if inode == controlDirectory { return .controlDirectory }
        if inode == statusFile { return .statusFile }
        return nil
    }
}
